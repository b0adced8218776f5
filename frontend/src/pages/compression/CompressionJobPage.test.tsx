import { screen, waitFor, within } from "@testing-library/react";
import userEvent from "@testing-library/user-event";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";

import { json, renderRoutes } from "../../test/render";
import { CompressionJobPage } from "./CompressionJobPage";

// ECharts needs a canvas: the chart is not what these tests read (candidates.test.ts covers its option)
vi.mock("../../components/charts/Chart", () => ({ Chart: (props: { ariaLabel: string }) => <div role="img" aria-label={props.ariaLabel} /> }));

beforeEach(() => {
  // no socket in jsdom: the page polls, as it does when the socket is down
  vi.stubGlobal("WebSocket", undefined);
});
afterEach(() => {
  vi.unstubAllGlobals();
});

const routes = [
  { path: "/projects/:projectId/compression-jobs/:jobId", element: <CompressionJobPage /> },
  { path: "/projects/:projectId/models/versions/:versionId", element: <p>version page</p> },
];
const source = { id: "mv1", model_id: "m1", model_name: "digits", version: 1 };
const MB = 1024 * 1024;

const candidates = [
  {
    key: "fp32", method: "fp32", params: {}, parent: null, status: "ready", reason: "", accuracy: 0.98, evaluated_on: "test",
    accuracy_drop_pt: 0, within_budget: true, size_bytes: 4 * MB, latency: { p50_ms: 10, p99_ms: 14 },
    benchmark: { id: "b0", status: "succeeded", error: "" }, compatible: true, incompatibilities: [],
  },
  {
    key: "int8", method: "int8", params: { calibration_method: "minmax", per_channel: true }, parent: "fp32", status: "ready", reason: "",
    accuracy: 0.975, evaluated_on: "test", accuracy_drop_pt: 0.5, within_budget: true, size_bytes: 1 * MB,
    latency: { p50_ms: 4, p99_ms: 6 }, benchmark: { id: "b1", status: "succeeded", error: "" }, compatible: true, incompatibilities: [],
  },
  {
    key: "res64", method: "distilled", params: { resolution: 64, pruning_ratio: 0, epochs: 12 }, parent: "fp32", status: "ready", reason: "",
    accuracy: 0.972, evaluated_on: "test", accuracy_drop_pt: 0.8, within_budget: true, size_bytes: 4 * MB, latency: null,
    benchmark: { id: "b2", status: "incompatible", error: "opset 21 > 20; ConvInteger not supported" }, compatible: false,
    incompatibilities: ["opset 21 > 20", "ConvInteger not supported"],
  },
  {
    key: "pruned30-res64", method: "distilled", params: { resolution: 64, pruning_ratio: 0.3 }, parent: "fp32", status: "ready", reason: "",
    accuracy: 0.955, evaluated_on: "test", accuracy_drop_pt: 2.5, within_budget: false, size_bytes: 2 * MB,
    latency: { p50_ms: 3, p99_ms: 5 }, benchmark: { id: "b3", status: "succeeded", error: "" }, compatible: true, incompatibilities: [],
  },
  {
    key: "int8-percentile", method: "int8", params: { calibration_method: "percentile" }, parent: "fp32", status: "ready", reason: "",
    accuracy: 0.976, evaluated_on: "test", accuracy_drop_pt: 0.4, within_budget: true, size_bytes: 1 * MB, latency: null,
    benchmark: { id: "b4", status: "expired", error: "not measured within the job's time budget" }, compatible: true, incompatibilities: [],
  },
  { key: "pruned50", method: "distilled", status: "skipped", reason: "not enough time left in the budget" },
];

const succeeded = {
  id: "cj1", source_id: "mv1", source, device_id: "dev1", device_name: "camera-1", accuracy_budget_pt: 1, budget_s: 600,
  methods: ["int8", "resolution", "pruning"], status: "SUCCEEDED", progress: { phase: "done", fraction: 1 }, candidates,
  warnings: ["this dataset version has no test split"], picked: "int8",
  pick_reason: "int8 is the fastest candidate within the accuracy budget (4.00 ms p50, 2.5x faster than the float model, +0.5 points)",
  model_version_id: "mv2", model_version: { ...source, id: "mv2", version: 2 }, error: "",
  created_at: "2026-11-29T00:00:00Z", started_at: "2026-11-29T00:00:01Z", finished_at: "2026-11-29T00:10:00Z",
};

