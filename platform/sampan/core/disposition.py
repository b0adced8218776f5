"""``Content-Disposition`` for downloads whose name people chose (any Unicode, any age).

``attachment; filename*=UTF-8''<percent-encoded UTF-8>; filename="<ASCII fallback>"`` (RFC 6266
section 4.3: recipients that understand ``filename*`` (RFC 8187, formerly 5987) prefer it —
browsers; Python's ``email`` package, which takes the first of the two, reads it because it comes
first — and the others read the ASCII ``filename``). ``curl -OJ`` reads only ``filename``: it
saves under the ASCII fallback. A name that is its own fallback gets ``filename`` alone.

Django's ``content_disposition_header`` sends ``filename*`` alone for a non-ASCII name (no
fallback), so it is not used. The shown name first goes through ``display_name`` (control and
format characters become U+FFFD: a name stored before the rule of ``sampan.core.names`` existed
cannot break the header) and path separators become ``_``.
"""

from __future__ import annotations

import re
import unicodedata
from urllib.parse import quote

from sampan.core.names import REPLACEMENT, display_name

# RFC 8187 attr-char, apart from ALPHA / DIGIT and "-._~" that quote() always keeps
_ATTR_SAFE = "!#$&+^`|"
_FALLBACK_DROP = re.compile(r'["\\%]')  # quote and backslash break naive quoted-string parsers
_FALLBACK_UNSAFE = re.compile(r"[^A-Za-z0-9 !#$&'()+,.;=@\[\]^_`{}~-]")
_SPACES = re.compile(r"\s+")


def download_name(name: str) -> str:
    """``name`` as a file name to offer: no control or format characters, no ``/`` or ``\\``."""
    return display_name(name).replace("/", "_").replace("\\", "_").strip() or "download"


def ascii_fallback(name: str, default: str = "download") -> str:
    """An ASCII file name close to ``name``: accents dropped (NFKD), other non-ASCII removed.

    When letters other than accents were lost, ``default`` is put in front so the name still
    says what it is; when no letter or digit is left, ``default`` replaces the stem.
    ``"Café-v1.zip"`` -> ``"Cafe-v1.zip"``; ``'猫狗识别 "v2"-v1.zip'`` with default ``model`` ->
    ``"model-v2-v1.zip"``; ``"猫狗-v1.zip"`` -> ``"model-v1.zip"``.
    """
    stem, dot, suffix = name.rpartition(".")
    if not (dot and stem and suffix.isascii() and suffix.isalnum() and len(suffix) <= 10):
        stem, suffix = name, ""
    decomposed = unicodedata.normalize("NFKD", stem.replace(REPLACEMENT, "_"))
    lost = any(not ch.isascii() and not unicodedata.combining(ch) for ch in decomposed)
    folded = decomposed.encode("ascii", "ignore").decode("ascii")
    folded = _FALLBACK_DROP.sub("", folded)
    folded = _FALLBACK_UNSAFE.sub("_", folded)
    folded = _SPACES.sub(" ", folded).strip(" ._-")
    if not any(ch.isalnum() for ch in folded):
        folded = default
    elif lost:
        folded = f"{default}-{folded}"
    return f"{folded}.{suffix}" if suffix else folded


def content_disposition(name: str, *, default: str = "download", inline: bool = False) -> str:
    """The ``Content-Disposition`` value offering ``name`` (any Unicode) as the file name.

    ``default`` names the file in the ASCII fallback when ``name`` loses letters there.
    """
    shown = download_name(name)
    fallback = ascii_fallback(shown, default)
    kind = "inline" if inline else "attachment"
    if shown == fallback:
        return f'{kind}; filename="{fallback}"'
    # filename* first: recipients that know it prefer it wherever it stands (RFC 6266 4.3), and
    # parsers that take the first "filename" parameter (Python's email package) get it too
    return f"{kind}; filename*=UTF-8''{quote(shown, safe=_ATTR_SAFE)}; filename=\"{fallback}\""
