"""Texts from files people have: CSV / TSV tables (a text column and an optional label column)
and plain ``.txt`` files, for text classification datasets.

Decoding (:func:`decode_text`): a byte-order mark decides first (UTF-8, UTF-16 LE/BE); without
one the bytes must be strict UTF-8, else strict GB18030 (the superset of GBK and GB2312 that
Chinese spreadsheets and Windows save by default); anything else is refused with the offset of
the first byte that is neither, and the encoding used is reported. Statistical detectors were
measured and not used: charset-normalizer 3.5 reads the GBK line ``今天天气很好,正面`` as
Korean (cp949) — the exact file this reader must get right.

Tables (:func:`read_text_table`): Python's ``csv`` module (RFC 4180 quoting: commas, tabs,
quotes and newlines inside quoted fields), the delimiter from the file name (``.tsv``/``.tab``:
tab, otherwise comma). The text column and the label column are the ones the person chose, or,
with a header of known names (``text``/``文本``/``content``..., ``label``/``标签``/``class``...),
those; without a header, one column is text only and of two or more the column with fewer
distinct values is the label. Every row that cannot be used is reported by its line number
(the line its record starts on) with a code, and the rest is read. XLSX workbooks are read into
the same records by ``sampan.datasets.formats.text_xlsx`` (the line is then the sheet's row
number) and share every rule below.

Texts are normalised as they are stored: Unicode NFC, line endings to ``\\n``, surrounding
whitespace trimmed; a text is stored whole (no truncation here: the trainer truncates what it
reads and says so). Labels: NFKC (full-width letters, digits and spaces folded: ``正面　`` and
``正面 `` are ``正面``), trimmed; the variants merged into one class are reported.
"""

from __future__ import annotations

import codecs
import csv
import io
import re
import unicodedata
from dataclasses import dataclass, field
from typing import Any

from django.utils.translation import gettext as _
from django.utils.translation import gettext_noop

from sampan.datasets.archives import ArchiveError

#: the largest text one cell may hold, in characters (a 1 MB review is stored whole)
MAX_TEXT_CHARS = 4 * 1024 * 1024
#: the most rows read from one table; beyond: refused with this number named
MAX_ROWS = 1_000_000
#: Columns of a workbook's table kept (a value beyond them in the first row refuses the file; in
#: a later row, makes it ``too_many_columns``): a cell reference such as ``XFD2`` is a few bytes
#: of XML but 16,384 cells when padded.
MAX_COLUMNS = 1024
TABLE_SUFFIXES = frozenset({".csv", ".tsv", ".tab"})
#: workbooks read by ``text_xlsx`` (the first worksheet, or the one named by the ``sheet`` option)
WORKBOOK_SUFFIXES = frozenset({".xlsx"})
TEXT_SUFFIXES = frozenset({".txt"})

csv.field_size_limit(MAX_TEXT_CHARS)

TEXT_COLUMN_NAMES = frozenset({
    "text", "texts", "content", "contents", "sentence", "review", "comment", "document", "body",
    "message", "title", "query", "文本", "内容", "评论", "句子", "正文", "评价", "文字"})
LABEL_COLUMN_NAMES = frozenset({
    "label", "labels", "class", "category", "sentiment", "tag", "target", "y", "intent",
    "标签", "类别", "分类", "情感", "类型"})

# the English templates of the row problems (stored in the import report with their code and
# parameters, read back in the request's language: ``sampan.core.stored_text``)
TOO_MANY_COLUMNS = gettext_noop(
    "line %(line)d has %(found)d columns, the header has %(expected)d: row skipped")
NO_TEXT_CELL = gettext_noop(
    "line %(line)d has no column %(column)d for the text: row skipped")
EMPTY_TEXT = gettext_noop("line %(line)d: the text is empty: row skipped")
TEXT_TOO_LONG = gettext_noop(
    "line %(line)d: the text has %(chars)d characters (at most %(limit)d): row skipped")
#: XLSX: a cell of the text or label column whose formula the file holds no computed value of
#: (saved by a program that writes formulas without calculating them)
FORMULA_WITHOUT_VALUE = gettext_noop(
    "line %(line)d: cell %(cell)s is a formula whose value the file does not hold (open and "
    "save it in Excel or LibreOffice to compute it): row skipped")
