"""XLSX workbooks into text classification datasets (``sampan.datasets.formats.text_xlsx``): the
same columns and row problems as a CSV, by sheet row; cells as text; a sheet chosen by name;
workbooks that are not one, or whose zip directory promises too much, refused before openpyxl
parses anything. The workbooks are written here with openpyxl (and edited as zips where a real
file differs from what openpyxl writes: cached formula values, a lying central directory)."""

from __future__ import annotations

import datetime
import io
import re
import struct
import zipfile
from pathlib import Path
from typing import Any

import pytest
from openpyxl import Workbook

from sampan.datasets.archives import ArchiveLimits
from sampan.datasets.formats import text_xlsx
from sampan.datasets.formats.text_table import MAX_ROWS, TextFileError
from sampan.datasets.formats.text_xlsx import cell_text, read_text_xlsx

SHEET1 = "xl/worksheets/sheet1.xml"


def workbook(*sheets: tuple[str, list[list[Any]]]) -> bytes:
    """An .xlsx of ``(sheet name, rows)``; a row's None is an empty cell."""
    book = Workbook()
    book.remove(book.active)
    for title, rows in sheets:
        sheet = book.create_sheet(title)
        for row in rows:
            sheet.append(row)
    buffer = io.BytesIO()
    book.save(buffer)
    return buffer.getvalue()


def edited(data: bytes, part: str, edit: Any) -> bytes:
    """``data`` with the zip entry ``part`` replaced by ``edit(its text)``."""
    source, target = zipfile.ZipFile(io.BytesIO(data)), io.BytesIO()
    with source, zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED) as out:
        for info in source.infolist():
            content = source.read(info)
            if info.filename == part:
                content = edit(content.decode()).encode()
            out.writestr(info, content)
    return target.getvalue()


def claimed_size(data: bytes, part: str, size: int) -> bytes:
    """``data`` whose central directory says ``part`` is ``size`` bytes uncompressed (its local
    header and its bytes unchanged): what a zip bomb's directory can say."""
    name = part.encode()
    at = 0
    while True:
        at = data.index(b"PK\x01\x02", at)
        name_length = struct.unpack_from("<H", data, at + 28)[0]
        if data[at + 46:at + 46 + name_length] == name:
            break
        at += 4
    return data[:at + 24] + struct.pack("<I", size) + data[at + 28:]


def read(tmp_path: Path, data: bytes, name: str = "t.xlsx", **options: Any) -> Any:
    path = tmp_path / "staged.bin"  # a staged upload's name says nothing of the format
    path.write_bytes(data)
    return read_text_xlsx(path, name=name, **options)


def test_chinese_english_emoji_cells_with_a_header_by_sheet_row(tmp_path: Path) -> None:
    data = workbook(("评论", [["text", "label"], ["今天天气很好 😀", "正面"],
                              ["Terrible service", "负面"], [None, None],
                              ["   ", "正面"], ["Ｆｕｌｌ　width label", "正面　"]]))
    table = read(tmp_path, data)
    assert (table.encoding, table.delimiter, table.sheet) == ("xlsx", "", "评论")
    assert table.header == ["text", "label"]
    assert [(r.line, r.text, r.label) for r in table.rows] == [
        (2, "今天天气很好 😀", "正面"), (3, "Terrible service", "负面"),
        (6, "Ｆｕｌｌ\u3000width label", "正面")]
    # row 4 is blank (skipped as a blank CSV line is); row 5's text is whitespace
    assert [(p["line"], p["code"], p["message"]) for p in table.problems] == [
        (5, "empty_text", "line 5: the text is empty: row skipped")]
    described = table.describe()
    assert described["encoding"] == "xlsx" and described["sheet"] == "评论"
    assert described["label_variants"] == {"正面": ["正面\u3000"]}


