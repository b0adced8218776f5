"""Entity tags of a sample's annotations, and the ``If-Match`` check that refuses a stale write.

Two people editing the boxes of one sample: each browser saves the whole box list it holds. The
second save, made from a copy read before the first one landed, would silently overwrite it. So
every sample carries an entity tag (``ETag`` on ``GET samples/<id>/``, the ``etag`` field of
every sample in the API) that changes with every write of its annotations, and a write that
sends ``If-Match`` with an older tag is refused with 412 (RFC 9110, sections 8.8.3 and 13.1.1).

The tag is a digest of the annotations themselves (id, kind, class, corners) and of the sample's
``no_objects`` mark (a background image checked by a person), not a counter
kept beside them: a write that goes around the services (an import, a format importer, the
admin) changes it too, with nothing to remember. Annotation ids are new on every write (the
box endpoint replaces all boxes), so the tag is a strong validator of the sample's
representation: the same tag means the same annotations, byte for byte.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from typing import Any

from django.utils.translation import gettext as _
from django.utils.translation import gettext_noop

from sampan.core.errors import PreconditionFailed

#: the messages of a stale write (English; ``check_if_match`` translates them when it raises)
BOXES_CHANGED = gettext_noop("these boxes were changed by someone else since you opened them; "
                             "reload to see them")
LABEL_CHANGED = gettext_noop("this sample's label was changed by someone else since you opened "
                             "it; reload to see it")


def annotations_etag(sample_id: Any, annotations: Iterable[Any], no_objects: bool = False) -> str:
    """The entity tag of a sample's annotations: 32 hex digits (sha256, truncated), unquoted.

    ``annotations``: the sample's Annotation rows, in any order (sorted by id here);
    ``no_objects``: the sample's mark "checked: no objects" (it changes the tag only when set,
    so the tags of every other sample stay what they were before the mark existed).
    """
    digest = hashlib.sha256(str(sample_id).encode())
    for a in sorted(annotations, key=lambda a: str(a.pk)):
        digest.update(f"\n{a.pk}|{a.kind}|{a.class_label_id}|{a.x1!r}|{a.y1!r}|{a.x2!r}|"
                      f"{a.y2!r}".encode())
    if no_objects:
        digest.update(b"\nno_objects")
    return digest.hexdigest()[:32]


def quoted(etag: str) -> str:
    """The ``ETag`` header's value: the tag in double quotes."""
    return f'"{etag}"'


def if_match_holds(header: str, current: str) -> bool:
    """Whether an ``If-Match`` header value lets a write on a resource tagged ``current`` go on.

    ``*`` matches any existing resource; otherwise one of the comma-separated tags must equal
    ``current`` by strong comparison (a weak ``W/"..."`` tag never matches, RFC 9110 8.8.3.2).
    An unquoted tag is taken as if quoted, for hand-written requests.
    """
    for candidate in (part.strip() for part in header.split(",")):
        if candidate == "*":
            return True
        if candidate.startswith("W/"):
            continue
        if candidate.strip('"') == current:
            return True
    return False


def check_if_match(header: str | None, current: str, message: str) -> None:
    """Raises PreconditionFailed (412, ``field: "If-Match"``, ``details: {"etag": current}``)
    when ``header`` is given and does not match ``current``, with ``message`` (``BOXES_CHANGED``,
    ``LABEL_CHANGED``) in the request's language. No header: the write goes on (scripts and
    older clients keep working)."""
    if header is None or header.strip() == "":
        return
    if not if_match_holds(header, current):
        raise PreconditionFailed(_(message), field="If-Match", details={"etag": current})