ROW_TEMPLATES = (TOO_MANY_COLUMNS, NO_TEXT_CELL, EMPTY_TEXT, TEXT_TOO_LONG, FORMULA_WITHOUT_VALUE)
# why a whole file cannot be read (the import report's ``rejected``, by file)
UNKNOWN_ENCODING = gettext_noop("%(file)s: unknown encoding %(encoding)r")
NOT_THAT_ENCODING = gettext_noop("%(file)s: not %(encoding)s (byte %(offset)d is %(byte)s)")
UNDECODABLE = gettext_noop(
    "%(file)s: the bytes are neither UTF-8 (byte %(offset)d is %(byte)s) nor GB18030/GBK, and "
    "there is no UTF-8 or UTF-16 byte-order mark: save the file as UTF-8 or name its encoding")
NOT_UNICODE = gettext_noop(
    "%(file)s: decoded as %(encoding)s it holds a lone surrogate %(character)s at character "
    "%(offset)d, which is not Unicode text: name the encoding the file was saved in")
TOO_MANY_ROWS = gettext_noop("%(file)s: more than %(limit)d rows: split the table")
COLUMN_NUMBER = gettext_noop("%(file)s: %(field)s %(number)d: columns count from 1")
NOT_A_COLUMN = gettext_noop(
    "%(file)s: %(field)s %(choice)r is not a column of the header %(header)r")
NO_ROWS = gettext_noop("%(file)s: the table has no rows")
CHOOSE_TEXT_COLUMN = gettext_noop(
    "%(file)s: choose the text column: none of the header %(header)r is a known text column "
    "name")
NO_TEXT = gettext_noop("%(file)s: the file holds no text")
# why a workbook cannot be read (text_xlsx); nothing of it is imported
XLS_OR_ENCRYPTED = gettext_noop(
    "%(file)s: an Excel 97-2003 workbook (.xls) or a password-protected one, not an .xlsx: save "
    "it as an .xlsx workbook without a password")
XLSX_REFUSED = gettext_noop("%(file)s: not read as an .xlsx workbook: %(error)s")
XLSX_ENCRYPTED_PART = gettext_noop(
    "%(file)s: the workbook's part %(part)r is encrypted: save it without a password")
XLSX_TOO_LARGE = gettext_noop(
    "%(file)s: the workbook's parts add up to %(bytes)d bytes uncompressed (limit %(limit)d): "
    "not read")
XLSX_PART_RATIO = gettext_noop(
    "%(file)s: the workbook's part %(part)r expands %(ratio)d times (limit %(limit)d), a "
    "possible zip bomb: not read")
XLSX_RATIO = gettext_noop(
    "%(file)s: the workbook expands %(ratio)d times its size (limit %(limit)d), a possible zip "
    "bomb: not read")
XLSX_UNREADABLE = gettext_noop("%(file)s: not a readable .xlsx workbook: %(error)s")
NO_SUCH_SHEET = gettext_noop("%(file)s: no sheet named %(sheet)r; its sheets: %(sheets)s")
NO_WORKSHEET = gettext_noop("%(file)s: the workbook has no worksheet")
XLSX_TOO_WIDE = gettext_noop(
    "%(file)s: row %(line)d has a value in column %(column)d; a text table has at most "
    "%(limit)d columns")
XLSX_TOO_MUCH_TEXT = gettext_noop(
    "%(file)s: its cells hold more than %(limit)d characters, more than an import may bring: "
    "split the workbook")
FILE_TEMPLATES = (UNKNOWN_ENCODING, NOT_THAT_ENCODING, NOT_UNICODE, UNDECODABLE, TOO_MANY_ROWS,
                  COLUMN_NUMBER,
                  NOT_A_COLUMN, NO_ROWS, CHOOSE_TEXT_COLUMN, NO_TEXT, XLS_OR_ENCRYPTED,
                  XLSX_REFUSED, XLSX_ENCRYPTED_PART, XLSX_TOO_LARGE, XLSX_PART_RATIO, XLSX_RATIO,
                  XLSX_UNREADABLE, NO_SUCH_SHEET, NO_WORKSHEET, XLSX_TOO_WIDE,
                  XLSX_TOO_MUCH_TEXT)


class TextFileError(ArchiveError):
    """A text file or table that cannot be read at all (its encoding, its columns); the message
    names the file."""


_SURROGATE = re.compile("[\ud800-\udfff]")


@dataclass(frozen=True)
class DecodedText:
    """``text`` decoded with ``encoding`` (a Python codec name: ``utf-8``, ``utf-8-sig``,
    ``utf-16``, ``gb18030``)."""

    text: str
    encoding: str


