import { screen, waitFor, within } from "@testing-library/react";
import userEvent from "@testing-library/user-event";
import i18n from "i18next";
import { describe, expect, it } from "vitest";

import { json, renderRoutes } from "../test/render";
import { TokensPage } from "./TokensPage";

const routes = [{ path: "/tokens", element: <TokensPage /> }];

const ci = {
  id: "t1", name: "ci", prefix: "spn_abcdefgh", created_at: "2026-11-01T10:00:00Z",
  last_used_at: "2026-11-30T08:00:00Z", expires_at: "2099-01-01T00:00:00Z",
};
const old = { id: "t2", name: "laptop", prefix: "spn_zyxwvuts", created_at: "2026-01-01T10:00:00Z", last_used_at: null, expires_at: null };

type Event = { id: number; created_at: string; actor: string; action: string; target_type: string; target_id: string; details: Record<string, unknown> };

function event(id: number, action: string, details: Record<string, unknown>, target = "t1"): Event {
  const token = action.startsWith("token.");
  return { id, created_at: `2026-12-01T10:${String(id).padStart(2, "0")}:00Z`, actor: action === "login.failed" ? "" : "ana", action, target_type: token ? "ApiToken" : "User", target_id: token ? target : "7", details };
}

/** The account's events, oldest first (the API answers newest first). */
function history(): Event[] {
  return [
    event(1, "login.failed", { address: "203.0.113.9" }),
    event(2, "login.succeeded", { address: "198.51.100.4" }),
    event(3, "token.create", { name: "ci", prefix: "spn_abcdefgh", expires_at: "2099-01-01T00:00:00Z" }),
    ...Array.from({ length: 9 }, (_, i) => event(4 + i, "token.create", { name: `bot${i}`, prefix: `spn_bot${i}xxxx`, expires_at: null }, `b${i}`)),
  ];
}

function api(calls: { method: string; path: string; body?: unknown }[], events: Event[] = history()) {
  let tokens = [ci, old];
  return async (request: Request) => {
    const url = new URL(request.url);
    const path = url.pathname;
    if (path === "/api/v1/auth/me/audit/") {
      calls.push({ method: "GET", path: path + url.search });
      const page = Number(url.searchParams.get("page") ?? 1);
      const size = Number(url.searchParams.get("page_size") ?? 50);
      const newest = [...events].reverse();
      return json(200, { count: newest.length, next: null, previous: null, results: newest.slice((page - 1) * size, page * size) });
    }
    if (request.method === "POST" && path === "/api/v1/auth/tokens/") {
      const body = (await request.json()) as { name: string; expires_in_days: number | null };
      calls.push({ method: "POST", path, body });
      if (body.name === "bad") return json(400, { error: { code: "invalid", message: "name: not allowed", field: "name" } });
      const made = { id: "t3", name: body.name, prefix: "spn_newnewne", created_at: "2026-12-02T10:00:00Z", last_used_at: null, expires_at: null };
      tokens = [made, ...tokens];
      return json(201, { id: "t3", name: body.name, prefix: "spn_newnewne", expires_at: null, token: "spn_newnewnewSECRET" });
    }
    if (request.method === "DELETE") {
      calls.push({ method: "DELETE", path });
      const gone = tokens.find((t) => path.includes(t.id));
      tokens = tokens.filter((t) => !path.includes(t.id));
      if (gone) events.push(event(events.length + 1, "token.revoke", { name: gone.name, prefix: gone.prefix }, gone.id));
      return new Response(null, { status: 204 });
    }
    if (path === "/api/v1/auth/tokens/") return json(200, tokens);
    return json(404, { error: { code: "not_found", message: path } });
  };
}

