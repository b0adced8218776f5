"""The one rule for names people give things, and for free text (the standard library, and
Django's gettext for the messages: only the platform imports this module).

Names: projects, datasets, class labels (typed or from zip folder names), models, devices, API
tokens. Free text: descriptions and notes. ``sampan.core.validation`` wraps these functions in
DRF fields and service helpers; ``sampan.datasets.archives`` applies them to folder names.

A **name** is Unicode NFC with surrounding whitespace trimmed (``"Cafe\\u0301 "`` and
``"Caf\\u00e9"`` are the same name) and holds none of:

- ``Cc`` control characters: C0 (U+0000-U+001F, tab and newline included), DEL, C1
  (U+0080-U+009F). A newline in a name broke HTTP headers (a model's package download answered
  500) and every one-line display;
- ``Cf`` format characters: bidirectional overrides and isolates (U+202A-U+202E, U+2066-U+2069,
  the "Trojan Source" characters, CVE-2021-42574), zero-width space U+200B, BOM U+FEFF, soft
  hyphen U+00AD, tag characters, ... EXCEPT U+200C ZERO WIDTH NON-JOINER and U+200D ZERO WIDTH
  JOINER: Persian, Indic scripts and emoji sequences need them to be spelt correctly (Unicode
  UAX #31, section 2.3, allows both in identifiers for this reason);
- ``Cs`` lone surrogates (JSON's ``"\\ud800"`` decodes to one; it cannot be stored as UTF-8);
- ``Zl`` / ``Zp`` line and paragraph separators (U+2028, U+2029): line breaks by another name.

Private-use (``Co``) and unassigned (``Cn``) code points are allowed: fonts use the first and a
newer Unicode version the second. **Free text** may hold tab, LF and CR (several lines); only the
other ``Cc`` characters and ``Cs`` are refused there (PostgreSQL refuses NUL in text).

Data stored before this rule still renders: ``display_name`` replaces what the rule refuses with
U+FFFD where a name must be safe (file names, headers).

InvalidName's message is translated when it is raised, into the active language (the request's).
"""

from __future__ import annotations

import unicodedata
from collections.abc import Callable

from django.utils.translation import gettext as _

JOINERS = frozenset({"\u200c", "\u200d"})  # ZWNJ, ZWJ: needed by scripts and emoji sequences
_NAME_REFUSED = frozenset({"Cc", "Cf", "Cs", "Zl", "Zp"})
_TEXT_ALLOWED = frozenset({"\t", "\n", "\r"})
REPLACEMENT = "\ufffd"


class InvalidName(ValueError):
    """A name or text that the rule refuses; the message says why (shown to users)."""


def _refused_in_name(ch: str) -> bool:
    return unicodedata.category(ch) in _NAME_REFUSED and ch not in JOINERS


def _refused_in_text(ch: str) -> bool:
    return unicodedata.category(ch) in ("Cc", "Cs") and ch not in _TEXT_ALLOWED


def describe_character(ch: str) -> str:
    """``"U+000A (a control character)"`` or ``"U+202E RIGHT-TO-LEFT OVERRIDE (a format
    character)"``: how error messages name a refused character."""
    kinds = {"Cc": _("a control character"), "Cf": _("a format character"),
             "Cs": _("a lone surrogate"), "Zl": _("a line separator"),
             "Zp": _("a paragraph separator")}
    kind = kinds.get(unicodedata.category(ch)) or _("a refused character")
    name = unicodedata.name(ch, "")
    return _("%(character)s (%(kind)s)") % {
        "character": f"U+{ord(ch):04X}{' ' + name if name else ''}", "kind": kind}


def _first_refused(value: str, refused: Callable[[str], bool]) -> str | None:
    for position, ch in enumerate(value):
        if refused(ch):
            return _("contains %(character)s at position %(position)d") % {
                "character": describe_character(ch), "position": position}
    return None


def clean_name(value: str, *, max_length: int | None = None) -> str:
    """The name ``value`` in its stored form: NFC, surrounding whitespace trimmed.

    Raises InvalidName when nothing is left, when it holds a character the rule refuses (the
    message names it by code point and position in the trimmed NFC name), or when it is longer
    than ``max_length`` characters.
    """
    name = unicodedata.normalize("NFC", value).strip()
    if not name:
        raise InvalidName(_("must not be empty"))
    problem = _first_refused(name, _refused_in_name)
    if problem:
        raise InvalidName(problem)
    if max_length is not None and len(name) > max_length:
        raise InvalidName(_("is %(length)d characters long (at most %(limit)d)")
                          % {"length": len(name), "limit": max_length})
    return name


def check_text(value: str) -> str:
    """``value`` unchanged if it is acceptable free text (tab, LF, CR allowed); raises
    InvalidName naming the first other control character or lone surrogate."""
    problem = _first_refused(value, _refused_in_text)
    if problem:
        raise InvalidName(problem)
    return value


def _pattern_class(refused: Callable[[str], bool]) -> str:
    """The refused characters of the Basic Multilingual Plane as a regular-expression class body
    (``\\uXXXX`` ranges; surrogates left out: outside a pair they never reach a parsed string)."""
    ranges: list[tuple[int, int]] = []
    for code in range(0x10000):
        if 0xD800 <= code <= 0xDFFF or not refused(chr(code)):
            continue
        if ranges and ranges[-1][1] == code - 1:
            ranges[-1] = (ranges[-1][0], code)
        else:
            ranges.append((code, code))
    return "".join(f"\\u{low:04X}" if low == high else f"\\u{low:04X}-\\u{high:04X}"
                   for low, high in ranges)


def name_pattern() -> str:
    """A regular expression (ECMA-262 and Python ``re`` alike) that a name matches when the rule
    takes it: at least one character that is not white space, and no refused character of the
    Basic Multilingual Plane (the rule also refuses a few format characters above it, such as
    the tag characters U+E0001-U+E007F, which a pattern without the ``u`` flag cannot name).
    For the OpenAPI schema of every name field."""
    refused = _pattern_class(_refused_in_name)
    return f"^[^{refused}]*[^{refused}\\s][^{refused}]*$"


def text_pattern() -> str:
    """The same for free text: no refused control character (tab, LF and CR allowed). The empty
    text is not matched: a field that takes it says so apart (drf-spectacular's ``oneOf`` with
    ``maxLength: 0``, which must not overlap this)."""
    return f"^[^{_pattern_class(_refused_in_text)}]+$"


def display_name(value: str) -> str:
    """``value`` (NFC) with every character the name rule refuses replaced by U+FFFD.

    For names that must be shown or sent whatever they hold: original file names from uploads,
    and names stored before the rule existed.
    """
    return "".join(REPLACEMENT if _refused_in_name(ch) else ch
                   for ch in unicodedata.normalize("NFC", value))
