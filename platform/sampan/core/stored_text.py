"""Text stored in English outside any request, read in the request's language.

A job's ``error`` is written by a worker, the reaper or a cancel, in English (the language of
the logs and of API clients that send no Accept-Language), and stored as written. The sentences
those writers use are the templates below (gettext msgids with named placeholders); a writer
stores ``TEMPLATE % params``, and :class:`StoredTextField` gives a stored text in the active
language by recognising its template. Text of another form (a worker's own exception message, an
older platform's sentence) is shown as stored. docs/decisions/api-messages.md.
"""

from __future__ import annotations

import re
from typing import Any

from django.utils.translation import gettext, gettext_noop
from rest_framework import serializers

CANCELLED_BY_USER = gettext_noop("cancelled by user")
WORKER_LOST = gettext_noop("worker lost: no heartbeat for %(seconds).0f s")
TRAINING_FAILED = gettext_noop("training failed: %(reason)s")
COMPRESSION_FAILED = gettext_noop("compression failed: %(reason)s")
STORING_MODEL_FAILED = gettext_noop("storing the trained model failed: %(reason)s")
REGISTERING_PICK_FAILED = gettext_noop("registering the pick failed: %(reason)s")
TRAINING_TIME_LIMIT = gettext_noop(
    "time limit exceeded: still training %(limit).0f s after the start (budget %(budget)g s; "
    "the limit is 1.5 x the budget + 120 s)")
COMPRESSION_TIME_LIMIT = gettext_noop(
    "time limit exceeded: still compressing %(limit).0f s after the start (budget %(budget)g s; "
    "the limit is 1.5 x the budget + 120 s)")

_PLACEHOLDER = re.compile(r"%\((\w+)\)[#0 +-]*\d*(?:\.\d+)?[a-zA-Z]|%%")


def _pattern(template: str) -> re.Pattern[str]:
    """The regular expression of the texts ``template % params`` makes (each placeholder any
    non-empty text, a worker's exception message included)."""
    parts, position = [], 0
    for match in _PLACEHOLDER.finditer(template):
        parts.append(re.escape(template[position:match.start()]))
        parts.append("%" if match.group(0) == "%%" else f"(?P<{match.group(1)}>.+?)")
        position = match.end()
    parts.append(re.escape(template[position:]))
    return re.compile("".join(parts), re.DOTALL)


def _fill(translation: str, values: dict[str, str]) -> str:
    """``translation`` with each placeholder replaced by the text it stood for in English."""
    def one(placeholder: re.Match[str]) -> str:
        if placeholder.group(0) == "%%":
            return "%"
        return values.get(placeholder.group(1), placeholder.group(0))

    return _PLACEHOLDER.sub(one, translation)


class Templates:
    """The sentences a kind of stored text is made from (gettext msgids, marked with
    ``gettext_noop`` where they are written), to read such a text back in the active language."""

    def __init__(self, *templates: str) -> None:
        self.templates = templates
        self._patterns = [(template, _pattern(template)) for template in templates]

    def read(self, text: str) -> str:
        """``text`` (as stored, English) in the active language when one of the templates made
        it; any other text unchanged."""
        for template, pattern in self._patterns:
            match = pattern.fullmatch(text)
            if match is not None:
                return _fill(gettext(template), match.groupdict())
        return text


#: what the platform stores as a job's ``error``
JOB_ERRORS = Templates(CANCELLED_BY_USER, WORKER_LOST, TRAINING_FAILED, COMPRESSION_FAILED,
                       STORING_MODEL_FAILED, REGISTERING_PICK_FAILED, TRAINING_TIME_LIMIT,
                       COMPRESSION_TIME_LIMIT)
TEMPLATES = JOB_ERRORS.templates


def stored_text_in_language(text: str) -> str:
    """A stored job error in the active language (:data:`JOB_ERRORS`)."""
    return JOB_ERRORS.read(text)


class StoredTextField(serializers.CharField):
    """A stored English text shown in the request's language: a job's error by default, or the
    texts of ``templates``."""

    def __init__(self, *, templates: Templates = JOB_ERRORS, **kwargs: Any) -> None:
        self.templates = templates
        super().__init__(**kwargs)

    def to_representation(self, value: Any) -> str:
        return self.templates.read(super().to_representation(value))


__all__ = ["CANCELLED_BY_USER", "COMPRESSION_FAILED", "COMPRESSION_TIME_LIMIT", "JOB_ERRORS",
           "REGISTERING_PICK_FAILED", "STORING_MODEL_FAILED", "StoredTextField", "TEMPLATES",
           "TRAINING_FAILED", "TRAINING_TIME_LIMIT", "Templates", "WORKER_LOST",
           "stored_text_in_language"]
