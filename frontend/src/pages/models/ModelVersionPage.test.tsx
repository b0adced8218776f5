import { screen, waitFor } from "@testing-library/react";
import userEvent from "@testing-library/user-event";
import { describe, expect, it } from "vitest";

import { json, renderRoutes } from "../../test/render";
import { ModelVersionPage } from "./ModelVersionPage";

const routes = [{ path: "/projects/:projectId/models/versions/:versionId", element: <ModelVersionPage /> }];
const ref = { id: "mv1", model_id: "m1", model_name: "digits", version: 1 };
const version = {
  ...ref, task_type: "image_classification", labels: ["0", "1"], metrics: { val_accuracy: 0.9, macro_f1: 0.8 },
  pretrained: true, dataset_version_id: "dv1",
  dataset_version: { id: "dv1", dataset_id: "ds1", dataset_name: "digits", number: 3 }, training_job_id: null, parent_id: null, model_sha256: "abc",
  model_size: 2048, files: {}, manifest: {}, created_at: "2026-11-29T00:00:00Z",
};
const devices = [
  { id: "dev1", name: "camera-1", status: "online", last_seen_at: null, device_time: null, agent_version: "", info: {}, tags: ["line-3"], current_model_version: null, deployment: null, last_metrics: {}, created_at: "2026-11-29T00:00:00Z" },
  { id: "dev2", name: "gate", status: "offline", last_seen_at: null, device_time: null, agent_version: "", info: {}, tags: ["line-3"], current_model_version: null, deployment: null, last_metrics: {}, created_at: "2026-11-29T00:00:00Z" },
];

function api(state: { posted: unknown[]; deployments: unknown[] }) {
  return async (request: Request) => {
    const url = new URL(request.url);
    if (request.method === "POST" && url.pathname.endsWith("/deployments/")) {
      const body = (await request.json()) as { device_ids: string[] };
      state.posted.push(body);
      state.deployments = body.device_ids.map((id, i) => ({
        id: `d${i}`, device_id: id, device_name: id === "dev1" ? "camera-1" : "gate", model_version: ref,
        state: id === "dev1" ? "downloading" : "failed", error: id === "dev1" ? "" : "sha256 mismatch",
        created_at: "2026-11-29T00:00:00Z", state_changed_at: "2026-11-29T00:00:00Z", finished_at: null,
      }));
      return json(201, state.deployments);
    }
    if (url.pathname.endsWith("/deployments/")) return json(200, state.deployments);
    if (url.pathname.endsWith("/devices/")) return json(200, devices);
    if (url.pathname.endsWith("/model-versions/mv1/")) return json(200, version);
    return json(404, { error: { code: "not_found", message: url.pathname } });
  };
}

