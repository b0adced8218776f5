import { screen, waitFor, within } from "@testing-library/react";
import userEvent from "@testing-library/user-event";
import { describe, expect, it, vi } from "vitest";

import { formatDate } from "../../format";
import { json, renderRoutes } from "../../test/render";
import { RolloutPage } from "./RolloutPage";

vi.mock("../../components/charts/Chart", () => ({ Chart: (props: { ariaLabel: string }) => <div role="img" aria-label={props.ariaLabel} /> }));

const routes = [{ path: "/projects/:projectId/rollouts/:rolloutId", element: <RolloutPage /> }];

const v3 = { id: "mv3", model_id: "m1", model_name: "digits", version: 3 };
const v4 = { id: "mv4", model_id: "m1", model_name: "digits", version: 4 };
const summary = (state: string, version: typeof v3) => ({ id: `dep-${state}-${version.id}`, state, error: "", model_version: version, state_changed_at: "2026-12-01T10:05:00Z" });
const REGRESSION = "error rate 12.0% of 50 requests against 1.0% before (allowed: +2.0%)";

const rolling = {
  id: "r1", model_version: v4, strategy: "canary", tag: "", state: "rolling", reason: "", devices_total: 3, devices_running: 1,
  canary_devices: 1, batch_size: 1, current_batch: 0, batches: 3, observe_minutes: 10, observed_since: "2026-12-01T10:06:00Z",
  max_error_rate_increase: 0.02, max_latency_ratio: 1.5, max_confidence_drop: 0.1, max_restarts: 0, min_requests: 20,
  comparison: {
    candidate: { devices: 1, samples: 12, requests: 50, errors: 1, error_rate: 0.02, restarts: 0, p95_ms: 11.5, confidence: 0.91 },
    baseline: { devices: 3, samples: 40, requests: 400, errors: 4, error_rate: 0.01, restarts: 0, p95_ms: 10, confidence: 0.9 },
    regressions: [],
    at: "2026-12-01T10:08:00Z",
  },
  created_by: "ada", created_at: "2026-12-01T10:00:00Z", finished_at: null,
  devices: [
    { device_id: "d1", device_name: "cam-1", batch: 0, previous_model_version: v3, deployment: summary("running", v4), rollback: null },
    { device_id: "d2", device_name: "cam-2", batch: 1, previous_model_version: v3, deployment: null, rollback: null },
    { device_id: "d3", device_name: "gate", batch: 2, previous_model_version: null, deployment: null, rollback: null },
  ],
  series: [
    { t: "2026-12-01T10:06:00Z", side: "candidate", requests: 20, error_rate: 0.05, p95_ms: 12, confidence: 0.9 },
    { t: "2026-12-01T10:06:00Z", side: "baseline", requests: 80, error_rate: 0.01, p95_ms: 10, confidence: 0.91 },
  ],
};

const rolledBack = {
  ...rolling,
  state: "rolled_back",
  reason: REGRESSION,
  devices_running: 0,
  finished_at: "2026-12-01T10:09:00Z",
  comparison: {
    ...rolling.comparison,
    candidate: { ...rolling.comparison.candidate, errors: 6, error_rate: 0.12 },
    regressions: [REGRESSION],
  },
  devices: [{ ...rolling.devices[0], rollback: summary("downloading", v3) }, rolling.devices[1], rolling.devices[2]],
};

function api(detail: unknown, rollback: { status: number; body: unknown }, posted: unknown[] = []) {
  return async (request: Request) => {
    const path = new URL(request.url).pathname;
    if (request.method === "POST" && path.endsWith("/rollouts/r1/rollback/")) {
      posted.push(await request.json());
      return json(rollback.status, rollback.body);
    }
    if (path.endsWith("/rollouts/r1/")) return json(200, detail);
    return json(404, { error: { code: "not_found", message: path } });
  };
}

const row = (name: string) => within(screen.getByTestId("rollout-devices")).getByText(name).closest("tr") as HTMLElement;