function api(initial: object, state: { posted: { path: string; body: unknown }[] } = { posted: [] }) {
  let job = initial;
  return async (request: Request) => {
    const url = new URL(request.url);
    if (request.method === "POST") {
      const body = request.headers.get("content-type")?.includes("json") ? await request.json() : null;
      state.posted.push({ path: url.pathname, body });
      if (url.pathname.endsWith("/deployments/")) {
        return json(201, [{ id: "d1", device_id: "dev1", device_name: "camera-1", model_version: succeeded.model_version, state: "pending", error: "" }]);
      }
      if (url.pathname.endsWith("/cancel/")) {
        job = { ...job, status: "CANCELLED" };
        return json(200, job);
      }
    }
    if (url.pathname.endsWith("/compression-jobs/cj1/")) return json(200, job);
    return json(404, { error: { code: "not_found", message: url.pathname } });
  };
}

function row(key: string): HTMLElement {
  const cell = within(screen.getByTestId("candidates-table")).getByText(key, { selector: "code" });
  return cell.closest("tr") as HTMLElement;
}

describe("CompressionJobPage", () => {
  it("lists every candidate with its figures against the float reference and marks the pick", async () => {
    renderRoutes(routes, "/projects/p1/compression-jobs/cj1", api(succeeded) as unknown as typeof globalThis.fetch);
    expect(await screen.findByTestId("candidates-table", {}, { timeout: 5000 })).toBeInTheDocument();
    expect(screen.getByTestId("target")).toHaveTextContent("for camera-1");
    expect(screen.getByTestId("job-status")).toHaveTextContent("Done");
    expect(screen.getByTestId("compression-warning")).toHaveTextContent("this dataset version has no test split");

    const int8 = row("int8");
    expect(int8).toHaveAttribute("data-picked", "true");
    expect(within(int8).getByTestId("picked-tag")).toHaveTextContent("Picked");
    expect(int8).toHaveTextContent("INT8 (8-bit weights and activations)");
    expect(int8).toHaveTextContent("97.5% (test)");
    expect(int8).toHaveTextContent("1.00 MB");
    expect(int8).toHaveTextContent("4.0× smaller");
    expect(int8).toHaveTextContent("4.00 / 6.00 ms");
    expect(within(int8).getByTestId("speed-up")).toHaveTextContent("2.5×");
    expect(within(int8).queryByTestId("drop-beyond")).toBeNull();
    expect(screen.getAllByTestId("picked-tag")).toHaveLength(1);

    expect(row("fp32")).toHaveTextContent("Float reference");
    expect(row("fp32")).toHaveTextContent("10.0 / 14.0 ms");

    // beyond the budget: its drop in red
    expect(within(row("pruned30-res64")).getByTestId("drop-beyond")).toHaveTextContent("2.5");
    expect(row("pruned30-res64")).toHaveTextContent("Pruned 30 % + distilled at 64 px");

    // incompatible: the device's reasons in the tooltip, no latency
    const res64 = row("res64");
    expect(res64).toHaveTextContent("Distilled student at 64 px");
    expect(res64).not.toHaveTextContent("smaller"); // the same weights at a lower resolution
    await userEvent.hover(within(res64).getByTestId("incompatible-tag"));
    const reasons = await screen.findByTestId("incompatible-reasons");
    expect(reasons).toHaveTextContent("The device cannot run it:");
    expect(reasons).toHaveTextContent("opset 21 > 20");
    expect(reasons).toHaveTextContent("ConvInteger not supported");

    // expired with its reason; skipped with its reason
    expect(row("int8-percentile")).toHaveTextContent("expired");
    expect(row("int8-percentile")).toHaveTextContent("not measured within the job's time budget");
    expect(row("pruned50")).toHaveTextContent("skipped");
    expect(within(row("pruned50")).getByTestId("candidate-reason")).toHaveTextContent("not enough time left in the budget");

    expect(screen.getByText("1 point")).toBeInTheDocument(); // the accuracy budget
    // measured candidates only in the chart
    expect(screen.getByRole("img", { name: "Accuracy vs latency on the device" })).toBeInTheDocument();
    expect(screen.getByText(/Measured candidates only/)).toBeInTheDocument();
  }, 30_000);

  it("gives the pick's reason, its model version and deploys it to the device in one click", async () => {
    const state = { posted: [] as { path: string; body: unknown }[] };
    renderRoutes(routes, "/projects/p1/compression-jobs/cj1", api(succeeded, state) as unknown as typeof globalThis.fetch);
    const outcome = await screen.findByTestId("outcome", {}, { timeout: 5000 });
    expect(outcome).toHaveTextContent("Picked int8: INT8 (8-bit weights and activations)");
    expect(within(outcome).getByTestId("pick-reason")).toHaveTextContent("int8 is the fastest candidate within the accuracy budget");
    expect(within(outcome).getByTestId("picked-version-link")).toHaveAttribute("href", "/projects/p1/models/versions/mv2");
    expect(within(outcome).getByTestId("picked-version-link")).toHaveTextContent("Open digits v2");
    expect(screen.queryByRole("button", { name: /Cancel compression/ })).toBeNull();

    await userEvent.click(within(outcome).getByRole("button", { name: /Deploy to camera-1/ }));
    await waitFor(() =>
      expect(state.posted).toEqual([{ path: "/api/v1/projects/p1/deployments/", body: { model_version_id: "mv2", device_ids: ["dev1"] } }]),
    );
    expect(await screen.findByText("Deployment to camera-1 started")).toBeInTheDocument();
    expect(screen.getByTestId("watch-device")).toHaveAttribute("href", "/projects/p1/devices/dev1");
  }, 30_000);

  it("without a pick recommends the float model, with a link to it", async () => {
    const noPick = {
      ...succeeded, picked: "", model_version_id: null, model_version: null,
      pick_reason: "no candidate stays within the accuracy budget on the device: keep the float model",
      candidates: candidates.map((c) => (c.key === "fp32" ? c : { ...c, within_budget: false, accuracy_drop_pt: 3 })),
      warnings: [],
    };
    renderRoutes(routes, "/projects/p1/compression-jobs/cj1", api(noPick) as unknown as typeof globalThis.fetch);
    const outcome = await screen.findByTestId("outcome", {}, { timeout: 5000 });
    expect(outcome).toHaveClass("ant-alert-info");
    expect(outcome).toHaveTextContent("Keep the float model");
    expect(within(outcome).getByTestId("pick-reason")).toHaveTextContent("no candidate stays within the accuracy budget on the device: keep the float model");
    expect(within(outcome).getByTestId("float-link")).toHaveAttribute("href", "/projects/p1/models/versions/mv1");
    expect(within(outcome).getByTestId("float-link")).toHaveTextContent("Open the float model digits v1");
    expect(screen.queryByTestId("picked-tag")).toBeNull();
    expect(screen.queryByRole("button", { name: /Deploy to/ })).toBeNull();
    expect(screen.queryByTestId("compression-warning")).toBeNull();
  }, 30_000);

  it("while running shows the phase in words and cancels after a confirmation", async () => {
    const running = {
      ...succeeded, status: "RUNNING", picked: "", pick_reason: "", model_version_id: null, model_version: null, finished_at: null,
      progress: { phase: "student", candidate: "res64", epoch: 5, epochs: 20, fraction: 0.5, elapsed_s: 150 },
      candidates: [candidates[0], { ...candidates[1], latency: null, benchmark: { id: "b1", status: "running", error: "" } }],
      warnings: [],
    };
    const state = { posted: [] as { path: string; body: unknown }[] };
    renderRoutes(routes, "/projects/p1/compression-jobs/cj1", api(running, state) as unknown as typeof globalThis.fetch);
    expect(await screen.findByTestId("phase-text", {}, { timeout: 5000 })).toHaveTextContent("Training student res64 — epoch 5/20");
    expect(screen.getByTestId("compression-progress")).toHaveAttribute("aria-valuenow", "45");
    expect(screen.getByTestId("live-tag")).toHaveTextContent("polling");
    expect(row("int8")).toHaveTextContent("measuring");
    expect(screen.queryByTestId("outcome")).toBeNull();

    await userEvent.click(screen.getByRole("button", { name: /Cancel compression/ }));
    expect(await screen.findByText("Cancel this compression job? The candidates made so far are discarded.")).toBeInTheDocument();
    const confirm = screen.getAllByRole("button", { name: /Cancel compression/ }).at(-1) as HTMLElement;
    await userEvent.click(confirm);
    await waitFor(() => expect(state.posted.map((p) => p.path)).toEqual(["/api/v1/projects/p1/compression-jobs/cj1/cancel/"]));
    expect(await screen.findByText("This compression job was cancelled.")).toBeInTheDocument();
  }, 30_000);

  it("shows the server's error when the job failed", async () => {
    const failed = { ...succeeded, status: "FAILED", picked: "", model_version: null, model_version_id: null, error: "compression failed: out of memory", warnings: [] };
    renderRoutes(routes, "/projects/p1/compression-jobs/cj1", api(failed) as unknown as typeof globalThis.fetch);
    expect(await screen.findByRole("alert", {}, { timeout: 5000 })).toHaveTextContent("compression failed: out of memory");
    expect(screen.queryByTestId("outcome")).toBeNull();
  }, 30_000);
});
