"""Imports into a text classification dataset: CSV / TSV tables, XLSX workbooks and ``.txt``
files (loose, or in a zip of class folders), read by ``sampan.datasets.formats.text_table`` and
``text_xlsx``.

A text is a sample: stored whole in the database (``Sample.text``, no file), identified by the
sha256 of its normalised UTF-8 bytes, so the same text twice in a dataset is one sample (counted
as a duplicate; when the second copy carries another label, the report says so and the first
label stays). Rows are committed in batches of :data:`BATCH_ROWS` with a heartbeat after each,
so a cancelled or reaped import is taken back whole (``import_undo``).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from django.conf import settings
from django.db import transaction
from django.utils.translation import gettext as _
from django.utils.translation import gettext_noop

from sampan.core.names import display_name
from sampan.datasets.archives import ArchiveLimits, sort_labels
from sampan.datasets.formats.text_table import (TABLE_SUFFIXES, TEXT_SUFFIXES, WORKBOOK_SUFFIXES,
                                                TextFileError, TextRow, TextTable,
                                                normalise_label, read_text_file, read_text_table)
from sampan.datasets.formats.text_xlsx import read_text_xlsx
from sampan.datasets.models import Annotation, AnnotationKind, ClassLabel, Dataset, Sample
from sampan.datasets.services import class_labels_ensure

#: rows committed together (one transaction, one heartbeat)
BATCH_ROWS = 500
#: duplicates listed by name in the report (all are counted)
LISTED_DUPLICATES = 200

NOT_A_TEXT_FILE = gettext_noop(
    "not a text file: a text classification dataset imports CSV, TSV, XLSX or .txt files")
SAME_TEXT = gettext_noop("same text as %(first)s")
SAME_TEXT_OTHER_LABEL = gettext_noop(
    "same text as %(first)s, which has the label %(kept)r; the label %(dropped)r was not used")
TEXT_TEMPLATES = (NOT_A_TEXT_FILE, SAME_TEXT, SAME_TEXT_OTHER_LABEL)


@dataclass(frozen=True)
class TextOptions:
    """How the person asked for tables to be read (the import dialog): 1-based column numbers or
    header names, None to let the reader choose; ``label_column`` 0: no labels; ``encoding`` a
    codec name, None to detect (CSV / TSV / .txt); ``sheet`` the worksheet of XLSX workbooks,
    None: the first."""

    text_column: int | str | None = None
    label_column: int | str | None = None
    encoding: str | None = None
    sheet: str | None = None

    @classmethod
    def from_json(cls, value: dict[str, Any] | None) -> TextOptions:
        value = value or {}
        return cls(value.get("text_column"), value.get("label_column"), value.get("encoding"),
                   value.get("sheet"))


@dataclass
class _Row:
    name: str  # "reviews.csv:12" or "pos/1.txt"
    text: str
    label: str | None
    digest: str = ""


@dataclass
class TextImport:
    """The result: counts and the report's lists (``rejected``/``duplicates``: ``{"name",
    "reason", "code"}``), and the tables read (``TextTable.describe()``)."""

    imported: int = 0
    duplicates: int = 0
    listed_duplicates: list[dict[str, Any]] = field(default_factory=list)
    rejected: list[dict[str, Any]] = field(default_factory=list)
    tables: list[dict[str, Any]] = field(default_factory=list)
    encodings: dict[str, int] = field(default_factory=dict)
    added_sample_ids: list[Any] = field(default_factory=list)

    def report(self) -> dict[str, Any]:
        return {"imported": self.imported, "duplicates": self.listed_duplicates,
                "rejected": self.rejected, "text": {
                    "tables": self.tables, "encodings": self.encodings,
                    "duplicates": self.duplicates,
                    "duplicates_listed": len(self.listed_duplicates)}}


def read_rows(files: list[tuple[str, Path, str | None]], options: TextOptions,
              result: TextImport,
              reading: Callable[[str, int], None] | None = None) -> list[_Row]:
    """Every usable text of ``files`` (``(shown name, local path, folder label)``), in order;
    what cannot be used goes to ``result.rejected``. ``reading(file, rows read)`` is called
    while a workbook is read (every ``text_xlsx.PROGRESS_ROWS`` rows: a long one takes a
    minute), for the job's heartbeat."""
    rows: list[_Row] = []
    for name, path, folder_label in files:
        suffix = Path(name).suffix.lower()
        try:
            if suffix in TABLE_SUFFIXES | WORKBOOK_SUFFIXES:
                table: TextTable
                if suffix in WORKBOOK_SUFFIXES:
                    # the bounds of the import's zips (imports._limits), checked before parsing
                    table = read_text_xlsx(path, name=name, text_column=options.text_column,
                                           label_column=options.label_column,
                                           sheet=options.sheet, limits=ArchiveLimits(
                                               max_total_bytes=settings.SAMPAN_IMPORT_MAX_BYTES),
                                           on_rows=_reading(reading, name))
                else:
                    table = read_text_table(path.read_bytes(), name=name,
                                            text_column=options.text_column,
                                            label_column=options.label_column,
                                            encoding=options.encoding)
                result.tables.append(table.describe())
                result.encodings[table.encoding] = result.encodings.get(table.encoding, 0) + 1
                result.rejected.extend({"name": f"{name}:{p['line']}", "reason": p["message"],
                                        "code": p["code"]} for p in table.problems)
                rows.extend(_row(f"{name}:{r.line}", r, folder_label) for r in table.rows)
            elif suffix in TEXT_SUFFIXES:
                decoded = read_text_file(path.read_bytes(), name=name,
                                         encoding=options.encoding)
                result.encodings[decoded.encoding] = result.encodings.get(decoded.encoding,
                                                                          0) + 1
                label = normalise_label(folder_label) if folder_label else None
                rows.append(_Row(name, decoded.text, label or None))
            else:
                result.rejected.append({"name": name, "reason": NOT_A_TEXT_FILE,
                                        "code": "not_a_text_file"})
        except TextFileError as exc:
            result.rejected.append({"name": name, "reason": str(exc), "code": "unreadable"})
    return rows


