"""The starting-weights note of a training job, read in the request's language.

A worker writes the note outside any request, in English (``workers.ml.weights`` and
``workers.ml.classification`` / ``workers.ml.detection.train``), and the job stores it as
written. The API shows it through :func:`weights_note_text`, which recognises the worker's
sentences and gives them in the active language (docs/decisions/api-messages.md); a note of
another form (an older worker's) is shown as stored.
"""

from __future__ import annotations

import re

from django.utils.translation import gettext, gettext_noop
from rest_framework import serializers

# (the worker's sentence as a pattern, the same sentence as a msgid with its parts as placeholders)
_NOTES = [
    (re.compile(r"random initialisation \(pretrained weights not requested\)"),
     gettext_noop("random initialisation (pretrained weights not requested)")),
    (re.compile(r"(?P<architecture>\S+) ImageNet weights \((?P<weights>[^,()]+), "
                r"(?P<file>[^()]+)\)"),
     gettext_noop("%(architecture)s ImageNet weights (%(weights)s, %(file)s)")),
    (re.compile(r"ImageNet weights not found at (?P<path>.+?); trained from random "
                r"initialisation \(install them with: (?P<command>.+)\)", re.DOTALL),
     gettext_noop("ImageNet weights not found at %(path)s; trained from random initialisation "
                  "(install them with: %(command)s)")),
    (re.compile(r"ImageNet weights at (?P<path>.+?) could not be loaded \((?P<error>.+)\); "
                r"trained from random initialisation", re.DOTALL),
     gettext_noop("ImageNet weights at %(path)s could not be loaded (%(error)s); trained from "
                  "random initialisation")),
]


def weights_note_text(note: str) -> str:
    """``note`` (as a worker wrote it) in the active language; unknown notes unchanged."""
    for pattern, template in _NOTES:
        match = pattern.fullmatch(note)
        if match:
            return gettext(template) % match.groupdict()
    return note


class WeightsNoteField(serializers.CharField):
    """A stored weights note, shown in the request's language (:func:`weights_note_text`)."""

    def to_representation(self, value: object) -> str:
        return weights_note_text(super().to_representation(value))


__all__ = ["WeightsNoteField", "weights_note_text"]
