import { act, fireEvent, screen, waitFor, within } from "@testing-library/react";
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
    if (url.pathname.endsWith("/model-versions/")) return json(200, []);
    return json(404, { error: { code: "not_found", message: url.pathname } });
  };
}

type LocalState = { available: boolean; state: string; device_id: string | null; error: string | null };

/**
 * The fleet API plus "Use this machine as a device": GET local-device/ answers `before` until the
 * POST, then `after`; the POST answers `posted` (a status) or an error. Every local-device request
 * and every devices list request is recorded.
 */
function localApi(before: LocalState, after: LocalState = before, posted: { status: number; body: unknown } = { status: 202, body: { ...before, state: "requested", error: null } }) {
  const calls: string[] = [];
  let requested = false;
  const base = api([]);
  const fetch = async (request: Request) => {
    const url = new URL(request.url);
    if (url.pathname === "/api/v1/projects/p1/local-device/") {
      calls.push(request.method);
      if (request.method === "POST") {
        requested = true;
        return json(posted.status, posted.body);
      }
      return json(200, requested ? after : before);
    }
    if (url.pathname.endsWith("/devices/")) calls.push("devices");
    return base(request);
  };
  return { calls, fetch: fetch as unknown as typeof globalThis.fetch };
}

const local = (state: string, extra: Partial<LocalState> = {}): LocalState => ({ available: true, state, device_id: null, error: null, ...extra });

const modelVersion = (id: string, name: string, version: number, created_at: string) => ({
  id, model_id: "m1", model_name: name, version, task_type: "image_classification", labels: [], metrics: {}, pretrained: false,
  dataset_version_id: null, dataset_version: null, training_job_id: null, parent_id: null, model_sha256: "", model_size: 1,
  files: {}, manifest: {}, created_at,
});

/** A fleet of 10,000 devices (device-00000 ...): pages of the list, with X-Total-Count; every list request is recorded. */
function bigFleet() {
  const pages: URLSearchParams[] = [];
  const full: URLSearchParams[] = [];
  const fetch = async (request: Request) => {
    const url = new URL(request.url);
    if (url.pathname.endsWith("/model-versions/")) {
      return json(200, [modelVersion("mv1", "digits", 3, "2026-11-01T00:00:00Z"), modelVersion("mv2", "street", 1, "2026-11-02T00:00:00Z")]);
    }
    if (url.pathname.endsWith("/devices/")) {
      if (!url.searchParams.has("limit")) {
        // the full list: only the tag picker reads it
        full.push(url.searchParams);
        return json(200, [{ ...device, tags: ["line-3", "dock"] }, { ...device, id: "x", name: "x", tags: ["yard"] }]);
      }
      pages.push(url.searchParams);
      const offset = Number(url.searchParams.get("offset"));
      const limit = Number(url.searchParams.get("limit"));
      const filtered = [...url.searchParams.keys()].some((key) => key !== "limit" && key !== "offset");
      const total = url.searchParams.get("search") === "nothing" ? 0 : filtered ? 3 : 10_000;
      const names = Array.from({ length: Math.max(0, Math.min(limit, total - offset)) }, (_, i) => `device-${String(offset + i).padStart(5, "0")}`);
      const body = names.map((name) => ({ ...device, id: name, name }));
      return new Response(JSON.stringify(body), { status: 200, headers: { "Content-Type": "application/json", "X-Total-Count": String(total) } });
    }
    return json(404, { error: { code: "not_found", message: url.pathname } });
  };
  return { pages, full, fetch: fetch as unknown as typeof globalThis.fetch };
}

const query = (params: URLSearchParams | undefined) => Object.fromEntries(params ?? []);

async function pick(label: string, option: string) {
  fireEvent.mouseDown(screen.getByRole("combobox", { name: label }));
  const item = await waitFor(() => {
    const found = [...document.querySelectorAll(".ant-select-item-option")].find((o) => o.textContent === option && o.closest(".ant-select-dropdown:not(.ant-select-dropdown-hidden)"));
    expect(found).toBeTruthy();
    return found as HTMLElement;
  });
  fireEvent.click(item);
}

