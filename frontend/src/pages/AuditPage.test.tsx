import { screen, waitFor, within } from "@testing-library/react";
import userEvent from "@testing-library/user-event";
import { describe, expect, it } from "vitest";

import { json, renderRoutes } from "../test/render";
import { AuditPage } from "./AuditPage";

const routes = [{ path: "/projects/:projectId/audit", element: <AuditPage /> }];

function event(id: number, action: string, actor = "ana") {
  return { id, created_at: "2026-12-01T10:00:00Z", actor, action, target_type: "Membership", target_id: `m${id}`, details: { username: `u${id}`, role: "viewer", previous_role: null } };
}

function api(queries: string[], role = "owner") {
  const events = Array.from({ length: 25 }, (_, i) => event(25 - i, i % 2 ? "member.set" : "training.create", i === 0 ? "" : "ana"));
  return async (request: Request) => {
    const url = new URL(request.url);
    if (url.pathname === "/api/v1/projects/") return json(200, [{ id: "p1", name: "P", description: "", created_at: "2026-11-01T00:00:00Z", role }]);
    if (url.pathname.endsWith("/audit/")) {
      queries.push(url.search);
      if (role !== "owner") return json(403, { error: { code: "forbidden", message: "this needs the owner role" } });
      const action = url.searchParams.get("action");
      const matching = events.filter((e) => !action || e.action === action);
      const page = Number(url.searchParams.get("page") ?? 1);
      const size = Number(url.searchParams.get("page_size") ?? 20);
      return json(200, { count: matching.length, next: null, previous: null, results: matching.slice((page - 1) * size, page * size) });
    }
    return json(404, { error: { code: "not_found", message: url.pathname } });
  };
}

describe("AuditPage", () => {
  it("shows time, actor, action and object a page at a time", async () => {
    const queries: string[] = [];
    renderRoutes(routes, "/projects/p1/audit", api(queries) as unknown as typeof globalThis.fetch);
    const table = await screen.findByTestId("audit-log");
    const first = (await within(table).findByText("Membership m25")).closest("tr") as HTMLElement;
    expect(within(first).getByText("system")).toBeInTheDocument();
    expect(within(first).getByText("Training started")).toBeInTheDocument();
    expect(within(first).getByText("username: u25, role: viewer")).toBeInTheDocument();
    expect(within(table).getAllByRole("row")).toHaveLength(21); // header + 20

    await userEvent.click(screen.getByTitle("2"));
    expect(await within(table).findByText("Membership m5")).toBeInTheDocument();
    expect(queries).toContain("?page=2&page_size=20");
  }, 60_000);

  it("filters by action", async () => {
    const queries: string[] = [];
    renderRoutes(routes, "/projects/p1/audit", api(queries) as unknown as typeof globalThis.fetch);
    const table = await screen.findByTestId("audit-log");
    await within(table).findByText("Membership m25");

    await userEvent.click(screen.getByLabelText("Filter by action"));
    await userEvent.click(await screen.findByTitle("Member added or role changed"));

    await waitFor(() => expect(queries).toContain("?page=1&page_size=20&action=member.set"));
    await waitFor(() => expect(within(table).queryByText("Training started")).not.toBeInTheDocument());
    expect(within(table).getAllByText("Member added or role changed").length).toBeGreaterThan(0);
  }, 60_000);

  it("tells a non-owner that only owners read the log", async () => {
    renderRoutes(routes, "/projects/p1/audit", api([], "editor") as unknown as typeof globalThis.fetch);
    expect(await screen.findByText("Only the project's owners can read its audit log.")).toBeInTheDocument();
  });
});
