import { screen, waitFor, within } from "@testing-library/react";
import userEvent from "@testing-library/user-event";
import { describe, expect, it } from "vitest";

import { json, renderRoutes } from "../../test/render";
import { planBatches, RolloutsPage } from "./RolloutsPage";

const routes = [
  { path: "/projects/:projectId/rollouts", element: <RolloutsPage /> },
  { path: "/projects/:projectId/rollouts/:rolloutId", element: <p>rollout page</p> },
];

const rollout = {
  id: "r1", model_version: { id: "mv4", model_id: "m1", model_name: "digits", version: 4 }, strategy: "canary", tag: "line-3",
  state: "rolling", reason: "", devices_total: 3, devices_running: 1, canary_devices: 1, batch_size: 0, current_batch: 0, batches: 2,
  observe_minutes: 10, observed_since: null, max_error_rate_increase: 0.02, max_latency_ratio: 1.5, max_confidence_drop: 0.1,
  max_restarts: 0, min_requests: 20, comparison: {}, created_by: "ada", created_at: "2026-12-01T10:00:00Z", finished_at: null,
};
const rolledBack = {
  ...rollout, id: "r2", model_version: { id: "mv3", model_id: "m1", model_name: "digits", version: 3 }, tag: "", strategy: "all",
  state: "rolled_back", reason: "p95 latency 30.0 ms against 10.0 ms before (allowed: x1.5)", devices_running: 0, batches: 1,
  finished_at: "2026-12-01T09:30:00Z",
};
const versions = [
  { id: "mv3", model_id: "m1", model_name: "digits", version: 3, created_at: "2026-11-30T00:00:00Z" },
  { id: "mv4", model_id: "m1", model_name: "digits", version: 4, created_at: "2026-12-01T00:00:00Z" },
];
const device = (id: string, name: string, tags: string[]) => ({
  id, name, status: "online", last_seen_at: null, device_time: null, agent_version: "0.1.0", tags, info: {},
  current_model_version: null, deployment: null, last_metrics: {}, created_at: "2026-11-29T00:00:00Z",
});
const devices = [device("d1", "cam-1", ["line-3"]), device("d2", "cam-2", ["line-3"]), device("d3", "gate", [])];

function api(posted: unknown[]) {
  return async (request: Request) => {
    const path = new URL(request.url).pathname;
    if (request.method === "POST" && path.endsWith("/rollouts/")) {
      const body = (await request.json()) as Record<string, unknown>;
      posted.push(body);
      return json(201, { ...rollout, id: "r3" });
    }
    if (path.endsWith("/rollouts/")) return json(200, [rollout, rolledBack]);
    if (path.endsWith("/model-versions/")) return json(200, versions);
    if (path.endsWith("/devices/")) return json(200, devices);
    return json(404, { error: { code: "not_found", message: path } });
  };
}

const DEFAULT_THRESHOLDS = { max_latency_ratio: 1.5, max_confidence_drop: 0.1, max_restarts: 0, min_requests: 20 };

