"""Reads shared by every app."""

from __future__ import annotations

from typing import Any

from django.core.exceptions import ValidationError
from django.db.models import QuerySet

from sampan.core.errors import NotFound


def get_or_not_found(queryset: QuerySet[Any], what: str, **filters: Any) -> Any:
    """The first row of ``queryset.filter(**filters)``, or NotFound("<what> not found").

    A malformed id (not a UUID) is also "not found": ids are opaque to clients.
    """
    try:
        found = queryset.filter(**filters).first()
    except (ValueError, TypeError, ValidationError):
        found = None
    if found is None:
        raise NotFound(f"{what} not found")
    return found