def decode_text(data: bytes, *, name: str, encoding: str | None = None) -> DecodedText:
    """The bytes of file ``name`` as text: the given ``encoding``, else by byte-order mark, else
    strict UTF-8, else strict GB18030. Raises TextFileError naming the file (and the offset of the
    first byte UTF-8 refused) when none decodes it, or when ``encoding`` is unknown or wrong."""
    if encoding:
        try:
            codec = codecs.lookup(encoding).name
        except LookupError:
            raise TextFileError(_(UNKNOWN_ENCODING)
                                % {"file": name, "encoding": encoding}) from None
        try:
            text = data.decode(codec)
        except UnicodeDecodeError as exc:
            raise TextFileError(_(NOT_THAT_ENCODING) % {
                "file": name, "encoding": codec, "offset": exc.start,
                "byte": data[exc.start:exc.start + 1].hex()}) from None
        # codecs that decode escapes (unicode_escape, raw_unicode_escape, utf-7) can make lone
        # surrogates, which no database stores: the whole import used to fail on them
        surrogate = _SURROGATE.search(text)
        if surrogate is not None:
            raise TextFileError(_(NOT_UNICODE) % {
                "file": name, "encoding": codec, "offset": surrogate.start(),
                "character": f"U+{ord(surrogate.group()):04X}"})
        return DecodedText(text, codec)
    if data.startswith(codecs.BOM_UTF8):
        candidates = ["utf-8-sig"]
    elif data.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        candidates = ["utf-16"]
    else:
        candidates = ["utf-8", "gb18030"]
    first: UnicodeDecodeError | None = None
    for candidate in candidates:
        try:
            return DecodedText(data.decode(candidate), candidate)
        except UnicodeDecodeError as exc:
            first = first or exc
    assert first is not None
    raise TextFileError(
        _(UNDECODABLE) % {"file": name, "offset": first.start,
                         "byte": data[first.start:first.start + 1].hex()})


def normalise_text(text: str) -> str:
    """A text as stored: NUL characters removed (PostgreSQL stores none; the agent's text rule,
    ``edge_agent.text_request``, removes them too), NFC, ``\\r\\n`` and ``\\r`` to ``\\n``,
    surrounding whitespace trimmed (inner whitespace and emoji kept)."""
    text = text.replace("\x00", "").replace("\r\n", "\n").replace("\r", "\n")
    return unicodedata.normalize("NFC", text).strip()


def normalise_label(label: str) -> str:
    """A class name as stored: NUL characters removed, NFKC (full-width forms and the
    ideographic space folded), inner runs of whitespace to one space, trimmed. Case is kept;
    the result may be empty."""
    return " ".join(unicodedata.normalize("NFKC", label.replace("\x00", "")).split())


@dataclass(frozen=True)
class TextRow:
    """One usable row: the ``line`` its record starts on (1-based, the header counted), the
    normalised text and label (None: unlabeled)."""

    line: int
    text: str
    label: str | None


@dataclass
class TextTable:
    """What :func:`read_text_table` read: the rows, the problems of the rows it skipped (each
    ``{"line", "code", "message", "params"}``; ``message`` English), and how it read them.
    A workbook's table (``text_xlsx``): ``encoding`` ``"xlsx"``, ``delimiter`` ``""`` and the
    ``sheet`` it was read from."""

    name: str
    encoding: str
    delimiter: str
    header: list[str] | None
    text_column: int  # 0-based
    label_column: int | None
    rows: list[TextRow] = field(default_factory=list)
    problems: list[dict[str, Any]] = field(default_factory=list)
    #: {stored label: [the other spellings merged into it]}
    label_variants: dict[str, list[str]] = field(default_factory=dict)
    #: the worksheet a workbook's table was read from (None: a CSV / TSV file)
    sheet: str | None = None

    def describe(self) -> dict[str, Any]:
        """How the table was read, for the import report and the preview."""
        described = {"file": self.name, "encoding": self.encoding,
                     "delimiter": "tab" if self.delimiter == "\t" else self.delimiter,
                     "header": self.header, "text_column": self.text_column,
                     "label_column": self.label_column, "rows": len(self.rows),
                     "skipped": len(self.problems), "label_variants": self.label_variants}
        if self.sheet is not None:
            described["sheet"] = self.sheet
        return described


