import { screen, waitFor, within } from "@testing-library/react";
import userEvent from "@testing-library/user-event";
import { describe, expect, it } from "vitest";

import { json, renderRoutes } from "../../test/render";
import { ModelVersionPage } from "./ModelVersionPage";

const routes = [
  { path: "/projects/:projectId/models/versions/:versionId", element: <ModelVersionPage /> },
  { path: "/projects/:projectId/compression-jobs/:jobId", element: <p>compression job page</p> },
];
const ref = { id: "mv1", model_id: "m1", model_name: "digits", version: 1 };
const version = {
  ...ref, task_type: "image_classification", labels: ["0", "1"], metrics: { val_accuracy: 0.9, macro_f1: 0.8 },
  pretrained: true, dataset_version_id: "dv1",
  dataset_version: { id: "dv1", dataset_id: "ds1", dataset_name: "digits", number: 3 }, training_job_id: null, parent_id: null, model_sha256: "abc",
  model_size: 2048, files: {}, manifest: {}, created_at: "2026-11-29T00:00:00Z",
};
const device = (id: string, name: string, status: string, runtime: object) => ({
  id, name, status, runtime, last_seen_at: null, device_time: null, agent_version: "", info: {}, tags: [], current_model_version: null,
  deployment: null, last_metrics: {}, created_at: "2026-11-29T00:00:00Z",
});
const devices = [device("dev2", "gate", "offline", {}), device("dev1", "camera-1", "online", { onnxruntime: "1.20.1", providers: ["CPUExecutionProvider"] })];
const job = {
  id: "cj1", source_id: "mv1", source: ref, device_id: "dev1", device_name: "camera-1", accuracy_budget_pt: 1, budget_s: 600, methods: [],
  status: "SUCCEEDED", progress: {}, candidates: [], warnings: [], picked: "int8", pick_reason: "", model_version_id: "mv2",
  model_version: { ...ref, id: "mv2", version: 2 }, error: "", created_at: "2026-11-29T00:00:00Z", started_at: null, finished_at: null,
};

interface State {
  posted: unknown[];
  /** the answer to the next POST compression-jobs/ */
  answer: [number, unknown];
}

function api(state: State, served: { id: string } = version) {
  return async (request: Request) => {
    const url = new URL(request.url);
    if (request.method === "POST" && url.pathname.endsWith("/compression-jobs/")) {
      state.posted.push(await request.json());
      return json(...state.answer);
    }
    if (url.pathname.endsWith("/compression-jobs/")) {
      expect(url.searchParams.get("source")).toBe(served.id);
      return json(200, { count: 1, next: null, previous: null, results: [job] });
    }
    if (url.pathname.endsWith("/devices/")) return json(200, devices);
    if (url.pathname.endsWith("/deployments/")) return json(200, []);
    if (url.pathname.endsWith(`/model-versions/${served.id}/`)) return json(200, served);
    return json(404, { error: { code: "not_found", message: url.pathname } });
  };
}

async function openForm() {
  await userEvent.click(await screen.findByTestId("compress-button", {}, { timeout: 5000 }));
  return screen.findByRole("dialog");
}

