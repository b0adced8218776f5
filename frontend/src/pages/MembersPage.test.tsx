import { screen, waitFor, within } from "@testing-library/react";
import userEvent from "@testing-library/user-event";
import { describe, expect, it } from "vitest";

import { json, renderRoutes } from "../test/render";
import { MembersPage } from "./MembersPage";

const routes = [{ path: "/projects/:projectId/members", element: <MembersPage /> }];

type Call = { path: string; body: Record<string, unknown> };

function api(calls: Call[], { staff = false, role = "owner", membersAnswered = Promise.resolve() } = {}) {
  const members = [{ id: "m1", username: "ana", role }];
  return async (request: Request) => {
    const path = new URL(request.url).pathname;
    if (path === "/api/v1/auth/me/") return json(200, { id: 1, username: "ana", email: "", is_staff: staff });
    if (request.method === "POST") {
      const body = (await request.json()) as Record<string, unknown>;
      calls.push({ path, body });
      if (path === "/api/v1/users/") {
        if (body.project_id) members.push({ id: `m${members.length + 1}`, username: body.username as string, role: body.role as string });
        return json(201, { id: 9, username: body.username, email: "", generated_password: body.password ? null : "OneTimePw-123456" });
      }
      if (body.username === "nobody")
        return json(400, { error: { code: "invalid", field: "username", message: "no user named 'nobody': check the spelling" } });
      const added = { id: `m${members.length + 1}`, username: (body.username as string) ?? "hana", role: body.role as string };
      if (body.email) added.username = "hana";
      members.push(added);
      return json(200, added);
    }
    if (path.endsWith("/members/")) {
      await membersAnswered;
      return json(200, members);
    }
    return json(404, { error: { code: "not_found", message: path } });
  };
}

describe("MembersPage", () => {
  it("invites by e-mail address", async () => {
    const calls: Call[] = [];
    renderRoutes(routes, "/projects/p1/members", api(calls) as unknown as typeof globalThis.fetch);
    await screen.findByRole("button", { name: /Invite/ });

    await userEvent.click(screen.getByLabelText("Invite by"));
    await userEvent.click(await screen.findByTitle("E-mail"));
    await userEvent.type(await screen.findByLabelText("E-mail address"), "hana@example.org");
    await userEvent.click(screen.getByRole("button", { name: /Invite/ }));

    await waitFor(() => expect(calls).toEqual([{ path: "/api/v1/projects/p1/members/", body: { email: "hana@example.org", role: "editor" } }]));
    expect(await screen.findByText("hana")).toBeInTheDocument();
  }, 60_000);

  it("shows an unknown user's error on the username field", async () => {
    const calls: Call[] = [];
    renderRoutes(routes, "/projects/p1/members", api(calls) as unknown as typeof globalThis.fetch);
    await userEvent.type(await screen.findByLabelText("Username"), "nobody");
    await userEvent.click(screen.getByRole("button", { name: /Invite/ }));

    expect(await screen.findByText("no user named 'nobody': check the spelling")).toBeInTheDocument();
    expect(calls[0]?.body).toEqual({ username: "nobody", role: "editor" });
  }, 60_000);

  it("lets an owner who is not staff create a user only into this project", async () => {
    const calls: Call[] = [];
    renderRoutes(routes, "/projects/p1/members", api(calls) as unknown as typeof globalThis.fetch);
    await userEvent.click(await screen.findByRole("button", { name: /Create user/ }));
    const dialog = await screen.findByRole("dialog");
    expect(within(dialog).getByLabelText("Add to this project as")).toBeChecked();
    expect(within(dialog).getByLabelText("Add to this project as")).toBeDisabled();
    await userEvent.type(within(dialog).getByLabelText("Username"), "erin");
    await userEvent.click(within(dialog).getByRole("button", { name: "Create user" }));
    await waitFor(() =>
      expect(calls).toEqual([
        { path: "/api/v1/users/", body: { username: "erin", email: "", password: "", project_id: "p1", role: "editor" } },
      ]),
    );
    expect(await screen.findByText("erin")).toBeInTheDocument();
  }, 60_000);

  it("offers no Create user to a viewer who is not staff", async () => {
    renderRoutes(routes, "/projects/p1/members", api([], { role: "viewer" }) as unknown as typeof globalThis.fetch);
    await screen.findByText("ana");
    expect(screen.queryByRole("button", { name: /Create user/ })).not.toBeInTheDocument();
  }, 60_000);

  it("lets staff create a user, shows the one-time password and adds the user", async () => {
    const calls: Call[] = [];
    renderRoutes(routes, "/projects/p1/members", api(calls, { staff: true }) as unknown as typeof globalThis.fetch);
    await userEvent.click(await screen.findByRole("button", { name: /Create user/ }));
    const dialog = await screen.findByRole("dialog");
    await userEvent.type(within(dialog).getByLabelText("Username"), "carol");
    await userEvent.click(within(dialog).getByRole("button", { name: "Create user" }));

    expect(await screen.findByTestId("generated-password")).toHaveTextContent("OneTimePw-123456");
    await waitFor(() =>
      expect(calls).toEqual([
        { path: "/api/v1/users/", body: { username: "carol", email: "", password: "", project_id: "p1", role: "editor" } },
      ]),
    );
    expect(await screen.findByText("carol")).toBeInTheDocument();
  }, 60_000);

  it("offers Create user only once the members say whether the user may also add it", async () => {
    // the user's own account loads first: before the fix the dialog then opened without its
    // "add to this project" box (an owner not known yet), and the new user was not added
    const calls: Call[] = [];
    let answer = () => {};
    const membersAnswered = new Promise<void>((resolve) => (answer = resolve));
    renderRoutes(routes, "/projects/p1/members", api(calls, { staff: true, membersAnswered }) as unknown as typeof globalThis.fetch);
    await screen.findByRole("heading", { name: "Members" });
    await new Promise((resolve) => setTimeout(resolve, 300)); // /auth/me/ answered meanwhile
    expect(screen.queryByRole("button", { name: /Create user/ })).not.toBeInTheDocument();

    answer();
    await userEvent.click(await screen.findByRole("button", { name: /Create user/ }));
    const dialog = await screen.findByRole("dialog");
    await userEvent.type(within(dialog).getByLabelText("Username"), "carol");
    await userEvent.click(within(dialog).getByRole("button", { name: "Create user" }));
    await waitFor(() => expect(calls.map((call) => call.body.project_id)).toEqual(["p1"]));
  }, 60_000);

  it("offers staff who are not owners to create a user but not to add it", async () => {
    const calls: Call[] = [];
    renderRoutes(routes, "/projects/p1/members", api(calls, { staff: true, role: "viewer" }) as unknown as typeof globalThis.fetch);
    await userEvent.click(await screen.findByRole("button", { name: /Create user/ }));
    const dialog = await screen.findByRole("dialog");
    expect(within(dialog).queryByLabelText("Add to this project as")).not.toBeInTheDocument();
    await userEvent.type(within(dialog).getByLabelText("Username"), "dan");
    await userEvent.type(within(dialog).getByLabelText("Password"), "plum orchard 1987");
    await userEvent.click(within(dialog).getByRole("button", { name: "Create user" }));

    expect(await screen.findByText("User dan created")).toBeInTheDocument();
    expect(screen.queryByTestId("generated-password")).not.toBeInTheDocument();
    expect(calls.map((c) => c.path)).toEqual(["/api/v1/users/"]);
  }, 60_000);
});