def _delimiter(name: str) -> str:
    return "\t" if name.lower().endswith((".tsv", ".tab")) else ","


def _records(text: str, delimiter: str, name: str) -> list[tuple[int, list[str]]]:
    """(first line, cells) of each record; blank lines skipped."""
    reader = csv.reader(io.StringIO(text, newline=""), delimiter=delimiter)
    records: list[tuple[int, list[str]]] = []
    start = 1
    for cells in reader:
        if len(records) > MAX_ROWS:
            raise TextFileError(_(TOO_MANY_ROWS) % {"file": name, "limit": MAX_ROWS})
        if cells and any(cell.strip() for cell in cells):
            records.append((start, cells))
        start = reader.line_num + 1
    return records


def _known(cell: str, names: frozenset[str]) -> bool:
    return normalise_label(cell.lstrip("\ufeff")).casefold() in names


def _column(choice: int | str | None, header: list[str] | None, *, field_name: str,
            name: str) -> int | None:
    """A chosen column: a 1-based number or a header name; None when not chosen."""
    if choice is None or choice == "":
        return None
    if isinstance(choice, int) or str(choice).isdigit():
        number = int(choice)
        if number < 1:
            raise TextFileError(_(COLUMN_NUMBER)
                                % {"file": name, "field": field_name, "number": number})
        return number - 1
    if header is not None:
        wanted = normalise_label(str(choice)).casefold()
        for index, cell in enumerate(header):
            if normalise_label(cell).casefold() == wanted:
                return index
    raise TextFileError(_(NOT_A_COLUMN) % {"file": name, "field": field_name, "choice": choice,
                                           "header": header})


def read_text_table(data: bytes, *, name: str, text_column: int | str | None = None,
                    label_column: int | str | None = None, has_header: bool | None = None,
                    encoding: str | None = None) -> TextTable:
    """Read a CSV/TSV table of texts (module docstring). ``text_column`` / ``label_column``: a
    1-based column number or a header name (None: chosen as the module says; ``label_column``
    0 means "no label column"). ``has_header`` None: the first row is a header when one of its
    cells is a known column name or a chosen column is named.

    Raises TextFileError naming the file when the bytes do not decode, the table is empty, or a
    chosen column does not exist; rows that cannot be used are in ``problems``, never raised.
    """
    decoded = decode_text(data, name=name, encoding=encoding)
    delimiter = _delimiter(name)
    records = _records(decoded.text, delimiter, name)
    return table_from_records(records, name=name, encoding=decoded.encoding,
                              delimiter=delimiter, text_column=text_column,
                              label_column=label_column, has_header=has_header)


def table_from_records(records: list[tuple[int, list[str]]], *, name: str, encoding: str,
                       delimiter: str, text_column: int | str | None = None,
                       label_column: int | str | None = None, has_header: bool | None = None,
                       uncomputed: dict[int, dict[int, str]] | None = None,
                       widths: dict[int, int] | None = None) -> TextTable:
    """The table of ``records`` (``(line, cells)``, blank rows left out), its columns chosen and
    its rows read as :func:`read_text_table` says. ``uncomputed`` (workbooks): ``{line: {0-based
    column: cell name}}`` of the formulas without a stored value; a row whose text or label is
    one is skipped with ``formula_without_value``. ``widths`` (workbooks): ``{line: columns}``
    of the rows whose cells were not all kept (a value far right of the table): their width
    for the ``too_many_columns`` rule."""
    if not records:
        raise TextFileError(_(NO_ROWS) % {"file": name})
    first = records[0][1]
    if has_header is None:
        has_header = (any(_known(c, TEXT_COLUMN_NAMES | LABEL_COLUMN_NAMES) for c in first)
                      or any(isinstance(c, str) and c and not c.isdigit()
                             for c in (text_column, label_column)))
    header = [normalise_label(c.lstrip("\ufeff")) for c in first] if has_header else None
    body = records[1:] if has_header else records
    width = len(first)
    no_label = label_column in (0, "0")
    text_index = _column(text_column, header, field_name="text_column", name=name)
    label_index = None if no_label else _column(label_column, header,
                                                field_name="label_column", name=name)
    if text_index is None and header is not None:
        text_index = next((i for i, c in enumerate(header) if _known(c, TEXT_COLUMN_NAMES)), None)
    if label_index is None and not no_label and header is not None:
        label_index = next((i for i, c in enumerate(header)
                            if _known(c, LABEL_COLUMN_NAMES) and i != text_index), None)
    if text_index is None:
        if width == 1:
            text_index = 0
        elif header is not None and label_index is not None and width == 2:
            text_index = 1 - label_index
        elif header is None:
            text_index, guessed_label = _guess_columns(body, width)
            label_index = None if no_label else (label_index if label_index is not None
                                                 else guessed_label)
        else:
            raise TextFileError(_(CHOOSE_TEXT_COLUMN) % {"file": name, "header": header})
    table = TextTable(name=name, encoding=encoding, delimiter=delimiter, header=header,
                      text_column=text_index, label_column=label_index)
    _read_rows(table, body, width if header is not None else None, uncomputed or {},
               widths or {})
    return table


