"""Errors outside DRF views: Django's 400/403/404/500 handlers and the outermost middleware.

Under ``/api/`` every error is the platform's JSON (``sampan.core.errors``), never one of Django's
HTML pages; other paths (the console, the admin) keep Django's pages. DRF views answer their own
errors through ``sampan.core.errors.exception_handler``; what reaches these handlers is raised
outside them: in a middleware (a Host outside SAMPAN_ALLOWED_HOSTS), while resolving an unknown
path, or an unexpected exception (500).

``ApiErrorMiddleware`` is the first entry of MIDDLEWARE. It gives every request an id (the
client's ``X-Request-ID`` when it is 1-64 characters of ``[A-Za-z0-9._-]``, else a new one),
returns it in the ``X-Request-ID`` header, and turns any non-JSON error answer under ``/api/``
into JSON: Django's DEBUG pages, which do not go through the handlers, and a middleware's own
HTML. A 500 answers ``{"error": {"code": "server_error", "message", "details": {"request_id"}}}``
and the traceback is logged (logger ``sampan.errors``) with the same id.

Messages are in the request's language (``sampan.core.language``): these answers may be made
outside LocaleMiddleware (the middleware comes first in MIDDLEWARE; a handler may answer an
error raised before LocaleMiddleware ran), so each one activates it itself.
"""

from __future__ import annotations

import logging
import re
import sys
import uuid
from collections.abc import Awaitable, Callable
from http import HTTPStatus
from typing import Any

from asgiref.sync import iscoroutinefunction, markcoroutinefunction
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.urls import is_valid_path
from django.utils import translation
from django.utils.translation import gettext as _
from django.utils.translation import gettext_noop
from django.views import defaults

from sampan.core.errors import error_payload, request_error
from sampan.core.language import request_language
from sampan.core.names import describe_character
from sampan.core.parsers import UNSTORABLE, json_path

log = logging.getLogger("sampan.errors")

API_PREFIX = "/api/"
REQUEST_ID_HEADER = "X-Request-ID"
_CLIENT_REQUEST_ID = re.compile(r"^[A-Za-z0-9._-]{1,64}$")
# codes for answers that carry no platform error of their own, by status
STATUS_CODES = {400: "bad_request", 401: "not_authenticated", 403: "forbidden", 404: "not_found",
                405: "method_not_allowed", 413: "too_large", 416: "range_not_satisfiable",
                500: "server_error"}
# the reason phrases of http.HTTPStatus that an error answer may carry, for the catalogue (the
# phrase is translated when the catalogue has it; RFC 9110's names since Python 3.13 included)
HTTP_PHRASES = (
    gettext_noop("Bad Request"), gettext_noop("Unauthorized"), gettext_noop("Payment Required"),
    gettext_noop("Forbidden"), gettext_noop("Not Found"), gettext_noop("Method Not Allowed"),
    gettext_noop("Not Acceptable"), gettext_noop("Request Timeout"), gettext_noop("Conflict"),
    gettext_noop("Gone"), gettext_noop("Length Required"), gettext_noop("Precondition Failed"),
    gettext_noop("Request Entity Too Large"), gettext_noop("Content Too Large"),
    gettext_noop("Unsupported Media Type"), gettext_noop("Requested Range Not Satisfiable"),
    gettext_noop("Range Not Satisfiable"), gettext_noop("Unprocessable Entity"),
    gettext_noop("Unprocessable Content"), gettext_noop("Locked"),
    gettext_noop("Precondition Required"), gettext_noop("Too Many Requests"),
    gettext_noop("Request Header Fields Too Large"))


def is_api(request: HttpRequest) -> bool:
    """Under ``/api/``, or ``/api`` itself (a client that left out the slash)."""
    return request.path.startswith(API_PREFIX) or request.path == API_PREFIX.rstrip("/")


def request_id(request: HttpRequest) -> str:
    """The id of ``request`` (set by ``ApiErrorMiddleware``; a new one if it did not run)."""
    rid = getattr(request, "request_id", None)
    if not rid:
        rid = uuid.uuid4().hex
        request.request_id = rid  # type: ignore[attr-defined]
    return str(rid)


def _json(status: int, body: dict[str, Any]) -> JsonResponse:
    return JsonResponse(body, status=status, json_dumps_params={"ensure_ascii": False})


def _in_language(request: HttpRequest) -> translation.override:
    """The request's language, active while an answer is made (see the module docstring)."""
    return translation.override(request_language(request))


def bad_request(request: HttpRequest, exception: Exception) -> HttpResponse:
    """handler400: a SuspiciousOperation or BadRequest raised outside a DRF view."""
    if not is_api(request):
        return defaults.bad_request(request, exception)
    with _in_language(request):
        status, body = (request_error(exception)
                        or (400, error_payload("bad_request", _("bad request"))))
    return _json(status, body)


def permission_denied(request: HttpRequest, exception: Exception) -> HttpResponse:
    """handler403."""
    if not is_api(request):
        return defaults.permission_denied(request, exception)
    with _in_language(request):
        message = str(exception) or _("permission denied")
    return _json(403, error_payload("forbidden", message))


def not_found(request: HttpRequest, exception: Exception) -> HttpResponse:
    """handler404: API paths answer in the API's JSON error format, others in HTML."""
    if not is_api(request):
        return defaults.page_not_found(request, exception)
    with _in_language(request):
        message = _("no such API path: %(path)s") % {"path": request.path}
    return _json(404, error_payload("not_found", message))


