import { render } from "@testing-library/react";
import type { ReactElement } from "react";
import { createMemoryRouter, RouterProvider, type RouteObject } from "react-router";

import { createApiClient, setApiClient } from "../api/client";
import { createQueryClient, Providers } from "../App";

/** Renders routes at `path` with the app's providers and an API answered by `fetch`. */
export function renderRoutes(routes: RouteObject[], path: string, fetch: typeof globalThis.fetch) {
  setApiClient(createApiClient({ baseUrl: "http://sampan.test", fetch }));
  const router = createMemoryRouter(routes, { initialEntries: [path] });
  const queryClient = createQueryClient();
  queryClient.setDefaultOptions({ queries: { ...queryClient.getDefaultOptions().queries, retry: false } });
  const view = render(
    <Providers queryClient={queryClient}>
      <RouterProvider router={router} />
    </Providers>,
  );
  return { ...view, router };
}

export function renderWithProviders(element: ReactElement) {
  return render(<Providers queryClient={createQueryClient()}>{element}</Providers>);
}

export function json(status: number, body: unknown): Response {
  return new Response(JSON.stringify(body), { status, headers: { "Content-Type": "application/json" } });
}
