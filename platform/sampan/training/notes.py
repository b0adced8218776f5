"""The starting-weights note of a training job, read in the request's language.

A worker writes the note outside any request, in English (``workers.ml.weights`` and
``workers.ml.classification`` / ``workers.ml.detection.train``, ``workers.ml.text.reasons``;
workers/ml does not import Django, so the sentences are repeated here as msgids), and the job
stores it as written. The API shows it through :data:`WEIGHTS_NOTES` (sampan.core.stored_text);
a note of another form (an older worker's) is shown as stored. A test makes the worker's notes
and reads them back.
"""

from __future__ import annotations

from typing import Any

from django.utils.translation import gettext_noop

from sampan.core.stored_text import StoredTextField, Templates

WEIGHTS_NOTES = Templates(
    gettext_noop("random initialisation (pretrained weights not requested)"),
    gettext_noop("%(architecture)s ImageNet weights (%(weights)s, %(file)s)"),
    gettext_noop("ImageNet weights not found at %(path)s; trained from random initialisation "
                 "(install them with: %(command)s)"),
    gettext_noop("ImageNet weights at %(path)s could not be loaded (%(error)s); trained from "
                 "random initialisation"),
    # a text job's, when the sentence encoder won (workers.ml.text.reasons)
    gettext_noop("%(encoder)s (sentence-transformers, Apache-2.0)"),
)


def weights_note_text(note: str) -> str:
    """``note`` (as a worker wrote it) in the active language; unknown notes unchanged."""
    return WEIGHTS_NOTES.read(note)


class WeightsNoteField(StoredTextField):
    """A stored weights note, shown in the request's language."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(templates=WEIGHTS_NOTES, **kwargs)


__all__ = ["WEIGHTS_NOTES", "WeightsNoteField", "weights_note_text"]
