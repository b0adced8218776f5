// "Pre-label with a model" against the real API client (fetch answered here): the versions it
// offers, the request it sends, a run's progress with Cancel, and what a finished run says.
import { fireEvent, screen, waitFor, within } from "@testing-library/react";
import userEvent from "@testing-library/user-event";
import { describe, expect, it } from "vitest";

import type { Dataset } from "../../api/queries/datasets";
import { json, renderRoutes } from "../../test/render";
import { PrelabelPanel } from "./PrelabelPanel";

const street = {
  id: "d1",
  name: "street",
  task_type: "object_detection",
  suggested_samples: 0,
  class_labels: [
    { id: "car", name: "car", position: 0, hotkey: "" },
    { id: "person", name: "person", position: 1, hotkey: "" },
  ],
} as unknown as Dataset;

const versions = [
  { id: "v-det", model_name: "street", version: 2, task_type: "object_detection", labels: ["person", "bicycle"], manifest: { detection: { score_threshold: 0.4 } } },
  { id: "v-cls", model_name: "pets", version: 1, task_type: "image_classification", labels: ["car"], manifest: {} },
  { id: "v-other", model_name: "birds", version: 1, task_type: "object_detection", labels: ["sparrow"], manifest: {} },
];

function job(status: string, extra: object = {}) {
  return {
    id: "j1",
    dataset_id: "d1",
    model_version_id: "v-det",
    model_version_label: "street v2",
    score_threshold: null,
    status,
    progress: {},
    report: {},
    error: "",
    created_at: "2026-12-01T00:00:00Z",
    started_at: null,
    finished_at: null,
    ...extra,
  };
}

function server(jobs: object[]) {
  const posts: { url: string; body: unknown }[] = [];
  const fetcher = (async (request: Request) => {
    const url = new URL(request.url).pathname;
    if (request.method === "POST") {
      posts.push({ url, body: await request.text().then((t) => (t ? JSON.parse(t) : null)) });
      if (url.endsWith("/cancel/")) return json(200, job("CANCELLED"));
      return json(202, job("QUEUED"));
    }
    if (url.endsWith("/prelabel-jobs/")) return json(200, jobs);
    if (url.endsWith("/model-versions/")) return json(200, versions);
    return json(404, { error: { code: "not_found", message: url } });
  }) as unknown as typeof fetch;
  renderRoutes([{ path: "/", element: <PrelabelPanel projectId="p1" dataset={street} /> }], "/", fetcher);
  return posts;
}

describe("PrelabelPanel", { timeout: 20_000 }, () => {
  it("offers the model versions of the dataset's task that share a class, and starts one with its threshold", async () => {
    const posts = server([]);
    await userEvent.click(screen.getByRole("button", { name: /Pre-label with a model/ }));
    const dialog = await screen.findByRole("dialog");
    // the classifier (another task) and the bird detector (no class in common) are not offered
    await waitFor(() => expect(within(dialog).getByText("street v2")).toBeInTheDocument());
    fireEvent.mouseDown(within(dialog).getByRole("combobox", { name: "Model version" }));
    await waitFor(() => expect(document.querySelectorAll(".ant-select-item-option").length).toBeGreaterThan(0));
    expect([...document.querySelectorAll(".ant-select-item-option")].map((o) => o.textContent)).toEqual(["street v2"]);
    expect(within(dialog).getByText("Suggests these classes of the dataset: person")).toBeInTheDocument();
    // the manifest's threshold, unless moved: not sent
    expect(within(dialog).getByText("Suggest boxes scoring above 0.40")).toBeInTheDocument();
    await userEvent.click(within(dialog).getByRole("button", { name: "Start" }));
    await waitFor(() => expect(posts).toEqual([{ url: "/api/v1/projects/p1/datasets/d1/prelabel-jobs/", body: { model_version_id: "v-det" } }]));
  });

  it("shows a run's progress with Cancel", async () => {
    const posts = server([job("RUNNING", { progress: { fraction: 0.25, done: 5, total: 20 } })]);
    expect(await screen.findByText("Pre-labeling with street v2: 5 / 20 images")).toBeInTheDocument();
    expect(screen.getByRole("button", { name: /Pre-label with a model/ })).toBeDisabled();
    await userEvent.click(screen.getByRole("button", { name: /Cancel/ }));
    await userEvent.click(await screen.findByRole("button", { name: "Cancel", hidden: false }));
    await waitFor(() => expect(posts.map((p) => p.url)).toEqual(["/api/v1/projects/p1/prelabel-jobs/j1/cancel/"]));
  });

  it("says what a finished run did, and names the images it could not read", async () => {
    server([
      job("SUCCEEDED", {
        report: { counts: { done: 11, suggestions: 30, suggested_samples: 10, failed: 1 }, failed: [{ name: "broken.png", reason: "truncated image" }] },
      }),
    ]);
    expect(await screen.findByText("street v2 suggested labels for 10 samples (30 suggestions). The most uncertain come first.")).toBeInTheDocument();
    expect(screen.getByText("Images it could not read: 1")).toBeInTheDocument();
    expect(screen.getByText("broken.png: truncated image")).toBeInTheDocument();
  });

  it("says so when no model version can pre-label the dataset", async () => {
    const fetcher = (async (request: Request) => {
      const url = new URL(request.url).pathname;
      if (url.endsWith("/prelabel-jobs/")) return json(200, []);
      if (url.endsWith("/model-versions/")) return json(200, [versions[1]]);
      return json(404, { error: { code: "not_found", message: url } });
    }) as unknown as typeof fetch;
    renderRoutes([{ path: "/", element: <PrelabelPanel projectId="p1" dataset={street} /> }], "/", fetcher);
    await userEvent.click(screen.getByRole("button", { name: /Pre-label with a model/ }));
    expect(await screen.findByText(/No model version of this task shares a class with this dataset/)).toBeInTheDocument();
    expect(screen.getByRole("button", { name: "Start" })).toBeDisabled();
  });
});