def test_no_header_the_column_with_fewer_values_is_the_label(tmp_path: Path) -> None:
    data = workbook(("Sheet", [[1, "物流很快"], [0, "质量很差"], [1, "Works great 👍"]]))
    table = read(tmp_path, data)
    assert table.header is None
    assert (table.text_column, table.label_column) == (1, 0)
    assert [(r.line, r.text, r.label) for r in table.rows] == [
        (1, "物流很快", "1"), (2, "质量很差", "0"), (3, "Works great 👍", "1")]


def test_integral_floats_are_whole_numbers_and_dates_iso_text(tmp_path: Path) -> None:
    data = workbook(("S", [["review", "stars", "when"],
                           ["good", 5, datetime.datetime(2024, 5, 1)],
                           ["fine", 3.0, datetime.datetime(2024, 5, 1, 13, 45)],
                           ["half", 2.5, datetime.date(2023, 12, 31)],
                           [datetime.datetime(2024, 2, 29), 1, None]]))
    # a float as another writer stores it (openpyxl writes 3.0 as "3")
    data = edited(data, SHEET1, lambda xml: xml.replace('<c r="B3" t="n"><v>3</v>',
                                                        '<c r="B3" t="n"><v>3.0</v>'))
    assert '<v>3.0</v>' in zipfile.ZipFile(io.BytesIO(data)).read(SHEET1).decode()
    table = read(tmp_path, data, label_column="stars")
    assert [(r.text, r.label) for r in table.rows] == [
        ("good", "5"), ("fine", "3"), ("half", "2.5"), ("2024-02-29", "1")]
    dates = read(tmp_path, data, text_column="when", label_column=0)
    assert [r.text for r in dates.rows] == ["2024-05-01", "2024-05-01T13:45:00", "2023-12-31"]
    assert [(p["line"], p["code"]) for p in dates.problems] == [(5, "no_text_cell")]


def test_cell_text_of_every_kind_of_value() -> None:
    assert [cell_text(v) for v in (None, "x", 7, 1.0, -2.0, 0.5, 0.1 + 0.2, True, False,
                                   datetime.time(8, 30), datetime.timedelta(hours=26))] == [
        "", "x", "7", "1", "-2", "0.5", "0.3", "TRUE", "FALSE", "08:30:00", "1 day, 2:00:00"]


def test_a_formula_gives_its_cached_value_and_one_without_a_value_is_reported(
        tmp_path: Path) -> None:
    data = workbook(("S", [["text", "label"], ["=CONCAT(\"a\",\"b\")", "x"],
                           ["=UPPER(\"ok\")", "y"], ["text with a label formula", "=1+1"],
                           ["plain", "z"], ["=LOWER(\"ALONE\")"]]))
    # openpyxl saves formulas without values (<v />); Excel saves the computed value: row 3's
    # as Excel would
    data = edited(data, SHEET1, lambda xml: re.sub(
        r'<c r="A3"><f>(.*?)</f><v ?/>', r'<c r="A3" t="str"><f>\1</f><v>OK computed</v>', xml))
    table = read(tmp_path, data)
    assert [(r.line, r.text, r.label) for r in table.rows] == [
        (3, "OK computed", "y"), (5, "plain", "z")]
    assert [(p["line"], p["code"], p["params"].get("cell")) for p in table.problems] == [
        (2, "formula_without_value", "A2"), (4, "formula_without_value", "B4"),
        (6, "formula_without_value", "A6")]
    assert table.problems[0]["message"] == (
        "line 2: cell A2 is a formula whose value the file does not hold (open and save it in "
        "Excel or LibreOffice to compute it): row skipped")


def test_a_formula_computing_an_empty_string_is_an_empty_text_not_a_missing_value(
        tmp_path: Path) -> None:
    data = workbook(("S", [["text", "label"], ["=IF(1,\"\",\"x\")", "a"], ["kept", "b"]]))
    data = edited(data, SHEET1, lambda xml: re.sub(
        r'<c r="A2"><f>(.*?)</f><v ?/>', r'<c r="A2" t="str"><f>\1</f><v></v>', xml))
    table = read(tmp_path, data)
    assert [r.text for r in table.rows] == ["kept"]
    assert [(p["line"], p["code"]) for p in table.problems] == [(2, "empty_text")]


