"""One error hierarchy for the platform, mapped to HTTP once (STYLE.md, "Errors").

A service raises an ``ApplicationError`` subclass; ``exception_handler`` turns it (and DRF's own
errors, and the errors Django raises while reading a request: too many files or fields, a body
over a limit, a disallowed Host) into JSON of the form
``{"error": {"code", "message", "field"?, "details"?}}``. Errors that happen outside a DRF view
(in a middleware, an unknown path, an unexpected exception) reach ``sampan.core.error_views``,
which answers in the same format under ``/api/``. The codes are listed in docs/contracts.md.
"""

from __future__ import annotations

import logging
import re
from typing import Any

from django.conf import settings
from django.core.exceptions import (BadRequest, DisallowedHost, RequestDataTooBig,
                                    SuspiciousOperation, TooManyFieldsSent, TooManyFilesSent)
from django.core.exceptions import PermissionDenied as DjangoPermissionDenied
from django.http import Http404
from django.http.multipartparser import MultiPartParserError
from django.utils.translation import gettext as _
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


class Archived(Conflict):
    """409: the project or dataset is archived, and the request would start new work in it (an
    import, a label, a version, a training, compression or pre-labeling job). ``details``:
    ``archived`` (``project`` or ``dataset``), ``id``. Unarchiving it (``PATCH {"archived":
    false}``) undoes this."""

    code = "archived"


class DeleteBlocked(Conflict):
    """409: a delete refused while something still uses the object: ``details.blockers`` lists
    each (``kind``: ``deployment`` or a job kind; ``id``; ``state``; ``label``), and the message
    says what to stop first."""

    code = "delete_blocked"


class PreconditionFailed(ApplicationError):
    """412: a write sent with ``If-Match`` whose entity tag is no longer the current one: someone
    else changed the resource since the client read it (RFC 9110, section 13.1.1). ``details``:
    ``etag``, the current one."""

    status_code = 412
    code = "precondition_failed"


class TooLarge(ApplicationError):
    """413: a request body larger than the endpoint takes (``details``: ``limit_bytes``)."""

    status_code = 413
    code = "too_large"


class QuotaExceeded(ApplicationError):
    """429: the project holds as many of something as it may (``details``: ``limit``); what
    frees a place is said in the message."""

    status_code = 429
    code = "quota_exceeded"


class Unauthenticated(ApplicationError):
    """401: no credentials came with the request. Same code as DRF's NotAuthenticated."""

    status_code = 401
    code = "not_authenticated"


class AuthenticationFailed(Unauthenticated):
    """401: credentials came but are wrong, expired or used up (a password, an API token, an
    enrollment token). Same code as DRF's AuthenticationFailed."""

    code = "authentication_failed"


def error_payload(code: str, message: str, field: str | None = None,
                  details: Any = None) -> dict[str, Any]:
    """The platform's error body: ``{"error": {"code", "message", "field"?, "details"?}}``."""
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
            _field, message = _first_message(value)
            return (None if key == "non_field_errors" else str(key)), message
    if isinstance(detail, list) and detail:
        return _first_message(detail[0])
    return None, str(detail)


def _disallowed_host(exc: DisallowedHost) -> str:
    """Our sentence for Django's DisallowedHost (whose own names ALLOWED_HOSTS, in English):
    the host comes from Django's message, "Invalid HTTP_HOST header: '<host>'. ..."."""
    found = re.search(r"header: '(.*?)'\.", str(exc), re.DOTALL)
    if found is None:
        return _("the request's Host is not one of this platform's host names "
                 "(SAMPAN_ALLOWED_HOSTS)")
    if "RFC 1034/1035" in str(exc):
        return _("the Host %(host)r is not a valid host name (RFC 1034/1035)") % {
            "host": found.group(1)}
    return _("the Host %(host)r is not one of this platform's host names: add it to "
             "SAMPAN_ALLOWED_HOSTS") % {"host": found.group(1)}


