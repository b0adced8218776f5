import { afterEach, describe, expect, it, vi } from "vitest";

import { createApiClient } from "../client";
import { ApiError, apiErrorFrom, NETWORK_ERROR, UNEXPECTED_RESPONSE, unwrap } from "../errors";
import { setLanguage } from "../../i18n";

function jsonResponse(status: number, body: unknown): Response {
  return new Response(JSON.stringify(body), { status, headers: { "Content-Type": "application/json" } });
}

/** A client whose requests land in `seen`, each answered 200 []. */
function recordingClient(seen: Request[]) {
  return createApiClient({
    baseUrl: "http://sampan.test",
    fetch: async (input) => {
      seen.push(input as Request);
      return jsonResponse(200, []);
    },
  });
}

afterEach(() => {
  document.cookie = "csrftoken=; expires=Thu, 01 Jan 1970 00:00:00 GMT; path=/";
});

describe("apiErrorFrom", () => {
  it("keeps the server's code, message and field", () => {
    const error = apiErrorFrom(400, { error: { code: "invalid", message: "name is taken", field: "name" } });
    expect(error).toBeInstanceOf(ApiError);
    expect(error.status).toBe(400);
    expect(error.code).toBe("invalid");
    expect(error.message).toBe("name is taken");
    expect(error.field).toBe("name");
  });

  it("describes a body that is not the platform's error shape", () => {
    const error = apiErrorFrom(502, "<html>Bad gateway</html>", "Bad Gateway");
    expect(error.code).toBe(UNEXPECTED_RESPONSE);
    expect(error.message).toBe("HTTP 502 Bad Gateway"); // no HTML in a message a person reads
    expect(apiErrorFrom(500, "database is locked").message).toBe("HTTP 500: database is locked");
  });
});

describe("the API client", () => {
  it("throws the server's error from unwrap", async () => {
    const fetch = vi.fn(async () =>
      jsonResponse(400, { error: { code: "invalid", message: "no user named 'zed'", field: "username" } }),
    );
    const client = createApiClient({ baseUrl: "http://sampan.test", fetch });

    const result = await client.POST("/api/v1/projects/{project_id}/members/", {
      params: { path: { project_id: "p1" } },
      body: { username: "zed", role: "viewer" },
    });

    expect(() => unwrap(result)).toThrowError(
      new ApiError(400, { code: "invalid", message: "no user named 'zed'", field: "username" }),
    );
  });

  it("returns the data of a success", async () => {
    const project = { id: "p1", name: "Digits", description: "", created_at: "2026-11-29T12:00:00Z" };
    const client = createApiClient({ baseUrl: "http://sampan.test", fetch: async () => jsonResponse(200, [project]) });

    expect(unwrap(await client.GET("/api/v1/projects/"))).toEqual([project]);
  });

  it("turns a failed connection into a network ApiError", async () => {
    const client = createApiClient({
      baseUrl: "http://sampan.test",
      fetch: async () => {
        throw new TypeError("Failed to fetch");
      },
    });

    await expect(client.GET("/api/v1/projects/")).rejects.toMatchObject({
      name: "ApiError",
      code: NETWORK_ERROR,
      status: 0,
      message: "Failed to fetch",
    });
  });

  it("sends the csrftoken cookie as X-CSRFToken on writes only", async () => {
    document.cookie = "csrftoken=abc123; path=/";
    const seen: Request[] = [];
    const client = recordingClient(seen);

    await client.GET("/api/v1/projects/");
    await client.POST("/api/v1/projects/", { body: { name: "P" } });

    expect(seen[0]?.headers.get("X-CSRFToken")).toBeNull();
    expect(seen[1]?.headers.get("X-CSRFToken")).toBe("abc123");
  });

  it("asks for the console's language, and follows a switch", async () => {
    const seen: Request[] = [];
    const client = recordingClient(seen);
    try {
      await setLanguage("zh-CN");
      await client.GET("/api/v1/projects/");
      await setLanguage("en");
      await client.POST("/api/v1/projects/", { body: { name: "P" } });
    } finally {
      await setLanguage("en");
    }

    expect(seen.map((request) => request.headers.get("Accept-Language"))).toEqual(["zh-CN", "en"]);
  });
});
