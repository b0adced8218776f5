import { screen, waitFor } from "@testing-library/react";
import userEvent from "@testing-library/user-event";
import { describe, expect, it } from "vitest";

import { json, renderRoutes } from "../../test/render";
import { TrainingPage } from "./TrainingPage";

const routes = [
  { path: "/projects/:projectId/training", element: <TrainingPage /> },
  { path: "/projects/:projectId/training/:jobId", element: <p>job page</p> },
];

// a text version of 1,000 reviews: its min_budget_s as the API gives it (the API computes it)
const version = {
  id: "tv1",
  dataset_id: "d1",
  number: 1,
  task_type: "text_classification",
  labels: ["negative", "positive"],
  seed: 0,
  split_fractions: { val: 0.2, test: 0.1 },
  digest: "sha256:t",
  flags: [],
  stats: { samples: 1000, splits: { train: 700, val: 200, test: 100 }, classes: {} },
  note: "",
  created_at: "2026-12-02T00:00:00Z",
  min_budget_s: 25,
};

function api(posted: unknown[], sampleRequests: string[]) {
  return async (request: Request) => {
    const url = new URL(request.url);
    if (request.method === "POST" && url.pathname.endsWith("/training-jobs/")) {
      posted.push(await request.json());
      return json(201, { id: "job1", status: "QUEUED" });
    }
    if (url.pathname.endsWith("/training-jobs/")) return json(200, { count: 0, next: null, previous: null, results: [] });
    if (url.pathname.endsWith("/samples/")) {
      sampleRequests.push(url.pathname);
      return json(200, { count: 0, next: null, previous: null, results: [] });
    }
    if (url.pathname.endsWith("/dataset-versions/tv1/")) return json(200, version);
    if (url.pathname.endsWith("/datasets/d1/versions/")) return json(200, [version]);
    if (url.pathname.endsWith("/datasets/")) return json(200, [{ id: "d1", name: "reviews", task_type: "text_classification" }]);
    return json(404, { error: { code: "not_found", message: url.pathname } });
  };
}

describe("the training wizard for a text version", () => {
  it("hides the image options, says what trains, and starts without them", async () => {
    const posted: unknown[] = [];
    const sampleRequests: string[] = [];
    const { router } = renderRoutes(routes, "/projects/p1/training?version=tv1", api(posted, sampleRequests) as unknown as typeof globalThis.fetch);
    expect(await screen.findByText("v1 · 1000 samples · 2 classes")).toBeInTheDocument();
    // the task follows the version: text classification, no second click, no mismatch warning
    await waitFor(() => expect(screen.getByRole("radio", { name: "Text classification" })).toBeChecked());
    expect(screen.queryByText("This version's task differs from the chosen task.")).toBeNull();
    expect(await screen.findByTestId("text-model-note")).toHaveTextContent("a linear model and a fastText-style model");
    // nothing that means something for images only: augmentation, mirroring, the preview, model size and latency
    expect(screen.queryByRole("radiogroup", { name: "Augmentation" })).toBeNull();
    expect(screen.queryByTestId("never-flip")).toBeNull();
    expect(screen.queryByTestId("augmentation-preview")).toBeNull();
    expect(screen.queryByRole("radiogroup", { name: "Model preference" })).toBeNull();
    expect(screen.queryByText(/ms$/)).toBeNull();
    expect(sampleRequests).toEqual([]); // no images fetched for a preview
    // the budget as for images: the version's minimum, the default raised to a preset above it
    expect(screen.getByTestId("min-budget")).toHaveTextContent("This version needs at least 0:25.");
    expect(screen.getByRole("spinbutton", { name: "Time budget" })).toHaveValue("90");

    await userEvent.click(screen.getByRole("button", { name: /Start training/ }));
    await waitFor(() => expect(router.state.location.pathname).toBe("/projects/p1/training/job1"));
    expect(posted).toEqual([{ dataset_version_id: "tv1", budget_s: 90, seed: 0 }]);
  });

  it("refuses a budget under the version's minimum, counting texts, not pixels", async () => {
    const posted: unknown[] = [];
    renderRoutes(routes, "/projects/p1/training?version=tv1", api(posted, []) as unknown as typeof globalThis.fetch);
    expect(await screen.findByText("v1 · 1000 samples · 2 classes")).toBeInTheDocument();
    await screen.findByTestId("text-model-note");
    const budget = screen.getByRole("spinbutton", { name: "Time budget" });
    await userEvent.clear(budget);
    await userEvent.type(budget, "20");
    await userEvent.click(screen.getByRole("button", { name: /Start training/ }));
    expect(
      await screen.findByText("The time budget must be between 0:25 and 24:00:00 (this version needs at least 15 s, plus 0.001 s per text)."),
    ).toBeInTheDocument();
    expect(posted).toEqual([]);
  });
});
