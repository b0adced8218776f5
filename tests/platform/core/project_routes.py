"""Every route under ``/api/v1/projects/<project_id>/`` read from the URL configuration, for the
generated authorization tests (``test_authorization.py``, ``test_foreign_ids.py``)."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from typing import Any

from django.urls import URLPattern, URLResolver, get_resolver

#: HEAD only where a view serves it itself (Django answers it with GET's view otherwise)
METHODS = ("get", "head", "post", "put", "patch", "delete")
#: ``<uuid:dataset_id>`` -> ("uuid", "dataset_id"); a converter-less ``<name>`` is a str
PARAMETER = re.compile(r"<(?:(\w+):)?(\w+)>")


def _routes(patterns: list[Any], prefix: str = "") -> Iterator[tuple[str, Any]]:
    for pattern in patterns:
        if isinstance(pattern, URLResolver):
            yield from _routes(pattern.url_patterns, prefix + str(pattern.pattern))
        elif isinstance(pattern, URLPattern):
            yield prefix + str(pattern.pattern), pattern.callback


#: (route, view callback), sorted by route
PROJECT_ROUTES = sorted((route, callback) for route, callback in
                        _routes(get_resolver().url_patterns) if "<uuid:project_id>" in route)


def route_url(route: str, fill: Callable[[str, str, str], str]) -> str:
    """The route's path with each parameter replaced by ``fill(converter, name, segment)``,
    ``segment`` being the path segment before the parameter (``datasets`` for
    ``datasets/<uuid:dataset_id>/``)."""
    def replace(match: re.Match[str]) -> str:
        before = route[:match.start()].rstrip("/").rsplit("/", 1)[-1]
        return fill(match.group(1) or "str", match.group(2), before)
    return "/" + PARAMETER.sub(replace, route).lstrip("^").rstrip("$")


def route_parameters(route: str) -> list[tuple[str, str]]:
    """(segment before the parameter, parameter name) for each parameter but ``project_id``."""
    found = []
    for match in PARAMETER.finditer(route):
        if match.group(2) != "project_id":
            found.append((route[:match.start()].rstrip("/").rsplit("/", 1)[-1], match.group(2)))
    return found


def view_methods(callback: Any) -> list[str]:
    """The HTTP methods (lower case) the route's view class serves, of ``METHODS``."""
    view = callback.view_class
    return [m for m in METHODS if hasattr(view, m)]