describe("Compress for a device", () => {
  it("lists the version's compression jobs with their device and pick", async () => {
    const state: State = { posted: [], answer: [201, job] };
    renderRoutes(routes, "/projects/p1/models/versions/mv1", api(state) as unknown as typeof globalThis.fetch);
    const table = await screen.findByTestId("compression-jobs", {}, { timeout: 5000 });
    expect(table).toHaveTextContent("Done");
    expect(table).toHaveTextContent("camera-1");
    expect(within(table).getByRole("link", { name: "int8 → v2" })).toHaveAttribute("href", "/projects/p1/models/versions/mv2");
    expect(within(table).getByRole("link", { name: "Open" })).toHaveAttribute("href", "/projects/p1/compression-jobs/cj1");
  }, 30_000);

  it("starts with the defaults and the first online device, then opens the job", async () => {
    const state: State = { posted: [], answer: [201, { ...job, status: "QUEUED" }] };
    const { router } = renderRoutes(routes, "/projects/p1/models/versions/mv1", api(state) as unknown as typeof globalThis.fetch);
    const dialog = await openForm();
    expect(within(dialog).getByText("Compress digits v1 for a device")).toBeInTheDocument();
    expect(within(dialog).getByRole("spinbutton", { name: "Accuracy budget (points)" })).toHaveValue("1.0");
    expect(within(dialog).getByTestId("accuracy-help")).toHaveTextContent(
      "The compressed model may be at most this many points less accurate than this one on held-out images.",
    );
    expect(within(dialog).getByRole("spinbutton", { name: "Time budget (minutes)" })).toHaveValue("10");
    // the online device is preselected, with its runtime
    await waitFor(() => expect(dialog.querySelector(".ant-select-content, .ant-select-selection-item")).toHaveTextContent("camera-1"));
    expect(dialog.querySelector(".ant-select-content, .ant-select-selection-item")).toHaveTextContent("onnxruntime 1.20.1");
    // the methods, all checked, under "Advanced"
    for (const name of ["INT8 quantization", "Lower input resolution (distilled student)", "Pruning (distilled student)", "FP16 (devices with a GPU only)"]) {
      expect(within(dialog).getByRole("checkbox", { name, hidden: true })).toBeChecked();
    }
    await userEvent.click(within(dialog).getByRole("button", { name: "Start compressing" }));
    await waitFor(() => expect(router.state.location.pathname).toBe("/projects/p1/compression-jobs/cj1"));
    expect(state.posted).toEqual([
      { source_model_version_id: "mv1", device_id: "dev1", accuracy_budget_pt: 1, budget_s: 600, methods: ["int8", "resolution", "pruning", "fp16"] },
    ]);
  }, 30_000);

  it("puts the server's field error on the field it names", async () => {
    const state: State = {
      posted: [],
      answer: [400, { error: { code: "validation_failed", message: "accuracy_budget_pt must be from 0 to 50 points; got 7", field: "accuracy_budget_pt" } }],
    };
    renderRoutes(routes, "/projects/p1/models/versions/mv1", api(state) as unknown as typeof globalThis.fetch);
    const dialog = await openForm();
    const budget = within(dialog).getByRole("spinbutton", { name: "Accuracy budget (points)" });
    await userEvent.clear(budget);
    await userEvent.type(budget, "7");
    const minutes = within(dialog).getByRole("spinbutton", { name: "Time budget (minutes)" });
    await userEvent.clear(minutes);
    await userEvent.type(minutes, "3");
    await userEvent.click(within(dialog).getByRole("button", { name: "Start compressing" }));
    expect(await within(dialog).findByText("accuracy_budget_pt must be from 0 to 50 points; got 7")).toBeInTheDocument();
    expect(state.posted).toHaveLength(1);
    expect(state.posted[0]).toMatchObject({ accuracy_budget_pt: 7, budget_s: 180 });
    // still on the version page, the dialog open
    expect(screen.getByRole("dialog")).toBeInTheDocument();
  }, 30_000);

  it("a compressed version says where it came from, links the parent and the job, and the latency it was picked at", async () => {
    const compressed = {
      ...version, id: "mv2", version: 2, parent_id: "mv1",
      metrics: { evaluated_on: "test", test_accuracy: 0.975, accuracy_drop_pt: 0.5, device_latency: { p50_ms: 4.2, p99_ms: 6.1 }, measured_on: "camera-1" },
      manifest: {
        lineage: {
          compressed_from: { model_version_id: "mv1", version: 1 }, method: "int8", candidate: "int8", params: {}, compression_job_id: "cj1",
        },
      },
    };
    const state: State = { posted: [], answer: [201, job] };
    renderRoutes(routes, "/projects/p1/models/versions/mv2", api(state, compressed) as unknown as typeof globalThis.fetch);
    const from = await screen.findByTestId("compressed-from", {}, { timeout: 5000 });
    expect(within(from).getByTestId("parent-link")).toHaveTextContent("Compressed from v1 (int8, int8)");
    expect(within(from).getByTestId("parent-link")).toHaveAttribute("href", "/projects/p1/models/versions/mv1");
    expect(within(from).getByTestId("job-link")).toHaveAttribute("href", "/projects/p1/compression-jobs/cj1");
    expect(within(from).getByTestId("picked-latency")).toHaveTextContent("Picked at 4.20 ms p50 / 6.10 ms p99 on camera-1");
  }, 30_000);

  it("an object detector's card says compression is not available yet, with no button to press", async () => {
    const detector = {
      ...version, task_type: "object_detection", labels: ["cat", "dog"],
      metrics: { evaluated_on: "test", val_map50: 0.62, val_map: 0.4, test_map50: 0.58, test_map: 0.35, score_threshold: 0.3 },
    };
    const state: State = { posted: [], answer: [400, { error: { code: "validation_failed", message: "compressing object_detection models is not available yet" } }] };
    renderRoutes(routes, "/projects/p1/models/versions/mv1", api(state, detector) as unknown as typeof globalThis.fetch);
    const card = await screen.findByTestId("compress-card", {}, { timeout: 5000 });
    expect(within(card).getByText("Compress for a device")).toBeInTheDocument();
    expect(within(card).getByTestId("compress-unavailable")).toHaveTextContent(
      "Compressing object detection models is not available yet: only image and text classifiers can be compressed for a device for now.",
    );
    expect(screen.queryByTestId("compress-button")).toBeNull();
    expect(within(card).queryByRole("button")).toBeNull();
    expect(screen.queryByTestId("compression-jobs")).toBeNull();
    expect(state.posted).toEqual([]);
  }, 30_000);

  it("a text classifier is offered the methods that apply to it: INT8 and FP16, not students", async () => {
    const text = {
      ...version, task_type: "text_classification", labels: ["正面", "负面"],
      metrics: { evaluated_on: "test", val_accuracy: 0.9, test_accuracy: 0.88, macro_f1: 0.87 },
      manifest: { text: { hash: "crc32", buckets: 32768 } },
    };
    const state: State = { posted: [], answer: [201, { ...job, status: "QUEUED" }] };
    const { router } = renderRoutes(routes, "/projects/p1/models/versions/mv1", api(state, text) as unknown as typeof globalThis.fetch);
    const dialog = await openForm();
    expect(within(dialog).getByTestId("accuracy-help")).toHaveTextContent("less accurate than this one on held-out texts.");
    for (const name of ["INT8 quantization", "FP16 (devices with a GPU only)"]) {
      expect(within(dialog).getByRole("checkbox", { name, hidden: true })).toBeChecked();
    }
    for (const name of ["Lower input resolution (distilled student)", "Pruning (distilled student)"]) {
      expect(within(dialog).queryByRole("checkbox", { name, hidden: true })).toBeNull();
    }
    await waitFor(() => expect(dialog.querySelector(".ant-select-content, .ant-select-selection-item")).toHaveTextContent("camera-1"));
    await userEvent.click(within(dialog).getByRole("button", { name: "Start compressing" }));
    await waitFor(() => expect(router.state.location.pathname).toBe("/projects/p1/compression-jobs/cj1"));
    expect(state.posted).toEqual([
      { source_model_version_id: "mv1", device_id: "dev1", accuracy_budget_pt: 1, budget_s: 600, methods: ["int8", "fp16"] },
    ]);
  }, 30_000);

  it("a float version has no such line", async () => {
    const state: State = { posted: [], answer: [201, job] };
    renderRoutes(routes, "/projects/p1/models/versions/mv1", api(state) as unknown as typeof globalThis.fetch);
    expect(await screen.findByTestId("compress-button", {}, { timeout: 5000 })).toBeInTheDocument();
    expect(screen.queryByTestId("compressed-from")).toBeNull();
  });
});