describe("TokensPage", () => {
  it("lists the tokens with their expiry and last use", async () => {
    renderRoutes(routes, "/tokens", api([]) as unknown as typeof globalThis.fetch);
    const table = await screen.findByTestId("tokens");
    const row = (await within(table).findByText("laptop")).closest("tr") as HTMLElement;
    expect(within(row).getByText("Never used")).toBeInTheDocument();
    expect(within(row).getByText("Never")).toBeInTheDocument();
    expect(within(row).getByText("spn_zyxwvuts…")).toBeInTheDocument();
    const ciRow = within(table).getByText("ci").closest("tr") as HTMLElement;
    expect(within(ciRow).queryByText("Never used")).not.toBeInTheDocument();
  });

  it("creates a token, shows its secret once, and puts a server error on its field", async () => {
    const calls: { method: string; path: string; body?: unknown }[] = [];
    renderRoutes(routes, "/tokens", api(calls) as unknown as typeof globalThis.fetch);
    await within(await screen.findByTestId("tokens")).findByText("ci");

    await userEvent.type(screen.getByLabelText("Token name"), "bad");
    await userEvent.click(screen.getByRole("button", { name: /Create token/ }));
    expect(await screen.findByText("name: not allowed")).toBeInTheDocument();

    await userEvent.clear(screen.getByLabelText("Token name"));
    await userEvent.type(screen.getByLabelText("Token name"), "deploy");
    const days = screen.getByLabelText("Expires in (days)");
    await userEvent.clear(days);
    await userEvent.type(days, "30");
    await userEvent.click(screen.getByRole("button", { name: /Create token/ }));

    expect(await screen.findByTestId("token-secret")).toHaveTextContent("spn_newnewnewSECRET");
    expect(screen.getByText(/shown only once/)).toBeInTheDocument();
    expect(calls.filter((c) => c.method === "POST").map((c) => c.body)).toEqual([
      { name: "bad", expires_in_days: 90 },
      { name: "deploy", expires_in_days: 30 },
    ]);
    // the footer's Close (the header's × is labelled Close too)
    await userEvent.click(screen.getAllByRole("button", { name: "Close" }).at(-1) as HTMLElement);
    await waitFor(() => expect(screen.queryByTestId("token-secret")).not.toBeInTheDocument());
    expect(await within(screen.getByTestId("tokens")).findByText("deploy")).toBeInTheDocument();
  }, 60_000);

  it("revokes a token after a confirmation", async () => {
    const calls: { method: string; path: string }[] = [];
    renderRoutes(routes, "/tokens", api(calls) as unknown as typeof globalThis.fetch);
    const table = await screen.findByTestId("tokens");
    const row = (await within(table).findByText("ci")).closest("tr") as HTMLElement;

    await userEvent.click(within(row).getByRole("button", { name: "Revoke" }));
    expect(calls.filter((c) => c.method !== "GET")).toEqual([]);
    const popover = (await screen.findByText(/Revoke the token ci\?/)).closest(".ant-popover") as HTMLElement;
    await userEvent.click(within(popover).getByRole("button", { name: "Revoke" }));

    await waitFor(() => expect(calls.filter((c) => c.method !== "GET")).toEqual([{ method: "DELETE", path: "/api/v1/auth/tokens/t1/" }]));
    await waitFor(() => expect(within(table).queryByText("ci")).not.toBeInTheDocument());
  }, 60_000);

  it("shows the account's recent activity, translated, a page at a time, and the revoke in it", async () => {
    const calls: { method: string; path: string }[] = [];
    renderRoutes(routes, "/tokens", api(calls) as unknown as typeof globalThis.fetch);
    const activity = await screen.findByTestId("activity");
    expect(screen.getByRole("heading", { name: "Recent activity" })).toBeInTheDocument();
    // newest first, ten a page: the two sign-ins are on page 2
    const newest = (await within(activity).findByText("bot8")).closest("tr") as HTMLElement;
    expect(within(newest).getByText("API token created")).toBeInTheDocument();
    expect(within(newest).getByText("spn_bot8xxxx…")).toBeInTheDocument();
    expect(within(activity).getAllByRole("row")).toHaveLength(11); // header + 10
    expect(within(activity).queryByText("Failed sign-in")).not.toBeInTheDocument();
    expect(calls).toContainEqual({ method: "GET", path: "/api/v1/auth/me/audit/?page=1&page_size=10" });

    await userEvent.click(screen.getByTitle("2"));
    const failed = (await within(activity).findByText("Failed sign-in")).closest("tr") as HTMLElement;
    expect(within(failed).getByText("from 203.0.113.9")).toBeInTheDocument();
    const signedIn = within(activity).getByText("Signed in").closest("tr") as HTMLElement;
    expect(within(signedIn).getByText("from 198.51.100.4")).toBeInTheDocument();
    await userEvent.click(screen.getByTitle("1"));
    await within(activity).findByText("bot8");

    // a revoke shows up at the top without a reload
    const row = (await within(screen.getByTestId("tokens")).findByText("laptop")).closest("tr") as HTMLElement;
    await userEvent.click(within(row).getByRole("button", { name: "Revoke" }));
    const popover = (await screen.findByText(/Revoke the token laptop\?/)).closest(".ant-popover") as HTMLElement;
    await userEvent.click(within(popover).getByRole("button", { name: "Revoke" }));
    const revoked = (await within(activity).findByText("API token revoked")).closest("tr") as HTMLElement;
    expect(within(revoked).getByText("laptop")).toBeInTheDocument();
    expect(within(revoked).getByText("spn_zyxwvuts…")).toBeInTheDocument();
  }, 60_000);

  it("names the actions in Chinese", async () => {
    await i18n.changeLanguage("zh-CN");
    try {
      renderRoutes(routes, "/tokens", api([], history().slice(0, 3)) as unknown as typeof globalThis.fetch);
      const activity = await screen.findByTestId("activity");
      expect(await within(activity).findByText("创建 API 令牌")).toBeInTheDocument();
      expect(within(activity).getByText("登录失败")).toBeInTheDocument();
      expect(within(activity).getByText("来自 203.0.113.9")).toBeInTheDocument();
      expect(screen.getByRole("heading", { name: "最近活动" })).toBeInTheDocument();
    } finally {
      await i18n.changeLanguage("en");
    }
  }, 60_000);
});
