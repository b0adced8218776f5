import { screen, waitFor } from "@testing-library/react";
import userEvent from "@testing-library/user-event";
import { describe, expect, it } from "vitest";

import { json, renderRoutes } from "../test/render";
import { LoginPage, safeNext } from "./LoginPage";

const routes = [
  { path: "/login", element: <LoginPage /> },
  { path: "/projects/:id/datasets", element: <p>datasets page</p> },
];

describe("LoginPage", () => {
  it("shows the server's message when sign-in fails", async () => {
    const fetch = async (request: Request | string | URL) => {
      const url = String(request instanceof Request ? request.url : request);
      if (url.endsWith("/auth/csrf/")) return json(200, { csrf_token: "t" });
      return json(401, { error: { code: "authentication_failed", message: "wrong username or password" } });
    };
    renderRoutes(routes, "/login", fetch as typeof globalThis.fetch);

    await userEvent.type(screen.getByLabelText("Username"), "admin");
    await userEvent.type(screen.getByLabelText("Password"), "nope");
    await userEvent.click(screen.getByRole("button", { name: "Sign in" }));

    expect(await screen.findByText("wrong username or password")).toBeInTheDocument();
  });

  it("puts a field error from the server on that field, then signs in and follows ?next", async () => {
    let attempts = 0;
    const fetch = async (request: Request | string | URL) => {
      const url = String(request instanceof Request ? request.url : request);
      if (url.endsWith("/auth/csrf/")) return json(200, { csrf_token: "t" });
      attempts += 1;
      return attempts === 1
        ? json(400, { error: { code: "invalid", message: "This field may not be blank.", field: "password" } })
        : json(200, { id: 1, username: "admin", email: "" });
    };
    const { router } = renderRoutes(routes, "/login?next=%2Fprojects%2Fp1%2Fdatasets", fetch as typeof globalThis.fetch);

    await userEvent.type(screen.getByLabelText("Username"), "admin");
    await userEvent.type(screen.getByLabelText("Password"), " ");
    await userEvent.click(screen.getByRole("button", { name: "Sign in" }));
    expect(await screen.findByText("This field may not be blank.")).toBeInTheDocument();

    await userEvent.click(screen.getByRole("button", { name: "Sign in" }));
    await waitFor(() => expect(router.state.location.pathname).toBe("/projects/p1/datasets"));
  });

  it("never follows ?next off the site", () => {
    expect(safeNext("//evil.example/x")).toBe("/projects");
    expect(safeNext("https://evil.example")).toBe("/projects");
    expect(safeNext("/projects/p1/members")).toBe("/projects/p1/members");
  });
});
