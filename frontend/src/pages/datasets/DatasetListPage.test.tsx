import { fireEvent, screen, waitFor, within } from "@testing-library/react";
import userEvent from "@testing-library/user-event";
import { describe, expect, it } from "vitest";

import { json, renderRoutes } from "../../test/render";
import { DatasetListPage } from "./DatasetListPage";
import { DatasetPage } from "./DatasetPage";

const created = {
  id: "d9",
  name: "reviews",
  task_type: "text_classification",
  description: "",
  archived: false,
  sample_count: 0,
  suggested_samples: 0,
  created_at: "2026-12-01T10:00:00Z",
  class_labels: [],
};

describe("a text classification dataset", () => {
  it("is created from the list page and opens with the text list and the text upload tab", async () => {
    const posted: unknown[] = [];
    const fetch = (async (request: Request) => {
      const url = new URL(request.url);
      if (request.method === "POST" && url.pathname === "/api/v1/projects/p1/datasets/") {
        posted.push(await request.json());
        return json(201, created);
      }
      if (url.pathname === "/api/v1/projects/p1/datasets/") return json(200, []);
      if (url.pathname === "/api/v1/projects/p1/datasets/d9/") return json(200, created);
      if (url.pathname === "/api/v1/projects/p1/datasets/d9/samples/") return json(200, { count: 0, next: null, previous: null, results: [] });
      return json(404, { error: { code: "not_found", message: url.pathname } });
    }) as unknown as typeof globalThis.fetch;
    const { router } = renderRoutes(
      [
        { path: "/projects/:projectId/datasets", element: <DatasetListPage /> },
        { path: "/projects/:projectId/datasets/:datasetId", element: <DatasetPage /> },
      ],
      "/projects/p1/datasets",
      fetch,
    );
    await userEvent.click(await screen.findByRole("button", { name: /New dataset/ }));
    const dialog = await screen.findByRole("dialog");
    await userEvent.type(within(dialog).getByRole("textbox", { name: "Name" }), "reviews");
    fireEvent.mouseDown(within(dialog).getByRole("combobox", { name: "Task" }));
    fireEvent.click(await screen.findByTitle("Text classification"));
    await userEvent.click(within(dialog).getByRole("button", { name: "Create" }));

    await waitFor(() => expect(posted).toEqual([{ name: "reviews", task_type: "text_classification", labels: [] }]));
    // the new dataset's upload tab takes tables and text files
    await waitFor(() => expect(router.state.location.pathname).toBe("/projects/p1/datasets/d9"));
    expect(await screen.findByTestId("text-formats")).toBeInTheDocument();
    expect(screen.getByText("Text classification")).toBeInTheDocument();
    // its samples are a list of texts, not the image gallery
    await userEvent.click(screen.getByRole("tab", { name: "Samples" }));
    expect(await screen.findByTestId("text-list")).toBeInTheDocument();
  });
});
