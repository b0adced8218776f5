// The frame's account links: API tokens in the user menu; the audit log in the sider for owners only.
import { screen, waitFor } from "@testing-library/react";
import userEvent from "@testing-library/user-event";
import { describe, expect, it } from "vitest";

import { json, renderRoutes } from "../test/render";
import { AppLayout } from "./AppLayout";

function renderAs(role: "owner" | "editor") {
  const fetch = async (request: Request) => {
    const path = new URL(request.url).pathname;
    if (path === "/api/v1/projects/") return json(200, [{ id: "p1", name: "Shelves", description: "", created_at: "2026-11-29T00:00:00Z", role }]);
    if (path === "/api/v1/auth/me/") return json(200, { id: 1, username: "ana", email: "", is_staff: false });
    return json(404, { error: { code: "not_found", message: path } });
  };
  const routes = [
    { path: "/projects/:projectId", element: <AppLayout />, children: [{ path: "datasets", element: <p>datasets</p> }] },
    { path: "/tokens", element: <p>tokens page</p> },
  ];
  return renderRoutes(routes, "/projects/p1/datasets", fetch as unknown as typeof globalThis.fetch);
}

describe("AppLayout", () => {
  it("shows the audit log to owners and opens API tokens from the user menu", async () => {
    const { router } = renderAs("owner");
    expect(await screen.findByText("Audit log")).toBeInTheDocument();

    await userEvent.hover(await screen.findByRole("button", { name: /User menu|ana/ }));
    await userEvent.click(await screen.findByText("API tokens"));
    await waitFor(() => expect(router.state.location.pathname).toBe("/tokens"));
  }, 60_000);

  it("hides the audit log from an editor", async () => {
    renderAs("editor");
    expect(await screen.findByText("Members")).toBeInTheDocument();
    await screen.findByText("Shelves");
    expect(screen.queryByText("Audit log")).not.toBeInTheDocument();
  }, 60_000);
});
