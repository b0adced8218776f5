// The typed REST client. Types come from docs/openapi.yaml (`npm run gen:api` -> schema.d.ts),
// so a change in the API breaks `npm run build` (tsc) instead of the user.
import createClient, { type Middleware } from "openapi-fetch";

import { csrfHeaders } from "./csrf";
import { languageHeaders } from "./language";
import { networkError } from "./errors";
import type { components, paths } from "./schema";

export type Schemas = components["schemas"];
export type ApiClient = ReturnType<typeof createApiClient>;

const csrfMiddleware: Middleware = {
  onRequest({ request }) {
    for (const [name, value] of Object.entries({ ...csrfHeaders(request.method), ...languageHeaders() })) {
      request.headers.set(name, value);
    }
    return request;
  },
  onError({ error }) {
    // fetch itself failed (server down, connection reset): one error type for the UI
    return networkError(error);
  },
};

export function createApiClient(options: { baseUrl?: string; fetch?: typeof fetch } = {}) {
  const client = createClient<paths>({
    baseUrl: options.baseUrl ?? window.location.origin,
    credentials: "same-origin",
    ...(options.fetch ? { fetch: options.fetch } : {}),
  });
  client.use(csrfMiddleware);
  return client;
}

let current: ApiClient | null = null;

/** The client the app uses; tests replace it with `setApiClient`. */
export function api(): ApiClient {
  current ??= createApiClient();
  return current;
}

export function setApiClient(client: ApiClient | null): void {
  current = client;
}
