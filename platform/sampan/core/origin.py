"""The ``Origin`` check of endpoints that take no session yet (sign-in): a page of another site
must not sign a visitor's browser in (login CSRF: the visitor then works, unknowingly, in the
attacker's account, and their uploads land there).

The rule is Django's ``CsrfViewMiddleware`` Origin rule (Django 4.0+), which every other session
write passes: an ``Origin`` header, when the request has one, must be this server's own
(``scheme://host``) or match ``CSRF_TRUSTED_ORIGINS`` (``SAMPAN_CSRF_TRUSTED_ORIGINS``; a
``*.`` entry covers subdomains). Browsers send ``Origin`` on every cross-site POST, including
HTML form posts; a client without it (a script, ``curl``) is not a browser a page can drive.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

from django.conf import settings
from django.utils.http import is_same_domain
from django.utils.translation import gettext as _

from sampan.core.errors import Forbidden


def origin_allowed(request: Any) -> bool:
    """True when ``request`` (Django's) has no ``Origin`` header or one that names this server or
    a trusted origin; False for any other, including the opaque ``null``."""
    origin = request.META.get("HTTP_ORIGIN")
    if origin is None:
        return True
    if origin == f"{request.scheme}://{request.get_host()}":
        return True
    if origin in settings.CSRF_TRUSTED_ORIGINS:
        return True
    parsed = urlsplit(origin)
    if not parsed.scheme or not parsed.netloc:
        return False
    return any(urlsplit(trusted).scheme == parsed.scheme
               and is_same_domain(parsed.netloc, urlsplit(trusted).netloc.lstrip("*"))
               for trusted in settings.CSRF_TRUSTED_ORIGINS if "*" in trusted)


def require_same_origin(request: Any, action: str) -> None:
    """Raise Forbidden (403) naming the ``Origin`` when :func:`origin_allowed` refuses it.
    ``action`` (e.g. ``_("signing in")``) is said in the message: pass it translated."""
    if not origin_allowed(request):
        raise Forbidden(_("%(action)s from another site is refused: Origin %(origin)r is neither "
                          "this server nor in SAMPAN_CSRF_TRUSTED_ORIGINS")
                        % {"action": action, "origin": request.META.get("HTTP_ORIGIN")},
                        field="Origin")