describe("ModelVersionPage figures", () => {
  it("shows the test split's figures and names the split, not the validation that chose the model", async () => {
    const tested = { ...version, metrics: { val_accuracy: 0.99, macro_f1: 0.98, test_accuracy: 0.9, test_macro_f1: 0.8, evaluated_on: "test" } };
    const fetcher = async (request: Request) =>
      new URL(request.url).pathname.endsWith("/model-versions/mv1/") ? json(200, tested) : json(200, []);
    renderRoutes(routes, "/projects/p1/models/versions/mv1", fetcher as unknown as typeof globalThis.fetch);
    expect(await screen.findByText("Accuracy (test)")).toBeInTheDocument();
    expect(screen.getByText("90.0%")).toBeInTheDocument();
    expect(screen.getByText("Macro-F1 (test)")).toBeInTheDocument();
    expect(screen.queryByText("99.0%")).not.toBeInTheDocument();
    expect(screen.queryByTestId("not-evaluated")).toBeNull();
  });

  it("says when the test split held no image of a class: its 100 % is not the whole story", async () => {
    const oneClass = { ...version, metrics: { val_accuracy: 1, macro_f1: 1, test_accuracy: 1, test_macro_f1: 1, evaluated_on: "test", classes_not_evaluated: ["1"] } };
    const fetcher = async (request: Request) =>
      new URL(request.url).pathname.endsWith("/model-versions/mv1/") ? json(200, oneClass) : json(200, []);
    renderRoutes(routes, "/projects/p1/models/versions/mv1", fetcher as unknown as typeof globalThis.fetch);
    expect(await screen.findByTestId("not-evaluated")).toHaveTextContent("1 class not in the test split");
  });

  it("says validation when the version had no test split", async () => {
    const fetcher = async (request: Request) =>
      new URL(request.url).pathname.endsWith("/model-versions/mv1/") ? json(200, version) : json(200, []);
    renderRoutes(routes, "/projects/p1/models/versions/mv1", fetcher as unknown as typeof globalThis.fetch);
    expect(await screen.findByText("Accuracy (validation)")).toBeInTheDocument();
    expect(screen.getByText("90.0%")).toBeInTheDocument();
  });

  it("a text model says which family won on validation, and no 'from scratch' warning for n-gram models", async () => {
    const text = {
      ...version, task_type: "text_classification", labels: ["正面", "负面"], pretrained: false,
      manifest: { text: { max_chars: 4096 } },
      metrics: { evaluated_on: "test", val_accuracy: 0.88, val_macro_f1: 0.87, test_accuracy: 0.86, test_macro_f1: 0.85, winner: "linear_lbfgs", family: "linear",
        val_by_family: { linear: { val_accuracy: 0.88, val_balanced_accuracy: 0.87, fit: "linear_lbfgs" }, fasttext: { val_accuracy: 0.85, fit: "fasttext" } } },
    };
    const fetcher = async (request: Request) =>
      new URL(request.url).pathname.endsWith("/model-versions/mv1/") ? json(200, text) : json(200, []);
    renderRoutes(routes, "/projects/p1/models/versions/mv1", fetcher as unknown as typeof globalThis.fetch);
    expect(await screen.findByTestId("text-winner")).toHaveTextContent("Won on validation: linear model, exact (L-BFGS), 88.0%");
    expect(screen.getByTestId("headline-metric")).toHaveTextContent("86.0%");
    expect(screen.queryByText("trained from scratch")).toBeNull();
  });

  it("an object detector shows its mAP@0.5 and mAP@0.5:0.95 on the split evaluated, not accuracy", async () => {
    const detector = {
      ...version, task_type: "object_detection", labels: ["cat", "dog"],
      metrics: { evaluated_on: "test", val_map50: 0.7, val_map: 0.5, test_map50: 0.58, test_map: 0.35, score_threshold: 0.3, best_step: 160 },
    };
    const fetcher = async (request: Request) =>
      new URL(request.url).pathname.endsWith("/model-versions/mv1/") ? json(200, detector) : json(200, []);
    renderRoutes(routes, "/projects/p1/models/versions/mv1", fetcher as unknown as typeof globalThis.fetch);
    expect(await screen.findByText("mAP@0.5 (test)")).toBeInTheDocument();
    expect(screen.getByTestId("headline-metric")).toHaveTextContent("58.0%");
    expect(screen.getByText("mAP@0.5:0.95 (test)")).toBeInTheDocument();
    expect(screen.getByTestId("secondary-metric")).toHaveTextContent("35.0%");
    expect(screen.queryByText(/^Accuracy/)).toBeNull();
    expect(screen.queryByText("70.0%")).toBeNull();
  });
});

describe("ModelVersionPage deploy", () => {
  it("deploys to the picked devices in one click and shows each one's state", async () => {
    const state = { posted: [] as unknown[], deployments: [] as unknown[] };
    renderRoutes(routes, "/projects/p1/models/versions/mv1", api(state) as unknown as typeof globalThis.fetch);
    // lineage: the dataset version it was trained on, as a link to that version's page
    expect(await screen.findByRole("link", { name: "digits v3" })).toHaveAttribute("href", "/projects/p1/datasets/ds1/versions/dv1");
    await userEvent.click(await screen.findByRole("button", { name: /Deploy/ }));
    expect(await screen.findByText("camera-1")).toBeInTheDocument();
    expect(screen.getByText("offline")).toBeInTheDocument();
    await userEvent.click(screen.getByRole("checkbox", { name: /camera-1/ }));
    await userEvent.click(screen.getByRole("checkbox", { name: /gate/ }));
    await userEvent.click(screen.getByRole("button", { name: "Deploy to 2 devices" }));
    await waitFor(() => expect(state.posted).toEqual([{ model_version_id: "mv1", device_ids: ["dev1", "dev2"] }]));
    expect(await screen.findByText("downloading")).toBeInTheDocument();
    expect(screen.getByTestId("deployments-table")).toHaveTextContent("camera-1");
    expect(screen.getByText("failed")).toBeInTheDocument();
    expect(screen.getByText("sha256 mismatch")).toBeInTheDocument();
  }, 30_000); // antd's modal and checkboxes are slow in jsdom

  it("a tag picks every device of that group", async () => {
    const state = { posted: [] as unknown[], deployments: [] as unknown[] };
    renderRoutes(routes, "/projects/p1/models/versions/mv1", api(state) as unknown as typeof globalThis.fetch);
    await userEvent.click(await screen.findByRole("button", { name: /Deploy/ }));
    await screen.findByText("camera-1");
    await userEvent.click(screen.getByRole("combobox", { name: "Add every device with a tag" }));
    await userEvent.click(await screen.findByTitle("line-3"));
    await userEvent.click(screen.getByRole("button", { name: "Deploy to 2 devices" }));
    await waitFor(() => expect(state.posted).toEqual([{ model_version_id: "mv1", device_ids: ["dev1", "dev2"] }]));
  }, 30_000);
});
