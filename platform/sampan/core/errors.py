"""One error hierarchy for the platform, mapped to HTTP once (STYLE.md, "Errors").

A service raises an ``ApplicationError`` subclass; ``exception_handler`` turns it (and DRF's own
errors) into JSON of the form ``{"error": {"code", "message", "field"?, "details"?}}``.
"""

from __future__ import annotations

from typing import Any

from django.core.exceptions import PermissionDenied as DjangoPermissionDenied
from django.http import Http404
from rest_framework import exceptions as drf_exceptions
from rest_framework.response import Response
from rest_framework.views import exception_handler as drf_exception_handler


class ApplicationError(Exception):
    """A domain error with an HTTP status, a stable code and a message shown to the user."""

    status_code = 400
    code = "invalid"

    def __init__(self, message: str, *, field: str | None = None,
                 details: dict[str, Any] | list[Any] | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.field = field
        self.details = details


class ValidationFailed(ApplicationError):
    status_code = 400
    code = "invalid"


class NotFound(ApplicationError):
    status_code = 404
    code = "not_found"


class Forbidden(ApplicationError):
    status_code = 403
    code = "forbidden"


class Conflict(ApplicationError):
    status_code = 409
    code = "conflict"


class Unauthenticated(ApplicationError):
    status_code = 401
    code = "unauthenticated"


def _payload(code: str, message: str, field: str | None = None, details: Any = None) -> dict[str, Any]:
    body: dict[str, Any] = {"code": code, "message": message}
    if field:
        body["field"] = field
    if details is not None:
        body["details"] = details
    return {"error": body}


def _first_message(detail: Any) -> tuple[str | None, str]:
    """The first (field, message) pair in a DRF ValidationError detail."""
    if isinstance(detail, dict):
        for key, value in detail.items():
            _, message = _first_message(value)
            return (None if key == "non_field_errors" else str(key)), message
    if isinstance(detail, list) and detail:
        return _first_message(detail[0])
    return None, str(detail)


def exception_handler(exc: Exception, context: dict[str, Any]) -> Response | None:
    """DRF exception handler: every error leaves as ``{"error": {...}}`` JSON."""
    if isinstance(exc, ApplicationError):
        return Response(_payload(exc.code, exc.message, exc.field, exc.details),
                        status=exc.status_code)
    if isinstance(exc, Http404):
        exc = drf_exceptions.NotFound()
    elif isinstance(exc, DjangoPermissionDenied):
        exc = drf_exceptions.PermissionDenied()
    response = drf_exception_handler(exc, context)
    if response is None:
        return None
    if isinstance(exc, drf_exceptions.ValidationError):
        field, message = _first_message(exc.detail)
        text = f"{field}: {message}" if field else message
        response.data = _payload("invalid", text, field, exc.detail)
    elif isinstance(exc, drf_exceptions.APIException):
        response.data = _payload(exc.default_code, str(exc.detail))
    return response


def not_found_view(request: Any, exception: Exception) -> Any:
    """Django's 404 handler: API paths answer in the API's JSON error format, others in HTML."""
    from django.http import JsonResponse
    from django.views.defaults import page_not_found

    if request.path.startswith("/api/"):
        return JsonResponse(_payload("not_found", f"no such API path: {request.path}"),
                            status=404)
    return page_not_found(request, exception)
