"""The language of a request's messages where Django's LocaleMiddleware has not chosen it: the
ASGI apps in front of Django (``sampan.core.body_limit``, ``sampan.uploads.auth``, the tus app
``sampan.uploads.tus``) and the error views and middleware that may answer outside it
(``sampan.core.error_views``: ``ApiErrorMiddleware`` comes before LocaleMiddleware).

The choice is LocaleMiddleware's (no language prefix in paths): the language cookie, else the
first language of ``Accept-Language`` that LANGUAGES offers (``zh-CN`` is ``zh-hans``), else
LANGUAGE_CODE. Use it as ``with translation.override(scope_language(scope)): ...``.

``phrase`` translates a phrase that a caller hands to a message of another module (what was not
found, what an archived project refuses): the module that says it marks the phrases it knows
with ``gettext_noop``; a phrase passed already translated, or unknown, is said as it is.
"""

from __future__ import annotations

from collections.abc import Iterable
from types import SimpleNamespace
from typing import Any

from django.http.cookie import parse_cookie
from django.utils import translation


def phrase(text: str) -> str:
    """``text`` in the active language when a catalogue has it, else ``text`` itself."""
    return translation.gettext(text) if text else text  # gettext("") is the catalogue's header


def request_language(request: Any) -> str:
    """The language of Django's ``request`` (as LocaleMiddleware chooses it)."""
    return translation.get_language_from_request(request)


def headers_language(headers: Iterable[tuple[bytes, bytes]]) -> str:
    """The language of a request with the ASGI ``headers`` (lower-case names, as bytes)."""
    accept: list[str] = []
    cookies: list[str] = []
    for key, value in headers:
        name = bytes(key).lower()
        if name == b"accept-language":
            accept.append(bytes(value).decode("latin-1"))
        elif name == b"cookie":
            cookies.append(bytes(value).decode("latin-1"))
    # what get_language_from_request reads of a request, joined as Django's ASGIRequest does
    request = SimpleNamespace(META={"HTTP_ACCEPT_LANGUAGE": ",".join(accept)},
                              COOKIES=parse_cookie("; ".join(cookies)))
    return translation.get_language_from_request(request)


def scope_language(scope: Any) -> str:
    """The language of the HTTP request of the ASGI ``scope``."""
    return headers_language(scope.get("headers", ()))


__all__ = ["headers_language", "phrase", "request_language", "scope_language"]
