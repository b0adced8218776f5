import { screen, waitFor, within } from "@testing-library/react";
import userEvent from "@testing-library/user-event";
import { describe, expect, it } from "vitest";

import { json, renderRoutes } from "../test/render";
import { TokensPage } from "./TokensPage";

const routes = [{ path: "/tokens", element: <TokensPage /> }];

const ci = {
  id: "t1", name: "ci", prefix: "spn_abcdefgh", created_at: "2026-11-01T10:00:00Z",
  last_used_at: "2026-11-30T08:00:00Z", expires_at: "2099-01-01T00:00:00Z",
};
const old = { id: "t2", name: "laptop", prefix: "spn_zyxwvuts", created_at: "2026-01-01T10:00:00Z", last_used_at: null, expires_at: null };

function api(calls: { method: string; path: string; body?: unknown }[]) {
  let tokens = [ci, old];
  return async (request: Request) => {
    const path = new URL(request.url).pathname;
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
      tokens = tokens.filter((t) => !path.includes(t.id));
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
    expect(calls).toEqual([]);
    const popover = (await screen.findByText(/Revoke the token ci\?/)).closest(".ant-popover") as HTMLElement;
    await userEvent.click(within(popover).getByRole("button", { name: "Revoke" }));

    await waitFor(() => expect(calls).toEqual([{ method: "DELETE", path: "/api/v1/auth/tokens/t1/" }]));
    await waitFor(() => expect(within(table).queryByText("ci")).not.toBeInTheDocument());
  }, 60_000);
});