def _reading(reading: Callable[[str, int], None] | None, name: str
             ) -> Callable[[int], None] | None:
    return None if reading is None else (lambda rows: reading(name, rows))


def _row(name: str, row: TextRow, folder_label: str | None) -> _Row:
    label = row.label if row.label is not None else (
        normalise_label(folder_label) if folder_label else None)
    return _Row(name, row.text, label or None)


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def import_rows(*, dataset: Dataset, job: Any, rows: list[_Row], result: TextImport,
                heartbeat: Callable[[int, int], bool]) -> bool:
    """Store ``rows`` as samples of ``dataset`` (added by import job ``job``) with their class
    labels, :data:`BATCH_ROWS` per transaction; ``heartbeat(done, total)`` after each batch
    returns False to stop (cancelled or reaped: the caller undoes the import). Returns whether
    every batch was stored."""
    names = sort_labels({r.label for r in rows if r.label})
    labels: dict[str, ClassLabel] = (class_labels_ensure(dataset=dataset, names=names)
                                     if names else {})
    first: dict[str, _Row] = {}
    unique: list[_Row] = []
    for row in rows:
        row.digest = _digest(row.text)
        earlier = first.get(row.digest)
        if earlier is None:
            first[row.digest] = row
            unique.append(row)
        else:
            _duplicate(result, row, earlier.name, earlier.label)
    done = 0
    for start in range(0, len(unique), BATCH_ROWS):
        batch = unique[start:start + BATCH_ROWS]
        with transaction.atomic():
            stored = dict(Sample.objects.filter(
                dataset=dataset, content_sha256__in=[r.digest for r in batch])
                .values_list("content_sha256", "original_name"))
            fresh = [r for r in batch if r.digest not in stored]
            for row in batch:
                if row.digest in stored:
                    _duplicate(result, row, stored[row.digest], None)
            samples = Sample.objects.bulk_create([
                Sample(dataset=dataset, content_sha256=r.digest, file="", text=r.text,
                       original_name=display_name(r.name)[:500], width=0, height=0,
                       import_job=job) for r in fresh])
            Annotation.objects.bulk_create([
                Annotation(sample=sample, kind=AnnotationKind.CLASS,
                           class_label=labels[row.label])
                for sample, row in zip(samples, fresh, strict=True) if row.label])
        result.imported += len(fresh)
        done += len(batch)
        if not heartbeat(done, len(unique)):
            return False
    return True


def _duplicate(result: TextImport, row: _Row, first_name: str, kept: str | None) -> None:
    result.duplicates += 1
    if len(result.listed_duplicates) >= LISTED_DUPLICATES:
        return
    if row.label and kept and row.label != kept:
        reason = SAME_TEXT_OTHER_LABEL % {"first": first_name, "kept": kept,
                                          "dropped": row.label}
    else:
        reason = SAME_TEXT % {"first": first_name}
    result.listed_duplicates.append({"name": row.name, "reason": reason, "code": "duplicate"})


def check_text_upload(names: list[str]) -> None:
    """Raise TextFileError when an upload to a text dataset holds a file of another kind than a
    table, a workbook, a .txt file or a zip (said at once, before anything is queued)."""
    for name in names:
        suffix = Path(name).suffix.lower()
        if suffix not in TABLE_SUFFIXES | WORKBOOK_SUFFIXES | TEXT_SUFFIXES | {".zip"}:
            raise TextFileError(_("%(file)s: %(reason)s")
                                % {"file": name, "reason": _(NOT_A_TEXT_FILE)})


__all__ = ["BATCH_ROWS", "TEXT_TEMPLATES", "TextImport", "TextOptions", "check_text_upload",
           "import_rows", "read_rows"]
