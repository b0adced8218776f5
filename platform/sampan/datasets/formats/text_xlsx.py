"""Texts from XLSX workbooks (Excel 2007+, WPS, LibreOffice, Numbers' export) for text
classification datasets: a text column and an optional label column of one worksheet, read into
the records of ``sampan.datasets.formats.text_table`` and from there by the same rules as a CSV
table (columns by number or header name, the known header names, the rule without a header,
every unusable row reported, the rest read). A row's ``line`` is its row number in the sheet
(``A7`` is line 7), blank rows included in the count as Excel shows them.

Safety first: an XLSX is a zip. Before openpyxl opens it, its central directory is checked with
the bounds every uploaded zip has (``sampan.datasets.archives.ArchiveLimits``: the entry count and
the directory's size through ``open_archive``, the uncompressed total, each part's and the whole
file's compression ratio, all from the sizes the directory declares); ``zipfile`` never
decompresses past a part's declared size, so the declared sizes bound what is read. A file that
is an OLE2 compound document (an Excel 97-2003 ``.xls``, or any password-protected workbook:
Office encrypts the whole package into one), not a zip, or not a workbook, is refused with a
message naming the file, and nothing of it is imported. Rows are bounded as CSV rows are
(``text_table.MAX_ROWS``).

Reading: openpyxl in read-only mode with ``data_only=True``: a formula cell gives the value the
program that saved the file computed (cached). A formula saved without its value (some writers
do not calculate) in the text or label column skips its row with ``formula_without_value``
naming the cell, rather than reading it as empty. The worksheet's XML is read row by row with
openpyxl's own parser (``WorkSheetParser``, the one its read-only worksheets use; subclassed only
to tell such a formula from an empty cell), never the sheet's declared dimension, which some
writers get wrong (``A1`` for a whole sheet would hide every row after the first).

Cells as text: strings as they are; whole numbers without a decimal point (``1``, not ``1.0``:
labels typed as numbers), other numbers with up to 15 significant digits (what Excel shows);
dates and times as ISO 8601 (``2024-05-01``; ``2024-05-01T13:45:00`` with a time); booleans
``TRUE``/``FALSE``; error values (``#N/A``) as written; an empty cell is empty.
"""

from __future__ import annotations

import datetime
import unicodedata
from collections.abc import Callable
from pathlib import Path
from typing import Any

from django.utils.translation import gettext as _
from openpyxl import load_workbook
from openpyxl.utils import get_column_letter
from openpyxl.worksheet._reader import FORMULA_TAG, VALUE_TAG, WorkSheetParser

from sampan.datasets.archives import ArchiveError, ArchiveLimits, open_archive
from sampan.datasets.formats.text_table import (MAX_COLUMNS, MAX_ROWS, NO_SUCH_SHEET,
                                                NO_WORKSHEET, TOO_MANY_ROWS, XLS_OR_ENCRYPTED,
                                                XLSX_ENCRYPTED_PART, XLSX_PART_RATIO, XLSX_RATIO,
                                                XLSX_REFUSED, XLSX_TOO_LARGE, XLSX_TOO_MUCH_TEXT,
                                                XLSX_TOO_WIDE, XLSX_UNREADABLE, TextFileError,
                                                TextTable, table_from_records)

#: the first bytes of an OLE2 compound document: .xls, and every password-protected Office file
OLE2_MAGIC = bytes.fromhex("d0cf11e0a1b11ae1")
#: what ``table_from_records`` is told the encoding of a workbook was
XLSX_ENCODING = "xlsx"
#: ``on_rows`` is called after every this many sheet rows read (openpyxl's parser reads ~20,000
#: rows a second on a busy 2-core machine: a million-row sheet takes about a minute, longer than
#: an import job's heartbeat timeout)
PROGRESS_ROWS = 5000


class _Uncomputed:
    """The value of a formula cell the file holds no computed value for."""


UNCOMPUTED = _Uncomputed()


class _CellParser(WorkSheetParser):
    """openpyxl's worksheet parser, telling a formula saved without its value from an empty
    cell (openpyxl reads both as None with ``data_only``): ``<f>`` with no ``<v>``, or an empty
    ``<v/>`` (openpyxl itself writes that) unless the cell's type is a formula's string
    (``t="str"``), whose computed value may be the empty string."""

    def parse_cell(self, element: Any) -> dict[str, Any]:
        cell: dict[str, Any] = super().parse_cell(element)
        if cell["value"] is None and element.find(FORMULA_TAG) is not None:
            value = element.find(VALUE_TAG)
            if value is None or (not value.text and element.get("t", "n") != "str"):
                cell["value"] = UNCOMPUTED
        return cell