async function goToPage2() {
  fireEvent.click(document.querySelector(".ant-pagination-item-2") as HTMLElement);
  expect(await screen.findByText("device-00050")).toBeInTheDocument();
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

  describe("with 10,000 devices", () => {
    it("asks for one page of 50 and shows the total from X-Total-Count", async () => {
      const fleet = bigFleet();
      renderRoutes(routes, "/projects/p1/devices", fleet.fetch);
      expect(await screen.findByText("device-00000")).toBeInTheDocument();
      expect(query(fleet.pages[0])).toEqual({ limit: "50", offset: "0" });
      expect(screen.getByText("10000 devices")).toBeInTheDocument();
      expect(within(screen.getByTestId("devices-table")).getAllByRole("row")).toHaveLength(51);
      // the full list is not read for the page
      expect(fleet.full).toEqual([]);
    });

    it("page 2 asks for offset 50, and the page is in the URL", async () => {
      const fleet = bigFleet();
      const { router } = renderRoutes(routes, "/projects/p1/devices", fleet.fetch);
      await screen.findByText("device-00000");
      await goToPage2();
      expect(query(fleet.pages.at(-1))).toEqual({ limit: "50", offset: "50" });
      expect(router.state.location.search).toBe("?page=2");
    });

    it("a page size of 100 asks for 100 from the start", async () => {
      const fleet = bigFleet();
      renderRoutes(routes, "/projects/p1/devices?page=3&page_size=100", fleet.fetch);
      expect(await screen.findByText("device-00200")).toBeInTheDocument();
      expect(query(fleet.pages[0])).toEqual({ limit: "100", offset: "200" });
    });

    it("a status sends status and goes back to page 1", async () => {
      const fleet = bigFleet();
      const { router } = renderRoutes(routes, "/projects/p1/devices", fleet.fetch);
      await screen.findByText("device-00000");
      await goToPage2();
      await pick("Status", "offline");
      await waitFor(() => expect(query(fleet.pages.at(-1))).toEqual({ limit: "50", offset: "0", status: "offline" }));
      expect(await screen.findByText("3 devices")).toBeInTheDocument();
      expect(router.state.location.search).toBe("?status=offline");
      // back to every status: page 1 of the whole fleet (cached, so maybe without a request)
      await pick("Status", "Any status");
      expect(await screen.findByText("10000 devices")).toBeInTheDocument();
      expect(router.state.location.search).toBe("");
    });

    it("a model version sends model_version and goes back to page 1", async () => {
      const fleet = bigFleet();
      renderRoutes(routes, "/projects/p1/devices", fleet.fetch);
      await screen.findByText("device-00000");
      await goToPage2();
      fireEvent.mouseDown(screen.getByRole("combobox", { name: "Model version" }));
      // newest first
      await waitFor(() =>
        expect([...document.querySelectorAll(".ant-select-item-option")].map((o) => o.textContent)).toEqual(["street v1", "digits v3"]),
      );
      fireEvent.click(screen.getByTitle("digits v3"));
      await waitFor(() => expect(query(fleet.pages.at(-1))).toEqual({ limit: "50", offset: "0", model_version: "mv1" }));
      expect(await screen.findByText("3 devices")).toBeInTheDocument();
    });

    it("the name search waits for the typing to pause, then asks from offset 0", async () => {
      const fleet = bigFleet();
      const { router } = renderRoutes(routes, "/projects/p1/devices", fleet.fetch);
      await screen.findByText("device-00000");
      await goToPage2();
      await userEvent.type(screen.getByRole("textbox", { name: "Search by name" }), "cam");
      // the debounce plus a render: generous for a busy CI machine (the 1 s default failed once)
      await waitFor(() => expect(query(fleet.pages.at(-1))).toEqual({ limit: "50", offset: "0", search: "cam" }), { timeout: 5000 });
      // one request for the whole word, none for "c" or "ca"
      expect(fleet.pages.filter((p) => p.has("search")).map((p) => p.get("search"))).toEqual(["cam"]);
      expect(await screen.findByText("3 devices")).toBeInTheDocument();
      expect(router.state.location.search).toBe("?search=cam");
      // a link to the page without filters empties the box, and the search is not sent again
      await act(() => router.navigate("/projects/p1/devices"));
      await waitFor(() => expect(screen.getByRole("textbox", { name: "Search by name" })).toHaveValue(""), { timeout: 5000 });
      await new Promise((resolve) => setTimeout(resolve, 400));
      expect(router.state.location.search).toBe("");
    });

    it("says when no device matches the filters", async () => {
      const fleet = bigFleet();
      renderRoutes(routes, "/projects/p1/devices?search=nothing", fleet.fetch);
      expect(await screen.findByText("No device matches these filters.")).toBeInTheDocument();
    });

    it("the tag picker reads the fleet's tags when opened, and a tag sends tag from offset 0", async () => {
      const fleet = bigFleet();
      renderRoutes(routes, "/projects/p1/devices", fleet.fetch);
      await screen.findByText("device-00000");
      await goToPage2();
      expect(fleet.full).toEqual([]);
      fireEvent.mouseDown(screen.getByRole("combobox", { name: "Tag" }));
      await waitFor(() =>
        expect([...document.querySelectorAll(".ant-select-item-option")].map((o) => o.textContent)).toEqual(["dock", "line-3", "yard"]),
      );
      expect(fleet.full).toHaveLength(1);
      fireEvent.click(screen.getByTitle("yard"));
      await waitFor(() => expect(query(fleet.pages.at(-1))).toEqual({ limit: "50", offset: "0", tag: "yard" }));
    });

    it("filters from the URL are sent at once", async () => {
      const fleet = bigFleet();
      renderRoutes(routes, "/projects/p1/devices?status=online&tag=line-3&model_version=mv2&search=cam", fleet.fetch);
      expect(await screen.findByText("3 devices")).toBeInTheDocument();
      expect(query(fleet.pages[0])).toEqual({ limit: "50", offset: "0", status: "online", tag: "line-3", model_version: "mv2", search: "cam" });
      expect(screen.getByRole("textbox", { name: "Search by name" })).toHaveValue("cam");
    });
  });
  describe("use this machine as a device", () => {
    async function openAddDevice() {
      await userEvent.click(await screen.findByRole("button", { name: /Add device/ }));
      await screen.findByTestId("enroll-command");
    }

    it("is not offered where the server runs no local agents: the commands stay", async () => {
      const server = localApi({ available: false, state: "unavailable", device_id: null, error: null });
      renderRoutes(routes, "/projects/p1/devices", server.fetch);
      await openAddDevice();
      await waitFor(() => expect(server.calls).toContain("GET"));
      // let the answer render
      await new Promise((resolve) => setTimeout(resolve, 100));
      expect(screen.queryByRole("button", { name: /Use this machine as a device/ })).not.toBeInTheDocument();
      expect(screen.queryByTestId("local-device")).not.toBeInTheDocument();
      expect(screen.getByTestId("install-command")).toBeInTheDocument();
      expect(screen.getByTestId("run-command")).toBeInTheDocument();
    });

    it("the button asks for an agent, shows it starting, then links to the enrolled device", async () => {
      const server = localApi(local("none"), local("enrolled", { device_id: "dev9" }));
      const { router } = renderRoutes(routes, "/projects/p1/devices", server.fetch);
      await openAddDevice();
      expect(await screen.findByText(/for trying deployments without other hardware/)).toBeInTheDocument();
      expect(screen.getByTestId("install-command")).toBeInTheDocument();
      await userEvent.click(screen.getByRole("button", { name: /Use this machine as a device/ }));
      expect(await screen.findByTestId("local-device-starting")).toHaveTextContent("Starting the agent on this machine");
      expect(server.calls.filter((c) => c === "POST")).toHaveLength(1);
      const listsBefore = server.calls.filter((c) => c === "devices").length;
      // polled every second while it starts
      const link = await screen.findByRole("link", { name: "Open the device" }, { timeout: 5000 });
      expect(link).toHaveAttribute("href", "/projects/p1/devices/dev9");
      expect(screen.getByTestId("local-device-enrolled")).toHaveTextContent("This machine is a device of this project");
      expect(screen.queryByTestId("local-device-starting")).not.toBeInTheDocument();
      // the fleet is asked for again, so the new device shows up
      await waitFor(() => expect(server.calls.filter((c) => c === "devices").length).toBeGreaterThan(listsBefore));
      await userEvent.click(link);
      await waitFor(() => expect(router.state.location.pathname).toBe("/projects/p1/devices/dev9"));
    });

    it("an enrolled device whose agent stopped says so, links to it and offers a new start", async () => {
      const server = localApi(local("stopped", { device_id: "dev9", error: "its agent is not running (make run starts it)" }));
      renderRoutes(routes, "/projects/p1/devices", server.fetch);
      await openAddDevice();
      const stopped = await screen.findByTestId("local-device-stopped");
      expect(stopped).toHaveTextContent("its agent is not running");
      expect(within(stopped).getByRole("link", { name: "Open the device" })).toHaveAttribute("href", "/projects/p1/devices/dev9");
      expect(screen.getByRole("button", { name: /Use this machine as a device/ })).toBeEnabled();
    });

    it("a failed start shows why, and the button stays to try again", async () => {
      const server = localApi(local("failed", { error: "sampan-agent enroll exited with 1: connection refused" }));
      renderRoutes(routes, "/projects/p1/devices", server.fetch);
      await openAddDevice();
      const failed = await screen.findByTestId("local-device-failed");
      expect(failed).toHaveTextContent("The agent on this machine could not be started");
      expect(failed).toHaveTextContent("sampan-agent enroll exited with 1: connection refused");
      expect(screen.getByRole("button", { name: /Use this machine as a device/ })).toBeEnabled();
    });

    it("a refused request shows the server's message", async () => {
      const message = "this server does not run agents for its projects (only `make run` does)";
      const server = localApi(local("none"), { available: false, state: "unavailable", device_id: null, error: null }, {
        status: 409,
        body: { error: { code: "local_agents_unavailable", message } },
      });
      renderRoutes(routes, "/projects/p1/devices", server.fetch);
      await openAddDevice();
      await userEvent.click(await screen.findByRole("button", { name: /Use this machine as a device/ }));
      expect(await screen.findByText(message)).toBeInTheDocument();
      // asked again: the server says it runs none, so the offer goes
      await waitFor(() => expect(screen.queryByTestId("local-device")).not.toBeInTheDocument());
      expect(screen.getByTestId("enroll-command")).toBeInTheDocument();
    });
  });
});