def _guess_columns(body: list[tuple[int, list[str]]], width: int) -> tuple[int, int | None]:
    """Without a header: text in the column with the most distinct values (ties: the longer
    texts), the label in the one with the fewest (None for one column)."""
    if width < 2:
        return 0, None
    sample = [cells for _, cells in body[:2000]]
    stats = []
    for index in range(min(width, 2)):
        values = [cells[index] for cells in sample if index < len(cells)]
        stats.append((len(set(values)), sum(map(len, values)), index))
    text = max(stats)[2]
    return text, 1 - text


def _problem(table: TextTable, template: str, code: str, **params: Any) -> None:
    table.problems.append({"line": params["line"], "code": code, "message": template % params,
                           "params": params})


def _read_rows(table: TextTable, body: list[tuple[int, list[str]]],
               header_width: int | None, uncomputed: dict[int, dict[int, str]],
               widths: dict[int, int] | None = None) -> None:
    raw_labels: dict[str, set[str]] = {}
    for line, cells in body:
        found = (widths or {}).get(line, len(cells))
        if header_width is not None and found > header_width:
            _problem(table, TOO_MANY_COLUMNS, "too_many_columns", line=line, found=found,
                     expected=header_width)
            continue
        formulas = uncomputed.get(line, {})
        unknown = next((formulas[c] for c in (table.text_column, table.label_column)
                        if c is not None and c in formulas), None)
        if unknown is not None:
            _problem(table, FORMULA_WITHOUT_VALUE, "formula_without_value", line=line,
                     cell=unknown)
            continue
        if table.text_column >= len(cells):
            _problem(table, NO_TEXT_CELL, "no_text_cell", line=line,
                     column=table.text_column + 1)
            continue
        text = normalise_text(cells[table.text_column])
        if not text:
            _problem(table, EMPTY_TEXT, "empty_text", line=line)
            continue
        if len(text) > MAX_TEXT_CHARS:
            _problem(table, TEXT_TOO_LONG, "text_too_long", line=line, chars=len(text),
                     limit=MAX_TEXT_CHARS)
            continue
        label: str | None = None
        if table.label_column is not None and table.label_column < len(cells):
            raw = cells[table.label_column]
            label = normalise_label(raw) or None
            if label is not None:  # the variants are stored in the report: no NUL there
                raw_labels.setdefault(label, set()).add(raw.replace("\x00", ""))
        table.rows.append(TextRow(line, text, label))
    table.label_variants = {label: sorted(v for v in variants if v != label)
                            for label, variants in sorted(raw_labels.items())
                            if any(v != label for v in variants)}


def read_text_file(data: bytes, *, name: str, encoding: str | None = None) -> DecodedText:
    """One ``.txt`` file as one text (normalised; the whole file, however many lines). Raises
    TextFileError naming the file when it does not decode or holds only whitespace."""
    decoded = decode_text(data, name=name, encoding=encoding)
    text = normalise_text(decoded.text)
    if not text:
        raise TextFileError(_(NO_TEXT) % {"file": name})
    return DecodedText(text, decoded.encoding)


__all__ = ["DecodedText", "FILE_TEMPLATES", "LABEL_COLUMN_NAMES", "MAX_COLUMNS", "MAX_ROWS",
           "MAX_TEXT_CHARS", "ROW_TEMPLATES", "TABLE_SUFFIXES", "TEXT_COLUMN_NAMES",
           "TEXT_SUFFIXES", "TextFileError", "TextRow", "TextTable", "WORKBOOK_SUFFIXES",
           "decode_text", "normalise_label", "normalise_text", "read_text_file",
           "read_text_table", "table_from_records"]