def check_workbook_zip(path: Path, *, name: str, limits: ArchiveLimits) -> None:
    """Refuse ``path`` (shown as ``name``) before any of it is parsed: not a zip (an .xls or an
    encrypted workbook said as such), a zip directory over ``limits``, an encrypted part, more
    uncompressed bytes than ``limits.max_total_bytes``, a part or the whole file expanding more
    than ``limits.max_ratio`` times (past the sizes where ``ArchiveLimits`` applies its ratios).
    Raises TextFileError naming the file."""
    with open(path, "rb") as handle:
        if handle.read(len(OLE2_MAGIC)) == OLE2_MAGIC:
            raise TextFileError(_(XLS_OR_ENCRYPTED) % {"file": name})
    try:
        archive = open_archive(path, limits)
    except ArchiveError as exc:
        raise TextFileError(_(XLSX_REFUSED) % {"file": name, "error": exc}) from None
    size = max(1, path.stat().st_size)
    with archive:
        total = 0
        for info in archive.infolist():
            if info.flag_bits & 0x1:
                raise TextFileError(_(XLSX_ENCRYPTED_PART)
                                    % {"file": name, "part": info.filename})
            total += info.file_size
            # a header can lie about compress_size too; it cannot exceed the file itself
            compressed = max(1, min(info.compress_size, size))
            if (info.file_size > limits.ratio_min_bytes
                    and info.file_size / compressed > limits.max_ratio):
                raise TextFileError(_(XLSX_PART_RATIO) % {
                    "file": name, "part": info.filename,
                    "ratio": info.file_size // compressed, "limit": int(limits.max_ratio)})
    if total > limits.max_total_bytes:
        raise TextFileError(_(XLSX_TOO_LARGE) % {"file": name, "bytes": total,
                                                 "limit": limits.max_total_bytes})
    if total > limits.archive_ratio_min_bytes and total / size > limits.max_ratio:
        raise TextFileError(_(XLSX_RATIO) % {"file": name, "ratio": total // size,
                                             "limit": int(limits.max_ratio)})


def cell_text(value: Any) -> str:
    """A cell's value as the text a table row holds (module docstring)."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if value.is_integer() and abs(value) < 1e16:
            return str(int(value))
        return format(value, ".15g")
    if isinstance(value, datetime.datetime):
        if value.time() == datetime.time(0):
            return value.date().isoformat()
        return value.isoformat(timespec="seconds" if not value.microsecond else "auto")
    if isinstance(value, datetime.date | datetime.time):
        return value.isoformat()
    if isinstance(value, datetime.timedelta):
        return str(value)
    return str(value)


def _sheet_named(worksheets: list[Any], sheet: str, name: str) -> Any:
    for worksheet in worksheets:
        if worksheet.title == sheet:
            return worksheet
    wanted = unicodedata.normalize("NFC", sheet).strip().casefold()
    for worksheet in worksheets:  # Excel's sheet names are unique regardless of case
        if unicodedata.normalize("NFC", worksheet.title).strip().casefold() == wanted:
            return worksheet
    raise TextFileError(_(NO_SUCH_SHEET) % {
        "file": name, "sheet": sheet,
        "sheets": ", ".join(repr(w.title) for w in worksheets)})


def _sheet_records(workbook: Any, worksheet: Any, name: str,
                   on_rows: Callable[[int], None] | None = None, max_chars: int = 2**31,
                   ) -> tuple[list[tuple[int, list[str]]], dict[int, dict[int, str]],
                              dict[int, int]]:
    """(sheet row number, cells) of each row with a non-blank cell, the formulas without a
    value by row and 0-based column, and the true width of the rows whose cells were not all
    kept.

    Bounded in memory whatever the XML says (a few bytes can name a far cell or reuse one
    shared string of a megabyte in every row): the first row keeps at most
    :data:`MAX_COLUMNS` columns (a value beyond refuses the file), later rows at most one more
    than the first (their width is kept apart: ``too_many_columns``), and the characters of
    the cells kept, counted per cell even when the file shares one string, stop at
    ``max_chars`` (the import's byte limit: what a CSV of the same content could bring)."""
    records: list[tuple[int, list[str]]] = []
    uncomputed: dict[int, dict[int, str]] = {}
    widths: dict[int, int] = {}
    keep, chars = MAX_COLUMNS, 0
    with worksheet._get_source() as source:
        parser = _CellParser(source, worksheet._shared_strings, data_only=True,
                             epoch=workbook.epoch, date_formats=workbook._date_formats,
                             timedelta_formats=workbook._timedelta_formats)
        for count, (line, row) in enumerate(parser.parse(), start=1):
            if on_rows is not None and count % PROGRESS_ROWS == 0:
                on_rows(count)
            cells: list[str] = []
            beyond = 0
            for cell in row:
                column = int(cell["column"])
                if column > keep:
                    if cell["value"] is not None and cell_text(cell["value"]).strip():
                        beyond = max(beyond, column)
                    continue
                if column > len(cells) + 1:
                    cells.extend([""] * (column - 1 - len(cells)))
                value = cell["value"]
                if value is UNCOMPUTED:
                    uncomputed.setdefault(line, {})[column - 1] = (
                        f"{get_column_letter(column)}{line}")
                    value = None
                if column <= len(cells):  # the same cell twice: the last one counts
                    cells[column - 1] = cell_text(value)
                else:
                    cells.append(cell_text(value))
            while cells and not cells[-1].strip():
                cells.pop()  # formatted but empty cells at the end are no columns
            if beyond:
                if not records:
                    raise TextFileError(_(XLSX_TOO_WIDE) % {
                        "file": name, "line": line, "column": beyond, "limit": MAX_COLUMNS})
                widths[line] = beyond
            if cells or line in uncomputed or beyond:  # a lone formula without a value too
                if len(records) > MAX_ROWS:
                    raise TextFileError(_(TOO_MANY_ROWS) % {"file": name, "limit": MAX_ROWS})
                chars += sum(map(len, cells))
                if chars > max_chars:
                    raise TextFileError(_(XLSX_TOO_MUCH_TEXT) % {"file": name,
                                                                 "limit": max_chars})
                if not records:
                    keep = len(cells) + 1
                records.append((line, cells))
    return records, uncomputed, widths


def read_text_xlsx(path: Path, *, name: str, text_column: int | str | None = None,
                   label_column: int | str | None = None, has_header: bool | None = None,
                   sheet: str | None = None, limits: ArchiveLimits | None = None,
                   on_rows: Callable[[int], None] | None = None) -> TextTable:
    """Read the texts of an XLSX workbook at ``path`` (shown as ``name``): the first worksheet,
    or the one named ``sheet`` (exactly, else regardless of case); columns and rows as
    ``text_table.read_text_table``. The table's ``encoding`` is ``"xlsx"``, its ``delimiter``
    ``""``, its ``sheet`` the worksheet's name, each row's ``line`` its sheet row number.

    Raises TextFileError naming the file when it is refused (``check_workbook_zip``), is no
    readable workbook, has no such sheet (the message lists the sheets there are) or no rows, or
    a chosen column does not exist; nothing of such a file is returned. ``limits``: the
    import's (default: ``ArchiveLimits()``). ``on_rows(rows read)`` is called every
    :data:`PROGRESS_ROWS` sheet rows (the import job's heartbeat).
    """
    limits = limits or ArchiveLimits()
    check_workbook_zip(path, name=name, limits=limits)
    try:
        with open(path, "rb") as handle:
            # a file object: openpyxl would refuse a path not ending in .xlsx (a staged upload)
            workbook = load_workbook(handle, read_only=True, data_only=True)
            try:
                worksheets = list(workbook.worksheets)
                if not worksheets:
                    raise TextFileError(_(NO_WORKSHEET) % {"file": name})
                worksheet = (_sheet_named(worksheets, sheet, name) if sheet
                             else worksheets[0])
                records, uncomputed, widths = _sheet_records(
                    workbook, worksheet, name, on_rows, max_chars=limits.max_total_bytes)
            finally:
                workbook.close()
    except TextFileError:
        raise
    except Exception as exc:  # what openpyxl's parsers meet: BadZipFile, KeyError, ParseError...
        error = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
        raise TextFileError(_(XLSX_UNREADABLE) % {"file": name, "error": error}) from None
    table = table_from_records(records, name=name, encoding=XLSX_ENCODING, delimiter="",
                               text_column=text_column, label_column=label_column,
                               has_header=has_header, uncomputed=uncomputed, widths=widths)
    table.sheet = worksheet.title
    return table


__all__ = ["OLE2_MAGIC", "PROGRESS_ROWS", "XLSX_ENCODING", "cell_text", "check_workbook_zip",
           "read_text_xlsx"]
