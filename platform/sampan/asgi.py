"""ASGI entry point: HTTP through the body limit and the authentication of large bodies
(``sampan.uploads.auth.AuthenticateBeforeLargeBodies``), the heartbeat fast path
(``sampan.fleet.fastpath``), then resumable uploads (``/api/v1/uploads/``, the tus app) or
Django; websockets through Channels.

Served by uvicorn: ``python -m uvicorn sampan.asgi:application`` with ``platform/`` on
PYTHONPATH (``sampan.devstack.stack.Stack.web_command``).
"""

import os

from django.core.asgi import get_asgi_application

from sampan.core.memory import fix_mmap_threshold

# before anything large is allocated: freed images leave the process (sampan.core.memory)
fix_mmap_threshold()
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "sampan.settings")
django_asgi_app = get_asgi_application()

from channels.auth import AuthMiddlewareStack  # noqa: E402
from channels.routing import ProtocolTypeRouter, URLRouter  # noqa: E402
from channels.security.websocket import AllowedHostsOriginValidator  # noqa: E402
from django.urls import path  # noqa: E402

from sampan.core.body_limit import BodyLimitMiddleware, Receive, Scope, Send  # noqa: E402
from sampan.core.consumers import JobProgressConsumer  # noqa: E402
from sampan.fleet.fastpath import HeartbeatFastPath  # noqa: E402
from sampan.uploads.auth import AuthenticateBeforeLargeBodies  # noqa: E402
from sampan.uploads.limits import request_body_limit  # noqa: E402
from sampan.uploads.tus import PREFIX as UPLOADS_PREFIX  # noqa: E402
from sampan.uploads.tus import application as tus_app  # noqa: E402


async def http_app(scope: Scope, receive: Receive, send: Send) -> None:
    """Resumable uploads stream in the tus app; everything else is Django's."""
    if scope["path"].startswith(UPLOADS_PREFIX) or scope["path"] == UPLOADS_PREFIX[:-1]:
        await tus_app(scope, receive, send)
    else:
        await django_asgi_app(scope, receive, send)


application = ProtocolTypeRouter({
    # the size limit first (a 413 before anything is read), then who sends a large body
    "http": BodyLimitMiddleware(
        AuthenticateBeforeLargeBodies(HeartbeatFastPath(http_app),
                                      skip_prefixes=(UPLOADS_PREFIX,)),
        request_body_limit),
    "websocket": AllowedHostsOriginValidator(AuthMiddlewareStack(URLRouter([
        path("ws/jobs/<str:kind>/<uuid:job_id>/", JobProgressConsumer.as_asgi()),
    ]))),
})