describe("RolloutPage", () => {
  it("shows why a rollout rolled back, its devices, the regressions and the charts", async () => {
    renderRoutes(routes, "/projects/p1/rollouts/r1", api(rolledBack, { status: 409, body: {} }) as unknown as typeof globalThis.fetch);
    expect(await screen.findByTestId("rollback-reason")).toHaveTextContent(`Rolled back${REGRESSION}`);
    expect(screen.getByText("rolled back")).toBeInTheDocument();
    expect(screen.queryByRole("button", { name: /Roll back/ })).toBeNull();

    const canary = row("cam-1");
    expect(within(canary).getByText("Canary")).toBeInTheDocument();
    expect(within(canary).getByRole("link", { name: "digits v3" })).toHaveAttribute("href", "/projects/p1/models/versions/mv3");
    expect(within(canary).getByText("running")).toBeInTheDocument();
    expect(within(canary).getByText("downloading")).toBeInTheDocument();
    expect(within(row("cam-2")).getByText("Batch 1")).toBeInTheDocument();
    expect(within(row("cam-2")).getByText("not sent yet")).toBeInTheDocument();
    expect(within(row("gate")).getByText("none")).toBeInTheDocument();

    expect(screen.getByTestId("regressions")).toHaveTextContent(REGRESSION);
    const comparison = screen.getByTestId("comparison");
    const errorRate = within(comparison).getByText("Error rate").closest("tr") as HTMLElement;
    expect(errorRate).toHaveTextContent("12.00%1.00%new > previous + 2.0 points");
    const p95 = within(comparison).getByText("p95 latency (median)").closest("tr") as HTMLElement;
    expect(p95).toHaveTextContent("11.5 ms10.0 msnew > 1.5 × previous, and 2 ms slower");

    expect(screen.getByRole("img", { name: "Error rate (%)" })).toBeInTheDocument();
    expect(screen.getByRole("img", { name: "p95 latency (ms)" })).toBeInTheDocument();
    expect(screen.getByRole("img", { name: "Mean confidence" })).toBeInTheDocument();
  });

  it("shows the batches with the one being observed, and Roll back posts the reason", async () => {
    const posted: unknown[] = [];
    renderRoutes(routes, "/projects/p1/rollouts/r1", api(rolling, { status: 200, body: rolledBack }, posted) as unknown as typeof globalThis.fetch);
    const steps = await screen.findByTestId("rollout-steps");
    expect(steps).toHaveTextContent("Canary");
    expect(steps).toHaveTextContent("Batch 2");
    expect(within(steps).getByTestId("current-batch")).toHaveTextContent(`observing until ${formatDate("2026-12-01T10:16:00Z")}`);
    expect(screen.getByTestId("rollout-progress")).toHaveTextContent("1 / 3");
    expect(screen.queryByTestId("regressions")).toBeNull();

    await userEvent.click(screen.getByRole("button", { name: /Roll back/ }));
    const dialog = await screen.findByRole("dialog");
    await userEvent.type(within(dialog).getByLabelText("Reason"), "wrong labels");
    await userEvent.click(within(dialog).getByRole("button", { name: /Roll back/ }));
    await waitFor(() => expect(posted).toEqual([{ reason: "wrong labels" }]));
    expect(await screen.findByTestId("rollback-reason")).toHaveTextContent(REGRESSION);
  });

  it("says what an idle canary waits for, and why a device left the rollout", async () => {
    const idle = {
      ...rolling,
      comparison: { ...rolling.comparison, waiting_for: "the canary has served 3 of the 20 requests it needs" },
      devices: [rolling.devices[0], { ...rolling.devices[1], deployment: null, note: "deployed to by hand during the rollout: left it" }, rolling.devices[2]],
    };
    renderRoutes(routes, "/projects/p1/rollouts/r1", api(idle, { status: 200, body: idle }) as unknown as typeof globalThis.fetch);
    expect(await screen.findByTestId("waiting-for")).toHaveTextContent("Not promoted yet: the canary has served 3 of the 20 requests it needs.");
    expect(screen.getByText("deployed to by hand during the rollout: left it")).toBeInTheDocument();
  });

  it("says why when the API refuses the rollback (409: no longer rolling)", async () => {
    const posted: unknown[] = [];
    const message = "this rollout is completed: only a rolling one can be rolled back";
    const conflict = { status: 409, body: { error: { code: "conflict", message, field: "state" } } };
    renderRoutes(routes, "/projects/p1/rollouts/r1", api(rolling, conflict, posted) as unknown as typeof globalThis.fetch);
    await userEvent.click(await screen.findByRole("button", { name: /Roll back/ }));
    const dialog = await screen.findByRole("dialog");
    await userEvent.click(within(dialog).getByRole("button", { name: /Roll back/ }));
    expect(await screen.findByText(message)).toBeInTheDocument();
    // no reason typed: the API records its own
    expect(posted).toEqual([{}]);
  });
});
