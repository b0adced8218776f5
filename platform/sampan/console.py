"""The browser console (frontend/): Vite builds it into ``frontend/dist``; Django serves it.

``/assets/*`` and the other files of the build are served by WhiteNoise (``WHITENOISE_ROOT``).
Every other path outside the API, admin, websockets and static files is a route of the
single-page app, so it gets ``index.html`` and the app's router takes over in the browser.
"""

from __future__ import annotations

from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django.views.decorators.http import require_safe

# Matched against the path without its leading slash; ``(/|$)`` keeps ``/api`` and ``/admin``
# (no slash) out too, so APPEND_SLASH still redirects them.
# ``assets/`` is excluded too: a built file WhiteNoise does not know (the console was rebuilt
# while the server ran) must be a 404, not index.html served as JavaScript (a blank page)
CONSOLE_PATH_PATTERN = (r"^(?!(?:api|admin|ws|static|media|assets)(?:/|$)"
                        r"|(?:healthz|readyz|metrics)$).*$")

NOT_BUILT_HTML = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Sampan</title></head>
<body style="font-family: sans-serif; margin: 3em">
<h1>Sampan</h1>
<p>The browser console is not built yet. Run <code>make run</code> to build the console
(or <code>cd frontend &amp;&amp; npm ci &amp;&amp; npm run build</code>), then reload.</p>
<p>The REST API is up: <a href="/api/docs/">/api/docs/</a>.</p>
</body></html>
"""


@require_safe
def console_index(request: HttpRequest) -> HttpResponse:
    """``index.html`` of the built console, never cached (it names the hashed assets)."""
    index = settings.SAMPAN_CONSOLE_DIR / "index.html"
    try:
        body = index.read_bytes()
    except FileNotFoundError:
        response = HttpResponse(NOT_BUILT_HTML, status=503, content_type="text/html; charset=utf-8")
    else:
        response = HttpResponse(body, content_type="text/html; charset=utf-8")
    response["Cache-Control"] = "no-cache"
    return response
