// One error type for everything the API (or the network) can answer with.
// The platform's errors are `{"error": {"code", "message", "field"?, "details"?}}`
// (platform/sampan/core/errors.py); anything else (a proxy's HTML page, a dropped
// connection) still becomes an ApiError with a message a person can read.

export interface ApiErrorBody {
  code: string;
  message: string;
  field?: string;
  details?: unknown;
}

export class ApiError extends Error {
  readonly status: number;
  readonly code: string;
  readonly field: string | undefined;
  readonly details: unknown;

  constructor(status: number, body: ApiErrorBody) {
    super(body.message);
    this.name = "ApiError";
    this.status = status;
    this.code = body.code;
    this.field = body.field;
    this.details = body.details;
  }
}

/** Codes the console translates itself; the server's message is used for every other code. */
export const NETWORK_ERROR = "network_error";
export const UNEXPECTED_RESPONSE = "unexpected_response";

function isErrorBody(value: unknown): value is { error: ApiErrorBody } {
  if (typeof value !== "object" || value === null || !("error" in value)) return false;
  const inner = (value as { error: unknown }).error;
  return (
    typeof inner === "object" &&
    inner !== null &&
    typeof (inner as ApiErrorBody).message === "string" &&
    typeof (inner as ApiErrorBody).code === "string"
  );
}

/** The ApiError for a failed response whose body was already read (JSON value or text). */
export function apiErrorFrom(status: number, body: unknown, statusText = ""): ApiError {
  if (isErrorBody(body)) return new ApiError(status, body.error);
  const text = typeof body === "string" ? body.trim().slice(0, 200) : "";
  const isHtml = text.startsWith("<");
  return new ApiError(status, {
    code: UNEXPECTED_RESPONSE,
    message: `HTTP ${status}${statusText ? ` ${statusText}` : ""}${text && !isHtml ? `: ${text}` : ""}`,
  });
}

export function networkError(cause: unknown): ApiError {
  const detail = cause instanceof Error ? cause.message : String(cause);
  return new ApiError(0, { code: NETWORK_ERROR, message: detail });
}

/** Unwraps an openapi-fetch result: the data, or a thrown ApiError. */
export function unwrap<T>(result: { data?: T; error?: unknown; response: Response }): T {
  const { response } = result;
  if (!response.ok) throw apiErrorFrom(response.status, result.error, response.statusText);
  return result.data as T;
}

export function isApiError(value: unknown): value is ApiError {
  return value instanceof ApiError;
}
