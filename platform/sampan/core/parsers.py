"""Request body parsers: DRF's, with a bound on what a body can make the parser do, and on
what a JSON document may hold before any view sees it."""

from __future__ import annotations

import re
from typing import Any

from django.utils.translation import gettext as _
from rest_framework import parsers
from rest_framework.exceptions import ParseError

from sampan.core.names import describe_character

#: The largest integer a JSON number holds exactly everywhere (2**53 - 1: IEEE 754 doubles, which
#: JavaScript and most JSON parsers use; RFC 8259, section 6). The console reads every number
#: as a double: a larger one would show rounded, or as Infinity.
MAX_JSON_INTEGER = 2**53 - 1


#: Characters of a key shown in a path or a message (a key may be megabytes long).
_KEY_CHARS = 40
#: A NUL or a lone surrogate: what no text column can store.
UNSTORABLE = re.compile("[\x00\ud800-\udfff]")


def _key(key: str) -> str:
    shown = key if len(key) <= _KEY_CHARS else key[:_KEY_CHARS] + "..."
    return shown if shown.isidentifier() or not shown else ascii(shown)


def json_path(path: str, key: object) -> str:
    if isinstance(key, int):
        return f"{path}[{key}]"
    return f"{path}.{_key(str(key))}" if path else _key(str(key))


def _shown(value: int) -> str:
    digits = str(value)
    return digits if len(digits) <= 24 else _("a %(count)d-digit integer") % {
        "count": len(digits.lstrip("-"))}


def json_document_problem(document: Any) -> tuple[str, str] | None:
    """``(path, message)`` for the first value of a parsed JSON document that no part of the
    platform may take, else None: a string (a key or a value) holding a NUL or a lone surrogate
    (JSON's ``"\\u0000"`` and ``"\\ud800"`` parse to them; a lone surrogate is not UTF-8 and
    PostgreSQL refuses NUL in text and jsonb), or an integer outside +-:data:`MAX_JSON_INTEGER`.
    ``path`` names the value (``metrics.detections_by_class``, ``buffered[3].metrics.requests``;
    ``""`` for the document itself), ``message`` starts with it (translated)."""
    stack: list[tuple[str, Any]] = [("", document)]
    while stack:
        path, value = stack.pop()
        where = path or _("the body")
        if isinstance(value, str):
            found = UNSTORABLE.search(value)
            if found is not None:
                return path, _("%(field)s: contains %(character)s at position %(position)d") % {
                    "field": where, "character": describe_character(found.group()),
                    "position": found.start()}
        elif isinstance(value, bool):
            continue
        elif isinstance(value, int):
            if abs(value) > MAX_JSON_INTEGER:
                return path, _("%(field)s: %(value)s is outside the integers a JSON number "
                               "holds exactly (at most %(limit)d in size; RFC 8259, section "
                               "6)") % {"field": where, "value": _shown(value),
                                         "limit": MAX_JSON_INTEGER}
        elif isinstance(value, dict):
            for key, item in reversed(list(value.items())):
                found = UNSTORABLE.search(key)
                if found is not None:
                    return path, _("%(field)s: the key %(key)s contains %(character)s at "
                                   "position %(position)d") % {
                        "field": where, "key": ascii(key[:_KEY_CHARS]),
                        "character": describe_character(found.group()),
                        "position": found.start()}
                stack.append((json_path(path, key), item))
        elif isinstance(value, list):
            stack.extend((json_path(path, index), item)
                         for index, item in reversed(list(enumerate(value))))
    return None


def check_json_document(document: Any) -> None:
    """Refuse a document :func:`json_document_problem` finds a problem in. Such values used to
    be stored (a key of a JSON field, a device's ``info``) and every later read of them
    answered 500, or they broke the write itself.

    Raises:
        ValidationFailed: 400 ``invalid`` with the value's path as ``field`` (None for the
            document itself) and the message naming the character and its position.
    """
    problem = json_document_problem(document)
    if problem is not None:
        # sampan.core.errors imports DRF's views, whose settings import this module: not at
        # the top
        from sampan.core.errors import ValidationFailed

        raise ValidationFailed(problem[1], field=problem[0] or None)


class JSONParser(parsers.JSONParser):
    """DRF's JSON parser that answers 400 for JSON nested too deeply to parse, and for a
    document :func:`check_json_document` refuses.

    Python's ``json`` module recurses once per nesting level and raises RecursionError (not a
    ValueError, which DRF turns into a 400) past the interpreter's limit: a 200 KB body of
    ``[[[[...`` gave a 500 on every JSON endpoint (review of issue 9)."""

    def parse(self, stream: Any, media_type: str | None = None,
              parser_context: dict[str, Any] | None = None) -> Any:
        try:
            document = super().parse(stream, media_type, parser_context)
            check_json_document(document)
            return document
        except RecursionError:
            raise ParseError(_("JSON parse error - the document is nested too deeply")) from None
        except ParseError as error:  # DRF's "JSON parse error - <json's reason>", untranslated
            reason = str(error.detail).removeprefix("JSON parse error - ")
            raise ParseError(_("JSON parse error - %(reason)s") % {"reason": reason}) from None


class MultiPartParser(parsers.MultiPartParser):
    """DRF's multipart parser with its parse error in the request's language."""

    def parse(self, stream: Any, media_type: str | None = None,
              parser_context: dict[str, Any] | None = None) -> Any:
        try:
            return super().parse(stream, media_type, parser_context)
        except ParseError as error:  # DRF's "Multipart form parse error - <Django's reason>"
            prefix = "Multipart form parse error - "
            detail = str(error.detail)
            if not detail.startswith(prefix):
                raise
            raise ParseError(_("Multipart form parse error - %(reason)s")
                             % {"reason": detail.removeprefix(prefix)}) from None
