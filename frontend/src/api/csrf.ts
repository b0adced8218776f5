// Django's CSRF protection for session-authenticated writes: send the `csrftoken` cookie's
// value back in the X-CSRFToken header (https://docs.djangoproject.com/en/5.2/howto/csrf/).

export const CSRF_COOKIE = "csrftoken";
export const CSRF_HEADER = "X-CSRFToken";
const SAFE_METHODS = new Set(["GET", "HEAD", "OPTIONS", "TRACE"]);

export function readCookie(name: string, cookies: string = document.cookie): string | null {
  for (const part of cookies.split(";")) {
    const [key, ...rest] = part.trim().split("=");
    if (key === name) return decodeURIComponent(rest.join("="));
  }
  return null;
}

export function needsCsrf(method: string): boolean {
  return !SAFE_METHODS.has(method.toUpperCase());
}

/** The header to add to a request, or none (safe method, or no cookie yet). */
export function csrfHeaders(method: string): Record<string, string> {
  if (!needsCsrf(method)) return {};
  const token = readCookie(CSRF_COOKIE);
  return token ? { [CSRF_HEADER]: token } : {};
}