describe("RolloutsPage", () => {
  it("lists rollouts with their state, progress, batch and why one rolled back", async () => {
    renderRoutes(routes, "/projects/p1/rollouts", api([]) as unknown as typeof globalThis.fetch);
    const table = await screen.findByTestId("rollouts-table");
    const row = (await within(table).findByText("digits v4")).closest("tr") as HTMLElement;
    expect(within(row).getByText("Canary")).toBeInTheDocument();
    expect(within(row).getByText("line-3")).toBeInTheDocument();
    expect(within(row).getByText("rolling")).toBeInTheDocument();
    expect(within(row).getByText("1 / 3")).toBeInTheDocument();
    expect(within(row).getByText("1 / 2")).toBeInTheDocument();
    const other = within(table).getByText("digits v3").closest("tr") as HTMLElement;
    expect(within(other).getByText("All at once")).toBeInTheDocument();
    expect(within(other).getByText("rolled back")).toBeInTheDocument();
    expect(within(other).getByText("0 / 3")).toBeInTheDocument();
    expect(other).toHaveTextContent("p95 latency 30.0 ms against 10.0 ms before (allowed: x1.5)");
    expect(within(row).getByRole("link", { name: "digits v4" })).toHaveAttribute("href", "/projects/p1/rollouts/r1");
  });

  it("a row opens the rollout", async () => {
    const { router } = renderRoutes(routes, "/projects/p1/rollouts", api([]) as unknown as typeof globalThis.fetch);
    await userEvent.click(await screen.findByText("0 / 3"));
    await waitFor(() => expect(router.state.location.pathname).toBe("/projects/p1/rollouts/r2"));
  });

  it("New rollout posts a canary rollout to chosen devices with its thresholds, then opens it", async () => {
    const posted: unknown[] = [];
    const { router } = renderRoutes(routes, "/projects/p1/rollouts", api(posted) as unknown as typeof globalThis.fetch);
    await within(await screen.findByTestId("rollouts-table")).findByText("digits v4");
    await userEvent.click(screen.getByRole("button", { name: /New rollout/ }));
    const dialog = await screen.findByRole("dialog");

    await userEvent.click(within(dialog).getByLabelText("Model version"));
    await userEvent.click(await screen.findByTitle("digits v4"));
    await userEvent.click(within(dialog).getByLabelText("Chosen devices"));
    await userEvent.click(await within(dialog).findByLabelText("Devices"));
    await userEvent.click(await screen.findByTitle("cam-1"));
    await userEvent.click(await screen.findByTitle("cam-2"));
    await userEvent.click(await screen.findByTitle("gate"));
    const canary = within(dialog).getByLabelText("Canary size");
    await userEvent.clear(canary);
    await userEvent.type(canary, "2");
    const batch = within(dialog).getByLabelText("Batch size");
    await userEvent.clear(batch);
    await userEvent.type(batch, "1");
    await waitFor(() => expect(within(dialog).getByTestId("rollout-plan")).toHaveTextContent("3 devices:Canary · 2Batch 1 · 1"));

    await userEvent.click(within(dialog).getByText("Rollback thresholds"));
    const errorRate = within(dialog).getByLabelText("Error rate increase");
    await userEvent.clear(errorRate);
    await userEvent.type(errorRate, "5");
    const restarts = within(dialog).getByLabelText("Agent restarts");
    await userEvent.clear(restarts);
    await userEvent.type(restarts, "1");

    await userEvent.click(within(dialog).getByRole("button", { name: /Start rollout/ }));
    await waitFor(() =>
      expect(posted).toEqual([
        {
          model_version_id: "mv4",
          device_ids: ["d1", "d2", "d3"],
          strategy: "canary",
          canary_devices: 2,
          batch_size: 1,
          observe_minutes: 10,
          max_error_rate_increase: 0.05,
          ...DEFAULT_THRESHOLDS,
          max_restarts: 1,
        },
      ]),
    );
    await waitFor(() => expect(router.state.location.pathname).toBe("/projects/p1/rollouts/r3"));
  }, 60_000);

  it("?new opens the form (the Devices page links here) with ?version picked, and sends the defaults", async () => {
    const posted: unknown[] = [];
    renderRoutes(routes, "/projects/p1/rollouts?new=1&version=mv3", api(posted) as unknown as typeof globalThis.fetch);
    const dialog = await screen.findByRole("dialog");
    await waitFor(() => expect(within(dialog).getByTitle("digits v3")).toBeInTheDocument());
    await waitFor(() => expect(within(dialog).getByTestId("rollout-plan")).toHaveTextContent("3 devices:Canary · 1Batch 1 · 2"));
    await userEvent.click(within(dialog).getByRole("button", { name: /Start rollout/ }));
    await waitFor(() =>
      expect(posted).toEqual([
        { model_version_id: "mv3", strategy: "canary", canary_devices: 1, batch_size: 0, observe_minutes: 10, max_error_rate_increase: 0.02, ...DEFAULT_THRESHOLDS },
      ]),
    );
  }, 60_000);
});

describe("planBatches", () => {
  it("splits devices as the API does: the canary never takes every device", () => {
    expect(planBatches(7, "canary", 1, 2)).toEqual([1, 2, 2, 2]);
    expect(planBatches(7, "canary", 2, 0)).toEqual([2, 5]);
    expect(planBatches(2, "canary", 5, 0)).toEqual([1, 1]);
    expect(planBatches(1, "canary", 1, 0)).toEqual([1]);
    expect(planBatches(5, "all", 1, 2)).toEqual([5]);
    expect(planBatches(0, "canary", 1, 0)).toEqual([]);
  });
});
