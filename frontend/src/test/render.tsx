import { StyleProvider } from "@ant-design/cssinjs";
import { render } from "@testing-library/react";
import type { ReactElement, ReactNode } from "react";
import { createMemoryRouter, RouterProvider, type RouteObject } from "react-router";

import { createApiClient, setApiClient } from "../api/client";
import { createQueryClient, Providers } from "../App";

/**
 * antd's CSS-in-JS without its <style> elements: jsdom's getComputedStyle walks every rule of
 * every style sheet, and user-event and getByRole call it up the tree for each event and query,
 * so the injected antd rules made the suite 5-8x slower (a training page test 48 s -> 6 s).
 * "server" collects the styles in a cache, as for server rendering, and injects none.
 */
export function TestStyles({ children }: { children: ReactNode }) {
  return <StyleProvider mock="server">{children}</StyleProvider>;
}

/** Renders routes at `path` with the app's providers and an API answered by `fetch`. */
export function renderRoutes(routes: RouteObject[], path: string, fetch: typeof globalThis.fetch) {
  setApiClient(createApiClient({ baseUrl: "http://sampan.test", fetch }));
  const router = createMemoryRouter(routes, { initialEntries: [path] });
  const queryClient = createQueryClient();
  queryClient.setDefaultOptions({ queries: { ...queryClient.getDefaultOptions().queries, retry: false } });
  const view = render(
    <TestStyles>
      <Providers queryClient={queryClient}>
        <RouterProvider router={router} />
      </Providers>
    </TestStyles>,
  );
  return { ...view, router };
}

export function renderWithProviders(element: ReactElement) {
  return render(
    <TestStyles>
      <Providers queryClient={createQueryClient()}>{element}</Providers>
    </TestStyles>,
  );
}

export function json(status: number, body: unknown): Response {
  return new Response(JSON.stringify(body), { status, headers: { "Content-Type": "application/json" } });
}