def server_error(request: HttpRequest) -> HttpResponse:
    """handler500: logs the traceback with the request id; API paths get the id in JSON."""
    rid = request_id(request)
    log.error("request %s: %s %s failed", rid, request.method, request.path,
              exc_info=sys.exc_info()[0] is not None)
    if not is_api(request):
        return defaults.server_error(request)
    with _in_language(request):
        return _json(500, _server_error_body(rid))


def _server_error_body(rid: str) -> dict[str, Any]:
    return error_payload("server_error", _("unexpected server error; the server log has the "
                                           "details under request id %(request_id)s")
                         % {"request_id": rid}, None, {"request_id": rid})


def _is_json(response: HttpResponse) -> bool:
    content_type = response.get("Content-Type", "").split(";")[0].strip().lower()
    return content_type == "application/json" or content_type.endswith("+json")


def _as_json(request: HttpRequest, response: HttpResponse) -> HttpResponse:
    """The JSON form of an error answer that is not JSON, keeping its status and headers."""
    status = response.status_code
    rid = request_id(request)
    if status >= 500:
        log.error("request %s: %s %s answered %s (details logged above by django.request)",
                  rid, request.method, request.path, status)
        with _in_language(request):
            body = _server_error_body(rid)
    else:
        try:
            phrase = HTTPStatus(status).phrase
        except ValueError:
            phrase = gettext_noop("error")
        with _in_language(request):
            body = error_payload(STATUS_CODES.get(status, "error"),
                                 _("%(phrase)s (%(path)s)") % {"phrase": _(phrase),
                                                              "path": request.path})
    converted = _json(status, body)
    for name, value in response.items():
        if name.lower() not in ("content-type", "content-length"):
            converted[name] = value
    converted.cookies = response.cookies
    return converted


def _needs_json(request: HttpRequest, response: HttpResponse) -> bool:
    from rest_framework.response import Response

    # a DRF Response rendered as HTML is the browsable API, asked for by the client
    return (response.status_code >= 400 and is_api(request) and not response.streaming
            and not isinstance(response, Response) and not _is_json(response))


class ApiErrorMiddleware:
    """Request ids and JSON errors under ``/api/`` (see the module docstring). Sync and async."""

    sync_capable = True
    async_capable = True

    def __init__(self, get_response: Callable[[HttpRequest], Any]) -> None:
        self.get_response = get_response
        self.is_async = iscoroutinefunction(get_response)
        if self.is_async:
            markcoroutinefunction(self)

    def _before(self, request: HttpRequest) -> None:
        offered = request.headers.get(REQUEST_ID_HEADER, "")
        request.request_id = (  # type: ignore[attr-defined]
            offered if _CLIENT_REQUEST_ID.match(offered) else uuid.uuid4().hex)

    def _after(self, request: HttpRequest, response: HttpResponse) -> HttpResponse:
        if _needs_json(request, response):
            response = _as_json(request, response)
        response.headers.setdefault(REQUEST_ID_HEADER, request_id(request))
        return response

    def _missing_slash(self, request: HttpRequest) -> HttpResponse | None:
        """A write to an API path without its trailing slash: 308 to the slashed path (the
        client repeats the same method and body there) with a JSON error naming it. Django's
        APPEND_SLASH answered 301 in HTML, which clients follow as a GET: a POST that creates a
        project came back 200 with the project list and created nothing (seen in review)."""
        path = request.path_info
        if (request.method in ("GET", "HEAD", "OPTIONS") or not is_api(request)
                or path.endswith("/") or is_valid_path(path)
                or not is_valid_path(path + "/")):
            return None
        slashed = request.get_full_path(force_append_slash=True)
        with _in_language(request):
            message = _("%(method)s %(path)s needs its trailing slash: send it to %(path)s/ "
                        "(every API path ends with /)") % {"method": request.method, "path": path}
            language = translation.get_language()
        response = _json(308, error_payload("trailing_slash", message, None,
                                            {"location": slashed}))
        response["Location"] = slashed
        response["Content-Language"] = language
        return response

    def _bad_query(self, request: HttpRequest) -> HttpResponse | None:
        """An API request whose query string holds a NUL (``%00``) or a lone surrogate in a
        parameter's name or value: 400 naming the parameter, as a JSON body's would be
        (``sampan.core.parsers``). Views read parameters straight into queries, and PostgreSQL
        refuses NUL in text: ``?action=a%00`` on the audit list answered 500 (seen in review)."""
        query = request.META.get("QUERY_STRING", "")
        if not is_api(request) or ("%00" not in query and "\x00" not in query):
            return None  # %00 is the way to a NUL; Django decodes no surrogate out of a query
        for name, values in request.GET.lists():
            for text in (name, *values):
                found = UNSTORABLE.search(text)
                if found is None:
                    continue
                field = json_path("", name)
                with _in_language(request):
                    message = _("%(field)s: contains %(character)s at position %(position)d") % {
                        "field": field, "character": describe_character(found.group()),
                        "position": found.start()}
                    language = translation.get_language()
                response = _json(400, error_payload("invalid", message, field))
                response["Content-Language"] = language
                return response
        return None

    def _early(self, request: HttpRequest) -> HttpResponse | None:
        return self._missing_slash(request) or self._bad_query(request)

    def __call__(self, request: HttpRequest) -> Any:
        if self.is_async:
            return self.__acall__(request)
        self._before(request)
        early = self._early(request)
        return self._after(request, early if early is not None else self.get_response(request))

    async def __acall__(self, request: HttpRequest) -> HttpResponse:
        self._before(request)
        early = self._early(request)
        if early is not None:
            return self._after(request, early)
        get_response: Callable[[HttpRequest], Awaitable[HttpResponse]] = self.get_response
        return self._after(request, await get_response(request))
