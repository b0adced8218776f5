"""Authentication of a raw ASGI request exactly as the REST API does it (DRF's authentication
classes from ``REST_FRAMEWORK["DEFAULT_AUTHENTICATION_CLASSES"]``: a Bearer token, or the session
cookie with its CSRF token on writes), for the ASGI apps that answer before Django's views.
Their messages are in the request's language (``sampan.core.language``)."""

from __future__ import annotations

import io
import json
from importlib import import_module
from typing import Any

from asgiref.sync import sync_to_async
from django.conf import settings
from django.contrib import auth
from django.core.handlers.asgi import ASGIRequest
from django.db import close_old_connections
from django.utils import translation
from django.utils.functional import SimpleLazyObject
from django.utils.translation import gettext as _
from rest_framework import exceptions
from rest_framework.request import Request
from rest_framework.settings import api_settings

from sampan.core.body_limit import header, send_json
from sampan.core.errors import (
    ApplicationError,
    AuthenticationFailed,
    Forbidden,
    Unauthenticated,
    error_payload,
)
from sampan.core.language import scope_language


def authenticate_scope(scope: Any) -> Any:
    """The active user who sent the request of ``scope`` (headers and cookies only; the body is
    not touched). Raises Unauthenticated (401) without valid credentials, Forbidden (403) for a
    session write without its CSRF token. Call from a sync thread (it reads the database)."""
    request = ASGIRequest(scope, io.BytesIO())
    engine = import_module(settings.SESSION_ENGINE)
    request.session = engine.SessionStore(request.COOKIES.get(settings.SESSION_COOKIE_NAME))
    request.user = SimpleLazyObject(lambda: auth.get_user(request))
    drf_request = Request(request, authenticators=[
        cls() for cls in api_settings.DEFAULT_AUTHENTICATION_CLASSES])
    try:
        user = drf_request.user
    except exceptions.AuthenticationFailed as exc:
        raise AuthenticationFailed(str(exc.detail)) from None
    except exceptions.PermissionDenied as exc:
        raise Forbidden(str(exc.detail)) from None
    if user is None or not user.is_authenticated:
        raise Unauthenticated(_("authentication credentials were not provided (a Bearer token "
                                "or a signed-in session)"))
    return user


def anonymous_body_limit() -> int:
    """``SAMPAN_ANONYMOUS_MAX_BYTES``: the largest user-API request body read before the request
    is authenticated, bytes."""
    return int(settings.SAMPAN_ANONYMOUS_MAX_BYTES)


class AuthenticateBeforeLargeBodies:
    """ASGI middleware: a request to the user API (``/api/v1/``) whose body is declared larger
    than ``SAMPAN_ANONYMOUS_MAX_BYTES`` (1 MiB by default), or streams without a declared
    length, is authenticated from its headers (:func:`authenticate_scope`) BEFORE its body is
    read. Without valid credentials it gets the 401 (or 403) JSON error at once and the
    connection is closed: Django's ASGI handler otherwise spools the whole body (up to the
    1 GiB multipart limit) to disk before any view checks who sent it, so an anonymous client
    could fill the disk. Resumable uploads (``/api/v1/uploads/``) authenticate in the tus app
    before reading, and the device API (``/api/device/v1/``) has its own credentials."""

    def __init__(self, app: Any, skip_prefixes: tuple[str, ...] = ()) -> None:
        self.app = app
        self.skip_prefixes = skip_prefixes

    def _needs_authentication(self, scope: Any) -> bool:
        path = scope.get("path", "")
        if not path.startswith("/api/v1/") or path.startswith(self.skip_prefixes):
            return False
        declared = header(scope, b"content-length")
        if declared is not None:
            return declared.strip().isdigit() and int(declared) > anonymous_body_limit()
        return header(scope, b"transfer-encoding") is not None

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http" and self._needs_authentication(scope):
            refused: tuple[int, bytes] | None = None
            with translation.override(scope_language(scope)):
                try:
                    await in_db_thread(authenticate_scope)(scope)
                except ApplicationError as exc:
                    message = (_("%(reason)s: a request body of more than %(limit)d bytes is "
                                 "read only from a signed-in user")
                               % {"reason": exc.message, "limit": anonymous_body_limit()})
                    refused = exc.status_code, json.dumps(error_payload(
                        exc.code, message, exc.field, exc.details)).encode()
            if refused is not None:
                await send_json(send, *refused, close=True)
                return
        await self.app(scope, receive, send)


def in_db_thread(function: Any) -> Any:
    """``function`` as a coroutine run in Django's sync thread, with database connections
    handled as per request (closed when stale, before and after), for ASGI code."""
    def call(*args: Any, **kwargs: Any) -> Any:
        close_old_connections()
        try:
            return function(*args, **kwargs)
        finally:
            close_old_connections()
    return sync_to_async(call, thread_sensitive=True)
