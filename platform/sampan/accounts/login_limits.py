"""Failed sign-ins are counted and, past a limit, refused for a while: a password cannot be
guessed at the speed of the network (no limit existed: 12 wrong passwords in a row all answered
401 at once, seen in review).

Counted in Django's cache (Redis in production, so every web process shares the count; the
process's memory in dev): per username (``SAMPAN_LOGIN_MAX_FAILURES``, default 10) and per client
address (5x that), over ``SAMPAN_LOGIN_WINDOW_S`` (default 900 s) from the first failure. Past
either limit every attempt, right password or not, gets 429 ``too_many_attempts`` with
``Retry-After`` until the window ends; a successful sign-in clears its username's count. The
idea is OWASP's "Authentication Cheat Sheet" (account lockout / throttling).
"""

from __future__ import annotations

import hashlib
import time
from typing import Any

from django.conf import settings
from django.core.cache import cache
from django.utils.translation import gettext as _

from sampan.core.errors import ApplicationError


class TooManyAttempts(ApplicationError):
    status_code = 429
    code = "too_many_attempts"


def _keys(username: str, address: str) -> list[tuple[str, int]]:
    limit = int(settings.SAMPAN_LOGIN_MAX_FAILURES)
    user = hashlib.sha256(username.strip().lower().encode()).hexdigest()[:32]
    return [(f"login-fail:user:{user}", limit), (f"login-fail:addr:{address}", 5 * limit)]


def client_address(request: Any) -> str:
    """The address the request came from (``REMOTE_ADDR``; behind the TLS proxy uvicorn's
    ``--forwarded-allow-ips`` puts the client's there)."""
    return str(request.META.get("REMOTE_ADDR", "") or "unknown")


def check(username: str, address: str) -> None:
    """Raise TooManyAttempts (429, ``details.retry_after_s``) when either count is at its limit."""
    now = time.time()
    for key, limit in _keys(username, address):
        if int(cache.get(key) or 0) >= limit:
            retry = max(1, int(float(cache.get(f"{key}:until") or now + 1) - now))
            raise TooManyAttempts(
                _("too many failed sign-ins: try again in %(retry)d s") % {"retry": retry},
                field="username",
                details={"retry_after_s": retry})


def failed(username: str, address: str) -> None:
    """Count one failed sign-in for the username and the address. The count is the cache's
    atomic increment (Redis INCR in production): a read-then-write let concurrent guesses
    overwrite each other's count. The window starts at the first failure (``add`` writes only
    a key that is missing) and both keys expire with it."""
    window = float(settings.SAMPAN_LOGIN_WINDOW_S)
    for key, _limit in _keys(username, address):
        for _attempt in range(2):  # the window may end between add and incr
            cache.add(f"{key}:until", time.time() + window, timeout=max(1, int(window)))
            cache.add(key, 0, timeout=max(1, int(window)))
            try:
                cache.incr(key)
                break
            except ValueError:  # expired in between: start the window again
                continue


def succeeded(username: str, address: str) -> None:
    key = _keys(username, address)[0][0]
    cache.delete_many([key, f"{key}:until"])
