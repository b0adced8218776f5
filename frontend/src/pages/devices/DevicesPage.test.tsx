import { screen, waitFor, within } from "@testing-library/react";
import userEvent from "@testing-library/user-event";
import { describe, expect, it } from "vitest";

import { json, renderRoutes } from "../../test/render";
import { DevicesPage } from "./DevicesPage";

const routes = [
  { path: "/projects/:projectId/devices", element: <DevicesPage /> },
  { path: "/projects/:projectId/devices/:deviceId", element: <p>device page</p> },
];

const device = {
  id: "dev1",
  name: "camera-1",
  status: "online",
  last_seen_at: new Date().toISOString(),
  device_time: null,
  agent_version: "0.1.0",
  tags: ["line-3"],
  info: {},
  current_model_version: { id: "mv1", model_id: "m1", model_name: "digits", version: 3 },
  deployment: null,
  last_metrics: { requests: 42, errors: 1, latency_ms: { p50: 2, p95: 7.25, p99: 9 }, cpu_percent: 3, memory_bytes: 1 },
  created_at: "2026-11-29T00:00:00Z",
};

function api(posted: unknown[], local = false) {
  return async (request: Request) => {
    const url = new URL(request.url);
    if (request.method === "POST" && url.pathname.endsWith("/enrollment-tokens/")) {
      posted.push(await request.json());
      return json(201, {
        id: "t1", note: "", expires_at: "2026-11-30T00:00:00Z", used_at: null, device_id: null,
        created_at: "2026-11-29T00:00:00Z", token: "spe_secret", enroll_command: "sampan-agent enroll --url http://x --token spe_secret",
        server_url: "http://x", server_url_is_local: local, install_command: 'pip install "sampan[edge]"',
        run_command: "sampan-agent run --host 0.0.0.0 --port 8700",
      });
    }
    if (url.pathname.endsWith("/devices/")) return json(200, [device, { ...device, id: "dev2", name: "gate", status: "offline", last_seen_at: null, current_model_version: null, last_metrics: {} }]);
    return json(404, { error: { code: "not_found", message: url.pathname } });
  };
}

describe("DevicesPage", () => {
  it("lists the fleet with status, last seen, model version, requests and p95", async () => {
    renderRoutes(routes, "/projects/p1/devices", api([]) as unknown as typeof globalThis.fetch);
    const row = (await screen.findByText("camera-1")).closest("tr") as HTMLElement;
    expect(screen.getByTestId("devices-table")).toContainElement(row);
    expect(within(row).getByText("online")).toBeInTheDocument();
    expect(within(row).getByText("just now")).toBeInTheDocument();
    expect(within(row).getByText("digits v3")).toBeInTheDocument();
    expect(within(row).getByText("42")).toBeInTheDocument();
    expect(within(row).getByText("7.3 ms")).toBeInTheDocument();
    expect(within(row).getByText("line-3")).toBeInTheDocument();
    const other = screen.getByText("gate").closest("tr") as HTMLElement;
    expect(within(other).getByText("offline")).toBeInTheDocument();
    expect(within(other).getByText("never")).toBeInTheDocument();
  });

  it("Add device issues a token and shows the enroll command once", async () => {
    const posted: unknown[] = [];
    renderRoutes(routes, "/projects/p1/devices", api(posted) as unknown as typeof globalThis.fetch);
    await userEvent.click(await screen.findByRole("button", { name: /Add device/ }));
    expect(await screen.findByTestId("enroll-command")).toHaveTextContent("sampan-agent enroll --url http://x --token spe_secret");
    expect(screen.getByText(/shown only now/)).toBeInTheDocument();
    expect(posted).toEqual([{ expires_in_hours: 24 }]);
    expect(screen.getByTestId("install-command")).toHaveTextContent('pip install "sampan[edge]"');
    expect(screen.getByTestId("run-command")).toHaveTextContent("sampan-agent run --host 0.0.0.0 --port 8700");
    expect(screen.queryByTestId("local-url")).not.toBeInTheDocument();
  });

  it("says when the URL in the commands names this machine only", async () => {
    renderRoutes(routes, "/projects/p1/devices", api([], true) as unknown as typeof globalThis.fetch);
    await userEvent.click(await screen.findByRole("button", { name: /Add device/ }));
    expect(await screen.findByTestId("local-url")).toHaveTextContent(/cannot reach http:\/\/x.*HOST=0\.0\.0\.0.*SAMPAN_PUBLIC_URL/);
  });

  it("a row opens the device page", async () => {
    const { router } = renderRoutes(routes, "/projects/p1/devices", api([]) as unknown as typeof globalThis.fetch);
    await userEvent.click(await screen.findByText("camera-1"));
    await waitFor(() => expect(router.state.location.pathname).toBe("/projects/p1/devices/dev1"));
  });
});