def test_the_first_sheet_by_default_another_by_name_and_a_missing_name_lists_the_sheets(
        tmp_path: Path) -> None:
    data = workbook(("Notes", [["text"], ["first sheet"]]),
                    ("Reviews 2024", [["文本", "标签"], ["第二个表", "好"]]))
    assert [r.text for r in read(tmp_path, data).rows] == ["first sheet"]
    second = read(tmp_path, data, sheet="Reviews 2024")
    assert second.sheet == "Reviews 2024"
    assert [(r.line, r.text, r.label) for r in second.rows] == [(2, "第二个表", "好")]
    assert read(tmp_path, data, sheet="reviews 2024").sheet == "Reviews 2024"
    with pytest.raises(TextFileError) as missing:
        read(tmp_path, data, name="book.xlsx", sheet="Sheet1")
    assert str(missing.value) == (
        "book.xlsx: no sheet named 'Sheet1'; its sheets: 'Notes', 'Reviews 2024'")


def test_columns_by_number_or_name_and_the_csv_column_errors(tmp_path: Path) -> None:
    data = workbook(("S", [["id", "comment_text", "label"], [1, "good one", "pos"],
                           [2, "bad one", "neg", "extra"]]))
    with pytest.raises(TextFileError, match="choose the text column"):
        read(tmp_path, data, name="c.xlsx")
    table = read(tmp_path, data, text_column="comment_text", label_column=3)
    assert [(r.text, r.label) for r in table.rows] == [("good one", "pos")]
    assert [(p["line"], p["code"]) for p in table.problems] == [(3, "too_many_columns")]
    with pytest.raises(TextFileError, match="'nope' is not a column"):
        read(tmp_path, data, text_column="nope")
    with pytest.raises(TextFileError, match="the table has no rows"):
        read(tmp_path, workbook(("S", [[None], []])), name="empty.xlsx")


def test_rows_are_bounded_as_csv_rows_are(tmp_path: Path, monkeypatch: Any) -> None:
    monkeypatch.setattr(text_xlsx, "MAX_ROWS", 3)
    data = workbook(("S", [["text"], ["a"], ["b"], ["c"], ["d"]]))
    with pytest.raises(TextFileError) as refused:
        read(tmp_path, data, name="big.xlsx")
    assert str(refused.value) == "big.xlsx: more than 3 rows: split the table"
    assert MAX_ROWS == 1_000_000


