"""Reads shared by every app."""

from __future__ import annotations

from typing import Any

from django.core.exceptions import ValidationError
from django.db.models import QuerySet
from django.utils.translation import gettext as _
from django.utils.translation import gettext_noop

from sampan.core.errors import NotFound
from sampan.core.language import phrase

#: what the apps look things up as (``what``), for the catalogue (``sampan.core.language.phrase``)
THINGS = (gettext_noop("alert rule"), gettext_noop("benchmark"), gettext_noop("dataset"),
          gettext_noop("dataset version"), gettext_noop("deployment"), gettext_noop("device"),
          gettext_noop("import job"), gettext_noop("model version"),
          gettext_noop("pre-labeling job"), gettext_noop("rollout"), gettext_noop("sample"))


def get_or_not_found(queryset: QuerySet[Any], what: str, **filters: Any) -> Any:
    """The first row of ``queryset.filter(**filters)``, or NotFound("<what> not found").

    A malformed id (not a UUID) is also "not found": ids are opaque to clients.
    """
    try:
        found = queryset.filter(**filters).first()
    except (ValueError, TypeError, ValidationError):
        found = None
    if found is None:
        raise NotFound(_("%(what)s not found") % {"what": phrase(what)})
    return found
