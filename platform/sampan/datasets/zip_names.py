"""Entry names of zips as people make them, decoded to text (stdlib only; no Django).

The zip format (PKWARE APPNOTE 6.3.10, section 4.4.4 and appendix D) stores names as bytes: UTF-8
when general purpose bit 11 (the "language encoding flag") is set, otherwise in "IBM code page
437". Python's ``zipfile`` follows that letter and decodes every flagless name as cp437. Real
archives break it: Windows' built-in "Send to > Compressed folder" and older WinRAR/7-Zip write the
OEM code page of the machine (GBK/CP936 on Chinese Windows) without the flag; macOS Archive
Utility and Info-ZIP on Linux write UTF-8 (macOS: decomposed, NFD) without the flag.

The rule, for the entries WITHOUT bit 11 (flagged entries are UTF-8, as the format says):

1. an Info-ZIP Unicode Path extra field (0x7075, version 1) whose CRC-32 matches the raw name
   gives the name (7-Zip and WinRAR write it beside a legacy name);
2. otherwise ONE encoding is chosen for all the archive's remaining non-ASCII names (one tool on
   one machine wrote them, and more names are more evidence than one): UTF-8 if every one of them
   is valid UTF-8 (multi-byte UTF-8 almost never happens by chance in legacy text); else GB18030
   (a superset of GBK/CP936) if every one decodes strictly; else cp437, the format's default.

Other legacy code pages (Shift-JIS, Big5, CP949, CP866) are not told apart from GB18030 or cp437:
such archives import with wrong folder names; re-zipping with 7-Zip (UTF-8) or Windows 11 fixes
it. Names are NOT Unicode-normalised here; ``sampan.datasets.archives`` applies NFC.

A backslash is a path separator (PowerShell 5.1's ``Compress-Archive`` writes ``cats\\1.jpg``,
against APPNOTE 4.4.17.1): ``entry_names`` turns it into ``/`` so that the safety checks in
``archives`` see the path an extractor on Windows would write (``..\\x`` is a parent reference,
``C:\\x`` an absolute path). Decoding comes first, since a GBK trail byte can be 0x5C.
"""

from __future__ import annotations

import struct
import zipfile
import zlib

UTF8_FLAG = 0x800  # general purpose bit 11
UNICODE_PATH_EXTRA = 0x7075  # Info-ZIP Unicode Path Extra Field (APPNOTE 4.6.9)
LEGACY_CANDIDATES = ("utf-8", "gb18030")
FALLBACK = "cp437"


def raw_name(info: zipfile.ZipInfo) -> bytes:
    """The name bytes of a flagless entry as stored (``zipfile`` decoded them as cp437, which maps
    each of the 256 byte values to its own character, so encoding gives them back exactly).

    ``orig_filename`` is used because ``filename`` is cut at the first NUL.
    """
    return info.orig_filename.encode("cp437")


def unicode_path_extra(info: zipfile.ZipInfo, raw: bytes) -> str | None:
    """The UTF-8 name in a 0x7075 extra field whose CRC-32 matches ``raw``, else None."""
    extra = info.extra
    offset = 0
    while offset + 4 <= len(extra):
        tag, size = struct.unpack_from("<HH", extra, offset)
        body = extra[offset + 4:offset + 4 + size]
        offset += 4 + size
        if tag != UNICODE_PATH_EXTRA or len(body) < 5 or body[0] != 1:
            continue
        if struct.unpack_from("<I", body, 1)[0] != zlib.crc32(raw):
            continue  # the legacy name was changed after the extra field was written
        try:
            return body[5:].decode("utf-8")
        except UnicodeDecodeError:
            return None
    return None


def _decodes(raw: bytes, encoding: str) -> bool:
    try:
        raw.decode(encoding)
    except UnicodeDecodeError:
        return False
    return True


def legacy_encoding(raw_names: list[bytes]) -> str:
    """The one encoding for flagless names (rule 2 of the module docstring)."""
    non_ascii = [raw for raw in raw_names if not raw.isascii()]
    for encoding in LEGACY_CANDIDATES:
        if all(_decodes(raw, encoding) for raw in non_ascii):
            return encoding
    return FALLBACK


def entry_names(infos: list[zipfile.ZipInfo]) -> list[str]:
    """The decoded name of each entry, in order, with ``\\`` turned into ``/``."""
    names: list[str | None] = []
    legacy: list[tuple[int, bytes]] = []
    for index, info in enumerate(infos):
        if info.flag_bits & UTF8_FLAG:
            names.append(info.orig_filename)
            continue
        raw = raw_name(info)
        names.append(unicode_path_extra(info, raw))
        if names[-1] is None:
            legacy.append((index, raw))
    encoding = legacy_encoding([raw for _, raw in legacy])
    for index, raw in legacy:
        names[index] = raw.decode(encoding)
    return [str(name).replace("\\", "/") for name in names]
