"""Labeling keys of a dataset's classes: the keys a person chose, stored on ``ClassLabel.hotkey``.

The console gives every class a key (``frontend/src/pages/datasets/hotkeys.ts``): a chosen key
first; then a class named by one digit or letter gets that key ("3" -> 3, "A" -> a); the others
get the free keys in class order, 1-9, 0, then a-z. The server stores only the chosen keys ("" is
automatic) and checks them: one of 0-9 or a-z (stored lower-case), not one of the labeling
panels' own shortcuts, and not chosen for two classes of one dataset.
"""

from __future__ import annotations

import re
from typing import Any

from django.db import transaction
from django.utils.translation import gettext as _

from sampan.core.errors import ValidationFailed
from sampan.datasets.models import ClassLabel, Dataset

# Keys the labeling panels use themselves (no modifier): N / P next and previous sample. A class
# on one of them would never be reachable. Keep in step with RESERVED_KEYS in hotkeys.ts.
RESERVED_HOTKEYS = frozenset({"n", "p"})
HOTKEY_PATTERN = re.compile(r"[0-9a-z]")


def normalised_hotkey(raw: str, *, field: str) -> str:
    """``raw`` as stored: "" (automatic) or one lower-case character of 0-9, a-z.

    Raises ValidationFailed naming ``field``: more than one character, another character, or a
    reserved key.
    """
    key = raw.strip().lower()
    if key == "":
        return ""
    if len(key) != 1 or not HOTKEY_PATTERN.fullmatch(key):
        raise ValidationFailed(_("%(field)s: a key is one character, 0-9 or a-z (or empty for "
                                 "the automatic key); got %(key)r")
                               % {"field": field, "key": raw}, field=field)
    if key in RESERVED_HOTKEYS:
        raise ValidationFailed(_("%(field)s: %(key)r is a labeling shortcut (N / P: next and "
                                 "previous sample); choose another key")
                               % {"field": field, "key": key}, field=field)
    return key


@transaction.atomic
def class_label_hotkeys_set(*, dataset: Dataset, hotkeys: list[dict[str, Any]]) -> list[ClassLabel]:
    """Set the keys of some classes of ``dataset``; the classes not named keep theirs.

    ``hotkeys``: ``[{"class_label_id", "hotkey"}]``, "" makes a class's key automatic again. All
    or nothing; two classes may swap keys in one call. Returns every class of the dataset in
    position order.

    Raises ValidationFailed naming the entry (``hotkeys[i].class_label_id`` for a class not in
    the dataset or named twice, ``hotkeys[i].hotkey`` for a bad, reserved or taken key).
    """
    classes = {str(c.pk): c for c in
               ClassLabel.objects.select_for_update().filter(dataset=dataset)}
    wanted: dict[str, str] = {}
    for index, entry in enumerate(hotkeys):
        class_id = str(entry["class_label_id"])
        if class_id not in classes:
            raise ValidationFailed(_("hotkeys[%(index)s].class_label_id: no class label with id "
                                     "%(id)s in this dataset") % {"index": index, "id": class_id},
                                   field=f"hotkeys[{index}].class_label_id")
        if class_id in wanted:
            raise ValidationFailed(_("hotkeys[%(index)s].class_label_id: class %(name)r is named "
                                     "twice") % {"index": index, "name": classes[class_id].name},
                                   field=f"hotkeys[{index}].class_label_id")
        wanted[class_id] = normalised_hotkey(entry["hotkey"], field=f"hotkeys[{index}].hotkey")
    # a key is taken by a class this request leaves alone, or by an earlier entry of it
    taken = {c.hotkey: c for class_id, c in classes.items() if class_id not in wanted and c.hotkey}
    for index, (class_id, key) in enumerate(wanted.items()):
        if key == "":
            continue
        if key in taken:
            raise ValidationFailed(
                _("hotkeys[%(index)s].hotkey: key %(key)r is already the key of class %(name)r")
                % {"index": index, "key": key, "name": taken[key].name},
                field=f"hotkeys[{index}].hotkey")
        taken[key] = classes[class_id]
    # free the keys first: a swap would otherwise meet the unique constraint half-way
    ClassLabel.objects.filter(pk__in=list(wanted)).update(hotkey="")
    for class_id, key in wanted.items():
        if key:
            ClassLabel.objects.filter(pk=class_id).update(hotkey=key)
    return list(ClassLabel.objects.filter(dataset=dataset).order_by("position"))
