import { screen, waitFor } from "@testing-library/react";
import userEvent from "@testing-library/user-event";
import { describe, expect, it, vi } from "vitest";

import { json, renderRoutes } from "../../test/render";
import { DevicePage } from "./DevicePage";

vi.mock("../../components/charts/Chart", () => ({ Chart: (props: { ariaLabel: string }) => <div role="img" aria-label={props.ariaLabel} /> }));

const routes = [{ path: "/projects/:projectId/devices/:deviceId", element: <DevicePage /> }];

function device(lastMetrics: Record<string, unknown>) {
  return {
    id: "dev1",
    name: "gate-camera",
    status: "online",
    last_seen_at: new Date().toISOString(),
    device_time: null,
    agent_version: "0.1.0",
    tags: ["line-3", "canary"],
    info: {},
    runtime: {},
    current_model_version: { id: "mv2", model_id: "m2", model_name: "street", version: 2 },
    deployment: null,
    last_metrics: lastMetrics,
    created_at: "2026-12-01T00:00:00Z",
  };
}

const row = (t: string, metrics: unknown) => ({ received_at: t, device_time: null, current_model_version_id: "mv2", metrics });

function api(lastMetrics: Record<string, unknown>, telemetry: unknown[]) {
  return async (request: Request) => {
    const path = new URL(request.url).pathname;
    if (path.endsWith("/telemetry/")) return json(200, telemetry);
    if (path.endsWith("/devices/dev1/")) return json(200, device(lastMetrics));
    return json(404, { error: { code: "not_found", message: path } });
  };
}

describe("DevicePage", () => {
  it("shows a detection model's detections per second and its objects by class", async () => {
    const metrics = { requests: 9, errors: 0, detections: 30, detections_by_class: { person: 18, car: 12 } };
    const telemetry = [row("2026-12-01T12:00:00Z", { requests: 1, detections: 6 }), row("2026-12-01T12:00:10Z", metrics)];
    renderRoutes(routes, "/projects/p1/devices/dev1", api(metrics, telemetry) as unknown as typeof globalThis.fetch);
    await waitFor(() => expect(screen.getByTestId("detections-per-second")).toHaveTextContent("2.40"));
    expect(screen.getByRole("img", { name: "Detections per second" })).toBeInTheDocument();
    expect(screen.getByTestId("detections-by-class")).toHaveTextContent("person 18car 12");
  });

  it("shows neither for an image classifier", async () => {
    const metrics = { requests: 9, errors: 0 };
    renderRoutes(routes, "/projects/p1/devices/dev1", api(metrics, [row("2026-12-01T12:00:00Z", metrics)]) as unknown as typeof globalThis.fetch);
    await waitFor(() => expect(screen.getByRole("img", { name: "Requests per second" })).toBeInTheDocument());
    expect(screen.queryByTestId("detections-per-second")).toBeNull();
    expect(screen.queryByRole("img", { name: "Detections per second" })).toBeNull();
    expect(screen.queryByTestId("detections-by-class")).toBeNull();
  });

  it("shows requests per second, the latency window and CPU as a share of the device's cores", async () => {
    const metrics = { requests: 50, errors: 0, latency_ms: { p50: 2, p95: 4.5, p99: 6 }, latency_window_s: 60, cpu_percent: 12.5, cpu_count: 4 };
    const telemetry = [row("2026-12-01T12:00:00Z", { requests: 10 }), row("2026-12-01T12:00:05Z", metrics)];
    renderRoutes(routes, "/projects/p1/devices/dev1", api(metrics, telemetry) as unknown as typeof globalThis.fetch);
    await waitFor(() => expect(screen.getByTestId("requests-per-second")).toHaveTextContent("8.00"));
    expect(screen.getByText("p95 latency, last 60 s")).toBeInTheDocument();
    expect(screen.getByTestId("cpu")).toHaveTextContent("CPU (of 4 cores)");
    expect(screen.getByTestId("cpu")).toHaveTextContent("12.5%");
  });

  it("shows the device's tags and saves edited ones", async () => {
    const patched: unknown[] = [];
    let tags = ["line-3", "canary"];
    const fetcher = async (request: Request) => {
      const path = new URL(request.url).pathname;
      if (request.method === "PATCH" && path.endsWith("/devices/dev1/")) {
        const body = (await request.json()) as { tags: string[] };
        patched.push(body);
        tags = body.tags;
        return json(200, { ...device({}), tags });
      }
      if (path.endsWith("/telemetry/")) return json(200, []);
      if (path.endsWith("/devices/dev1/")) return json(200, { ...device({}), tags });
      if (path.endsWith("/devices/")) return json(200, [{ ...device({}), tags }]);
      return json(404, { error: { code: "not_found", message: path } });
    };
    renderRoutes(routes, "/projects/p1/devices/dev1", fetcher as unknown as typeof globalThis.fetch);
    const shown = await screen.findByTestId("device-tags");
    expect(shown).toHaveTextContent("line-3");
    expect(shown).toHaveTextContent("canary");
    await userEvent.click(screen.getByRole("button", { name: "Edit tags" }));
    const input = screen.getByRole("combobox", { name: "Tags" });
    await userEvent.type(input, "gate{enter}");
    await userEvent.click(screen.getByRole("button", { name: "Save" }));
    await waitFor(() => expect(patched).toEqual([{ tags: ["line-3", "canary", "gate"] }]));
    await waitFor(() => expect(screen.getByTestId("device-tags")).toHaveTextContent("gate"));
  }, 30_000);
});
