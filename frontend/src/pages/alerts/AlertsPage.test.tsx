import { screen, waitFor, within } from "@testing-library/react";
import userEvent from "@testing-library/user-event";
import { describe, expect, it } from "vitest";

import { json, renderRoutes } from "../../test/render";
import { AlertsPage } from "./AlertsPage";

const routes = [{ path: "/projects/:projectId/alerts", element: <AlertsPage /> }];

const rule = {
  id: "r1", name: "slow line 3", kind: "p95_latency_ms", threshold: 50, window_minutes: 5, tag: "line-3",
  webhook_url: "https://hooks.example.org/x", emails: ["ops@example.org"], enabled: true, created_at: "2026-12-01T00:00:00Z",
};
const fired = {
  id: "a1", rule_id: "r1", rule_name: "slow line 3", device_id: "d1", device_name: "gate", state: "firing", value: 80,
  message: "gate: p95 latency 80.0 ms (rule: 50 ms)", started_at: "2026-12-01T10:00:00Z", resolved_at: null, notified: {},
};

function api(posted: unknown[]) {
  const rules = [rule];
  return async (request: Request) => {
    const path = new URL(request.url).pathname;
    if (request.method === "POST" && path.endsWith("/alert-rules/")) {
      const body = (await request.json()) as Record<string, unknown>;
      posted.push(body);
      rules.push({ ...rule, ...body, id: "r2" } as typeof rule);
      return json(201, rules[rules.length - 1]);
    }
    if (path.endsWith("/alert-rules/")) return json(200, rules);
    if (path.endsWith("/alerts/")) return json(200, [fired]);
    return json(404, { error: { code: "not_found", message: path } });
  };
}

describe("AlertsPage", () => {
  it("lists rules and fired alerts", async () => {
    renderRoutes(routes, "/projects/p1/alerts", api([]) as unknown as typeof globalThis.fetch);
    const table = await screen.findByTestId("alert-rules");
    const row = (await within(table).findByText("slow line 3")).closest("tr") as HTMLElement;
    expect(within(row).getByText("p95 latency")).toBeInTheDocument();
    expect(within(row).getByText("50 ms")).toBeInTheDocument();
    expect(within(row).getByText("line-3")).toBeInTheDocument();
    expect(within(row).getByText("Webhook, ops@example.org")).toBeInTheDocument();
    const alerts = await screen.findByTestId("alerts");
    await waitFor(() => expect(alerts).toHaveTextContent("gate: p95 latency 80.0 ms (rule: 50 ms)"));
    expect(within(alerts).getByText("firing")).toBeInTheDocument();
  });

  it("adds an error-rate rule with its window", async () => {
    const posted: unknown[] = [];
    renderRoutes(routes, "/projects/p1/alerts", api(posted) as unknown as typeof globalThis.fetch);
    await within(await screen.findByTestId("alert-rules")).findByText("slow line 3");
    await userEvent.type(screen.getByLabelText("Name"), "errors");
    await userEvent.click(screen.getByLabelText("Condition"));
    await userEvent.click(await screen.findByTitle("Error rate"));
    const threshold = screen.getByLabelText("above (0-1)");
    await userEvent.clear(threshold);
    await userEvent.type(threshold, "0.2");
    await userEvent.click(screen.getByRole("button", { name: /Add rule/ }));
    await waitFor(() =>
      expect(posted).toEqual([{ name: "errors", kind: "error_rate", threshold: 0.2, window_minutes: 5, tag: "", webhook_url: "", emails: [] }]),
    );
    expect(await screen.findByText("20.0%")).toBeInTheDocument();
  }, 30_000);
});
