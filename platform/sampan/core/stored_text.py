"""Text stored in English outside any request, read in the request's language.

A job's ``error`` is written by a worker, the reaper or a cancel, in English (the language of
the logs and of API clients that send no Accept-Language), and stored as written. The sentences
those writers use are the templates below (gettext msgids with named placeholders); a writer
stores ``TEMPLATE % params``, and :class:`StoredTextField` gives a stored text in the active
language by recognising its template. Text of another form (a worker's own exception message, an
older platform's sentence) is shown as stored. docs/decisions/api-messages.md.

The apps read their own stored texts the same way (an import's report, a version's flags, a
rollback's reason, a compression job's pick: ``sampan.datasets.report_texts``,
``sampan.fleet.stored_texts``, ``sampan.compression.stored_texts``), with :class:`Templates`
(sentences, sentences inside sentences, optional parts) and :class:`Joined` (a list of them
joined by "; "); a placeholder stands for any text, or for a number where it formats one.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping
from typing import Any, Protocol

from django.utils.translation import get_language, gettext, gettext_noop
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

_PLACEHOLDER = re.compile(r"%\((\w+)\)[#0 +-]*\d*(?:\.\d+)?([a-zA-Z])|%%")
#: what a number placeholder (``%(n)d``, ``%(x).1f``, ``%(x)g``) makes: a number, so that it
#: never takes the words around it
_NUMBER = r"[-+]?(?:(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?|inf|nan)"
_NUMBER_TYPES = frozenset("diufFeEgG")


class Reader(Protocol):
    """What reads a kind of stored text: :class:`Templates` and :class:`Joined`."""

    @property
    def shape(self) -> str:
        """A regular expression (no named groups) of every text it reads."""

    def match(self, text: str) -> str | None:
        """``text`` in the active language, or None when it cannot read it."""


def _pattern(template: str, inner: Mapping[str, Reader], *, capture: bool) -> str:
    """The regular expression of the texts ``template % params`` makes: a placeholder of
    ``inner`` is a text its reader reads, any other any non-empty text (a worker's exception
    message included). ``capture``: each placeholder is a named group."""
    parts, position, seen = [], 0, set()
    for match in _PLACEHOLDER.finditer(template):
        parts.append(re.escape(template[position:match.start()]))
        position = match.end()
        if match.group(0) == "%%":
            parts.append("%")
            continue
        name = match.group(1)
        shape = (inner[name].shape if name in inner
                 else _NUMBER if match.group(2) in _NUMBER_TYPES else ".+?")
        if not capture:
            parts.append(f"(?:{shape})")
        elif name in seen:  # the same value again (``%(small)r ... %(small)r``)
            parts.append(f"(?P={name})")
        else:
            parts.append(f"(?P<{name}>{shape})")
            seen.add(name)
    parts.append(re.escape(template[position:]))
    return "".join(parts)


def _fill(translation: str, values: Mapping[str, str]) -> str:
    """``translation`` with each placeholder replaced by the text it stood for."""
    def one(placeholder: re.Match[str]) -> str:
        if placeholder.group(0) == "%%":
            return "%"
        return values.get(placeholder.group(1), placeholder.group(0))

    return _PLACEHOLDER.sub(one, translation)


def _english() -> bool:
    """Whether the active language is English, the language texts are stored in (reading
    them is then the identity: every template is its own translation)."""
    language = get_language()
    return language is None or language.split("-")[0].lower() == "en"


class Templates:
    """The sentences a kind of stored text is made from (gettext msgids, marked with
    ``gettext_noop`` where they are written), to read such a text back in the active language.

    An item may also be another reader (a :class:`Templates` or :class:`Joined`): its texts are
    read by it. ``inner`` names the reader of a placeholder's value (a sentence made of other
    sentences: "%(problem)s; its %(boxes)d box(es) were not imported"); the template then
    matches only where that reader reads the value, which it gives in the active language too.
    ``""`` as an item reads the empty text (an optional part of a sentence); ``other=True``
    reads any other non-empty text as it is (a name, a person's own words). The first item
    that reads a text wins: put the longer sentences first.
    """

    def __init__(self, *items: str | Reader, inner: Mapping[str, Reader] | None = None,
                 other: bool = False) -> None:
        self.inner: dict[str, Reader] = dict(inner or {})
        self.items = items
        self.other = other
        self.templates = tuple(item for item in items if isinstance(item, str))
        self._compiled: list[tuple[str, re.Pattern[str]] | Reader] = [
            (item, re.compile(_pattern(item, self.inner, capture=True), re.DOTALL))
            if isinstance(item, str) else item for item in items]
        self._shape: str | None = None
        self._parse = functools.lru_cache(maxsize=4096)(self._parse_uncached)

    @property
    def shape(self) -> str:
        if self._shape is None:
            alternatives = [_pattern(item, self.inner, capture=False) if isinstance(item, str)
                            else item.shape for item in self.items]
            if self.other:
                alternatives.append(".+?")
            self._shape = "(?:" + "|".join(alternatives) + ")" if alternatives else "(?!)"
        return self._shape

    def _parse_uncached(self, text: str) -> tuple[str, dict[str, str]] | Reader | None:
        for entry in self._compiled:
            if isinstance(entry, tuple):
                found = entry[1].fullmatch(text)
                if found is not None:
                    return entry[0], found.groupdict()
            elif entry.match(text) is not None:
                return entry
        return None

    def match(self, text: str) -> str | None:
        """``text`` in the active language when this reader reads it, else None."""
        parsed = self._parse(text)
        if parsed is None:
            return text if self.other and text else None
        if not isinstance(parsed, tuple):
            return parsed.match(text)
        template, values = parsed
        if template == "":  # gettext("") is the catalogue's header
            return ""
        if _english():
            return text
        values = {name: (self.inner[name].match(value) or value) if name in self.inner
                  else value for name, value in values.items()}
        return _fill(gettext(template), values)

    def read(self, text: str) -> str:
        """``text`` (as stored, English) in the active language when one of the templates made
        it; any other text unchanged."""
        return read_text(text, self)


class Joined:
    """Texts of ``items`` (a reader) joined by ``separator`` ("; "), read part by part; the
    parts are joined again by ``joiner``, a msgid marked where the texts are written (its
    translation: the separator in the active language)."""

    def __init__(self, items: Reader, *, separator: str = "; ", joiner: str | None = None
                 ) -> None:
        self.items = items
        self.separator = separator
        self.joiner = joiner

    @property
    def shape(self) -> str:
        return f"(?:{self.items.shape})(?:{re.escape(self.separator)}(?:{self.items.shape}))*"

    def split(self, text: str) -> list[str] | None:
        """The parts of ``text`` as stored, each one its items read, or None. A part may hold
        the separator itself ("...; the device has 1.16.3"): the first split whose head is a
        part and whose rest splits wins, one part alone last (a placeholder of one part's
        sentence would take the next parts too)."""
        start = text.find(self.separator)
        while start > 0:
            if self.items.match(text[:start]) is not None:
                rest = self.split(text[start + len(self.separator):])
                if rest is not None:
                    return [text[:start], *rest]
            start = text.find(self.separator, start + 1)
        return [text] if text and self.items.match(text) is not None else None

    def match(self, text: str) -> str | None:
        parts = self.split(text)
        if parts is None:
            return None
        joiner = self.separator if self.joiner is None or _english() else gettext(self.joiner)
        return joiner.join(self.items.match(part) or part for part in parts)

    def read(self, text: str) -> str:
        """``text`` in the active language where its parts can be read; else as stored."""
        return read_text(text, self)


def read_entries(entries: Any, reader: Reader, key: str = "reason") -> Any:
    """A stored list of objects (an import report's ``[{"name", "reason"}]``) with the text at
    ``key`` of each in the active language; anything else as stored."""
    if not isinstance(entries, list) or _english():
        return entries
    return [{**entry, key: read_text(entry[key], reader)}
            if isinstance(entry, dict) and isinstance(entry.get(key), str) else entry
            for entry in entries]


def read_texts(texts: Any, reader: Reader) -> Any:
    """A stored list of texts (warnings) in the active language; anything else as stored."""
    if not isinstance(texts, list) or _english():
        return texts
    return [read_text(text, reader) if isinstance(text, str) else text for text in texts]


def read_text(text: str, reader: Reader) -> str:
    """``text`` read by ``reader`` in the active language; as stored when it cannot read it."""
    if not text or _english():
        return text
    translated = reader.match(text)
    return text if translated is None else translated


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

    def __init__(self, *, templates: Reader = JOB_ERRORS, **kwargs: Any) -> None:
        self.templates = templates
        super().__init__(**kwargs)

    def to_representation(self, value: Any) -> str:
        return read_text(super().to_representation(value), self.templates)


__all__ = ["CANCELLED_BY_USER", "COMPRESSION_FAILED", "COMPRESSION_TIME_LIMIT", "JOB_ERRORS",
           "Joined", "REGISTERING_PICK_FAILED", "Reader", "STORING_MODEL_FAILED",
           "StoredTextField", "TEMPLATES", "TRAINING_FAILED", "TRAINING_TIME_LIMIT", "Templates",
           "WORKER_LOST", "read_entries", "read_text", "read_texts",
           "stored_text_in_language"]
