"""Authentication of a raw ASGI request exactly as the REST API does it (DRF's authentication
classes from ``REST_FRAMEWORK["DEFAULT_AUTHENTICATION_CLASSES"]``: a Bearer token, or the session
cookie with its CSRF token on writes), for the ASGI apps that answer before Django's views."""

from __future__ import annotations

import io
from importlib import import_module
from typing import Any

from django.conf import settings
from django.contrib import auth
from django.core.handlers.asgi import ASGIRequest
from django.utils.functional import SimpleLazyObject
from rest_framework import exceptions
from rest_framework.request import Request
from rest_framework.settings import api_settings

from sampan.core.errors import Forbidden, Unauthenticated


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
        raise Unauthenticated(str(exc.detail)) from None
    except exceptions.PermissionDenied as exc:
        raise Forbidden(str(exc.detail)) from None
    if user is None or not user.is_authenticated:
        raise Unauthenticated("authentication credentials were not provided (a Bearer token or "
                              "a signed-in session)")
    return user