def request_error(exc: Exception) -> tuple[int, dict[str, Any]] | None:
    """(status, error body) for an exception Django raises about the request itself, else None.

    Django's request limits are named in the message and in ``details`` (``setting``, ``limit``
    or ``limit_bytes``): DATA_UPLOAD_MAX_NUMBER_FILES (400 ``too_many_files``),
    DATA_UPLOAD_MAX_NUMBER_FIELDS (400 ``too_many_fields``), DATA_UPLOAD_MAX_MEMORY_SIZE (the
    request body apart from files; 413 ``too_large``, the code of the body-size limits). A Host
    outside SAMPAN_ALLOWED_HOSTS is 400 ``disallowed_host``; an unparsable multipart body and
    other malformed or suspicious requests are 400 ``bad_request``.
    """
    if isinstance(exc, TooManyFilesSent):
        limit = settings.DATA_UPLOAD_MAX_NUMBER_FILES
        return 400, error_payload(
            "too_many_files", _("too many files in one request: at most %(limit)d "
                                "(DATA_UPLOAD_MAX_NUMBER_FILES); send them in batches, or as "
                                "one zip") % {"limit": limit}, "files",
            {"setting": "DATA_UPLOAD_MAX_NUMBER_FILES", "limit": limit})
    if isinstance(exc, TooManyFieldsSent):
        limit = settings.DATA_UPLOAD_MAX_NUMBER_FIELDS
        return 400, error_payload(
            "too_many_fields", _("too many fields in one request: at most %(limit)d "
                                 "(DATA_UPLOAD_MAX_NUMBER_FIELDS)") % {"limit": limit}, None,
            {"setting": "DATA_UPLOAD_MAX_NUMBER_FIELDS", "limit": limit})
    if isinstance(exc, RequestDataTooBig):
        limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
        return 413, error_payload(
            "too_large", _("the request body apart from files is larger than %(limit)d bytes "
                           "(DATA_UPLOAD_MAX_MEMORY_SIZE)") % {"limit": limit}, None,
            {"setting": "DATA_UPLOAD_MAX_MEMORY_SIZE", "limit_bytes": limit})
    if isinstance(exc, DisallowedHost):
        return 400, error_payload("disallowed_host", _disallowed_host(exc), "Host")
    if isinstance(exc, MultiPartParserError):
        return 400, error_payload("bad_request", _("the multipart body cannot be parsed: "
                                                   "%(error)s") % {"error": exc})
    if isinstance(exc, (SuspiciousOperation, BadRequest)):
        return 400, error_payload("bad_request", str(exc) or _("bad request"))
    return None


def exception_handler(exc: Exception, context: dict[str, Any]) -> Response | None:
    """DRF exception handler: every error leaves as ``{"error": {...}}`` JSON.

    Returns None for an unexpected exception: Django's 500 handler
    (``sampan.core.error_views.server_error``) answers it and logs the traceback.
    """
    if isinstance(exc, ApplicationError):
        response = Response(error_payload(exc.code, exc.message, exc.field, exc.details),
                            status=exc.status_code)
        if isinstance(exc.details, dict) and "retry_after_s" in exc.details:
            response["Retry-After"] = str(exc.details["retry_after_s"])
        return response
    mapped = request_error(exc)
    if mapped is not None:
        request = getattr(context.get("request"), "_request", None)
        if request is not None and isinstance(exc, (RequestDataTooBig, TooManyFieldsSent,
                                                    TooManyFilesSent)):
            request._mark_post_parse_error()  # as Django does: the body is not parsed again
        if isinstance(exc, SuspiciousOperation):
            logging.getLogger(f"django.security.{type(exc).__name__}").warning("%s", exc)
        status, body = mapped
        return Response(body, status=status)
    if isinstance(exc, Http404):
        exc = drf_exceptions.NotFound()
    elif isinstance(exc, DjangoPermissionDenied):
        exc = drf_exceptions.PermissionDenied()
    response = drf_exception_handler(exc, context)
    if response is None:
        return None
    if isinstance(exc, drf_exceptions.ValidationError):
        field, message = _first_message(exc.detail)
        text = (_("%(field)s: %(reason)s") % {"field": field, "reason": message} if field
                else message)
        response.data = error_payload("invalid", text, field, exc.detail)
    elif isinstance(exc, drf_exceptions.APIException):
        response.data = error_payload(exc.default_code, str(exc.detail))
    return response