def not_parsed(monkeypatch: Any) -> None:
    def load_workbook(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("openpyxl opened a workbook that should have been refused")

    monkeypatch.setattr(text_xlsx, "load_workbook", load_workbook)


def test_a_central_directory_claiming_gigabytes_is_refused_before_parsing(
        tmp_path: Path, monkeypatch: Any) -> None:
    bomb = claimed_size(workbook(("S", [["text"], ["x"]])), SHEET1, 0xF000_0000)
    assert zipfile.ZipFile(io.BytesIO(bomb)).getinfo(SHEET1).file_size == 0xF000_0000
    not_parsed(monkeypatch)
    with pytest.raises(TextFileError) as refused:
        read(tmp_path, bomb, name="bomb.xlsx")
    assert str(refused.value).startswith("bomb.xlsx: the workbook's part 'xl/worksheets/"
                                         "sheet1.xml' expands ")
    # the whole's limit, the ratio of each part aside
    with pytest.raises(TextFileError) as total:
        read(tmp_path, bomb, name="bomb.xlsx", limits=ArchiveLimits(max_ratio=1e12))
    assert re.fullmatch(r"bomb\.xlsx: the workbook's parts add up to \d+ bytes uncompressed "
                        r"\(limit 2147483648\): not read", str(total.value))


def test_a_zip_directory_over_the_upload_limits_is_refused_before_parsing(
        tmp_path: Path, monkeypatch: Any) -> None:
    data = workbook(("S", [["text"], ["x"]]))
    not_parsed(monkeypatch)
    with pytest.raises(TextFileError) as refused:
        read(tmp_path, data, name="many.xlsx", limits=ArchiveLimits(max_members=3))
    assert str(refused.value).startswith("many.xlsx: not read as an .xlsx workbook: too many "
                                         "entries: ")


def test_not_a_workbook_an_xls_and_a_damaged_one_are_refused_naming_the_file(
        tmp_path: Path) -> None:
    with pytest.raises(TextFileError) as xls:  # .xls and encrypted workbooks are OLE2 files
        read(tmp_path, text_xlsx.OLE2_MAGIC + bytes(504), name="old.xlsx")
    assert str(xls.value) == (
        "old.xlsx: an Excel 97-2003 workbook (.xls) or a password-protected one, not an .xlsx: "
        "save it as an .xlsx workbook without a password")
    with pytest.raises(TextFileError) as text:
        read(tmp_path, b"text,label\nhello,a\n", name="renamed.xlsx")
    assert str(text.value).startswith("renamed.xlsx: not read as an .xlsx workbook: not a "
                                      "readable zip archive")
    plain = io.BytesIO()
    with zipfile.ZipFile(plain, "w") as archive:
        archive.writestr("notes.txt", "not a workbook")
    with pytest.raises(TextFileError, match=r"^plain\.xlsx: not a readable \.xlsx workbook: "):
        read(tmp_path, plain.getvalue(), name="plain.xlsx")
    broken = edited(workbook(("S", [["text"], ["x"]])), SHEET1,
                    lambda xml: xml.replace("</sheetData>", "<row><c"))
    with pytest.raises(TextFileError, match=r"^broken\.xlsx: not a readable \.xlsx workbook: "):
        read(tmp_path, broken, name="broken.xlsx")


def test_reading_a_long_sheet_reports_its_progress(tmp_path: Path, monkeypatch: Any) -> None:
    monkeypatch.setattr(text_xlsx, "PROGRESS_ROWS", 2)
    data = workbook(("S", [["text"], ["a"], ["b"], ["c"], ["d"]]))
    seen: list[int] = []
    table = read(tmp_path, data, on_rows=seen.append)
    assert len(table.rows) == 4 and seen == [2, 4]


def far_cells(rows: int, text: str = "good", column: str = "XFD") -> bytes:
    """A workbook whose every row holds a text, a label and a value in ``column`` (a few bytes of
    XML each: ``XFD`` is column 16,384), shared strings and all: what a writer can produce."""
    data = workbook(("S", [["text", "label"], [text, "pos"]]))

    def edit(xml: str) -> str:
        body = "".join(f'<row r="{r}"><c r="A{r}" t="inlineStr"><is><t>{text}</t></is></c>'
                       f'<c r="B{r}" t="inlineStr"><is><t>pos</t></is></c>'
                       f'<c r="{column}{r}"><v>1</v></c></row>' for r in range(3, rows + 3))
        return re.sub(r"</row>\s*</sheetData>", "</row>" + body + "</sheetData>", xml)

    return edited(data, SHEET1, edit)


def test_a_far_cell_costs_no_padding_and_its_row_has_too_many_columns(tmp_path: Path) -> None:
    # 20,000 rows with a value in column XFD: padded, 327 million cells (2.6 GB measured)
    import tracemalloc

    data = far_cells(20_000)
    assert len(data) < 400_000
    tracemalloc.start()
    try:
        table = read(tmp_path, data)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 100 * 2**20, f"{peak / 2**20:.0f} MiB to read a 0.4 MB workbook"
    assert [(r.line, r.text) for r in table.rows] == [(2, "good")]
    assert len(table.problems) == 20_000
    assert table.problems[0] == {
        "line": 3, "code": "too_many_columns", "params": {"line": 3, "found": 16384,
                                                          "expected": 2},
        "message": "line 3 has 16384 columns, the header has 2: row skipped"}
    # a row one column wider than the first is read as a CSV row is
    data = far_cells(1, column="C")
    assert read(tmp_path, data).problems[0]["params"]["found"] == 3
    # and the first row itself may not reach that far
    data = edited(workbook(("S", [["text", "label"], ["good", "pos"]])), SHEET1,
                  lambda xml: xml.replace('<c r="B1"', '<c r="AMK1" t="inlineStr"><is><t>x</t>'
                                          '</is></c><c r="B1"', 1))
    with pytest.raises(TextFileError) as refused:
        read(tmp_path, data, name="wide.xlsx")
    assert str(refused.value) == ("wide.xlsx: row 1 has a value in column 1025; a text table "
                                  "has at most 1024 columns")


def test_one_shared_long_string_in_every_row_is_bounded_by_the_import_limit(
        tmp_path: Path) -> None:
    # one long string shared by every row: a small file that reads as gigabytes of text (the
    # string is random characters, so that no part compresses like a zip bomb)
    import random

    rng = random.Random(0)
    long = "".join(chr(rng.randint(0x4E00, 0x9FFF)) for _ in range(200_000))

    def shared(rows: int) -> bytes:
        """A workbook whose sheet refers ``rows`` times to shared string 0 (``long``)."""
        data = workbook(("S", [["text", "label"]]))
        source, target = zipfile.ZipFile(io.BytesIO(data)), io.BytesIO()
        main = "http://schemas.openxmlformats.org/"
        with source, zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED) as out:
            for info in source.infolist():
                content = source.read(info).decode()
                if info.filename == "[Content_Types].xml":
                    content = content.replace("</Types>", (
                        '<Override PartName="/xl/sharedStrings.xml" ContentType="application/'
                        'vnd.openxmlformats-officedocument.spreadsheetml.sharedStrings+xml"/>'
                        "</Types>"))
                elif info.filename == "xl/_rels/workbook.xml.rels":
                    content = content.replace("</Relationships>", (
                        f'<Relationship Id="rIdS" Type="{main}officeDocument/2006/'
                        'relationships/sharedStrings" Target="sharedStrings.xml"/>'
                        "</Relationships>"))
                elif info.filename == SHEET1:
                    body = "".join(f'<row r="{r}"><c r="A{r}" t="s"><v>0</v></c>'
                                   f'<c r="B{r}" t="inlineStr"><is><t>pos</t></is></c></row>'
                                   for r in range(2, rows + 2))
                    content = re.sub(r"</row>\s*</sheetData>",
                                     "</row>" + body + "</sheetData>", content)
                out.writestr(info, content.encode())
            out.writestr("xl/sharedStrings.xml", (
                f'<?xml version="1.0" encoding="UTF-8"?><sst xmlns="{main}spreadsheetml/2006/'
                f'main" count="1" uniqueCount="1"><si><t>{long}</t></si></sst>').encode())
        return target.getvalue()

    data = shared(300)  # 60 million characters of text from a file of ~0.7 MB
    assert len(data) < 1_000_000
    with pytest.raises(TextFileError) as refused:
        read(tmp_path, data, name="shared.xlsx", limits=ArchiveLimits(max_total_bytes=50_000_000))
    assert str(refused.value) == ("shared.xlsx: its cells hold more than 50000000 characters, "
                                  "more than an import may bring: split the workbook")
    # within the limit, such rows are read
    table = read(tmp_path, shared(20), limits=ArchiveLimits(max_total_bytes=50_000_000))
    assert len(table.rows) == 20 and table.rows[0].text == long
