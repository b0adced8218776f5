import { screen, waitFor } from "@testing-library/react";
import userEvent from "@testing-library/user-event";
import { describe, expect, it } from "vitest";

import { json, renderRoutes } from "../../test/render";
import { FREEZE_DEFAULTS, VersionsPanel } from "./VersionsPanel";

function Panel() {
  return <VersionsPanel projectId="p1" datasetId="d1" />;
}

const routes = [
  { path: "/projects/:projectId/datasets/:datasetId", element: <Panel /> },
  { path: "/projects/:projectId/datasets/:datasetId/versions/:versionId", element: <p>version page</p> },
];

function api(posted: unknown[]) {
  return async (request: Request) => {
    const url = new URL(request.url);
    if (request.method === "POST" && url.pathname.endsWith("/datasets/d1/versions/")) {
      posted.push(await request.json());
      return json(201, { id: "v1", number: 1 });
    }
    if (url.pathname.endsWith("/datasets/d1/versions/")) return json(200, []);
    if (url.pathname === "/api/v1/projects/") return json(200, []);
    return json(404, { error: { code: "not_found", message: url.pathname } });
  };
}

describe("VersionsPanel freeze form", () => {
  it("defaults to the API's 70/15/15 split and says the report is computed on the test split", async () => {
    expect(FREEZE_DEFAULTS).toEqual({ seed: 0, val_fraction: 0.15, test_fraction: 0.15 });
    const posted: unknown[] = [];
    const { router } = renderRoutes(routes, "/projects/p1/datasets/d1", api(posted) as unknown as typeof globalThis.fetch);

    expect(await screen.findByRole("spinbutton", { name: /Validation fraction/ })).toHaveValue("0.15");
    expect(screen.getByRole("spinbutton", { name: /Test fraction/ })).toHaveValue("0.15");
    expect(screen.getByTestId("test-split-hint")).toHaveTextContent(
      "The evaluation report is computed on the test split, which training never sees. A class needs at least 10 labeled samples to have a test split.",
    );

    await userEvent.click(screen.getByRole("button", { name: /Freeze version/ }));
    await waitFor(() => expect(router.state.location.pathname).toBe("/projects/p1/datasets/d1/versions/v1"));
    expect(posted).toEqual([{ seed: 0, val_fraction: 0.15, test_fraction: 0.15, note: "" }]);
  });
});
