"""Reading texts from CSV / TSV / .txt files (``sampan.datasets.formats.text_table``): the
encodings people's files come in, RFC 4180 quoting, and every row problem reported by line."""

from __future__ import annotations

import codecs

import pytest

from sampan.datasets.formats.text_table import (TextFileError, decode_text, normalise_label,
                                                read_text_file, read_text_table)


def test_a_utf8_bom_does_not_stick_to_the_first_column_name() -> None:
    table = read_text_table(codecs.BOM_UTF8 + "text,label\n好看,正面\n".encode(), name="a.csv")
    assert table.encoding == "utf-8-sig"
    assert table.header == ["text", "label"]
    assert (table.text_column, table.label_column) == (0, 1)
    assert [(r.text, r.label) for r in table.rows] == [("好看", "正面")]


def test_a_gbk_csv_is_read_exactly() -> None:
    data = "今天天气很好,正面\n服务太差了,负面\n".encode("gbk")
    table = read_text_table(data, name="gbk.csv")
    assert table.encoding == "gb18030"
    assert table.header is None
    assert [(r.line, r.text, r.label) for r in table.rows] == [
        (1, "今天天气很好", "正面"), (2, "服务太差了", "负面")]


def test_utf16_with_a_byte_order_mark_and_tabs() -> None:
    data = "label\ttext\r\n正面\t质量不错，物流快\r\n".encode("utf-16")
    table = read_text_table(data, name="reviews.tsv")
    assert table.encoding == "utf-16" and table.delimiter == "\t"
    assert (table.text_column, table.label_column) == (1, 0)
    assert [(r.text, r.label) for r in table.rows] == [("质量不错，物流快", "正面")]


def test_quoted_commas_quotes_and_newlines_stay_inside_their_text() -> None:
    data = (b'text,label\n"first, with a comma",a\n"two\r\nlines ""quoted""",b\nlast,a\n'
)
    table = read_text_table(data, name="q.csv")
    assert [(r.line, r.text, r.label) for r in table.rows] == [
        (2, "first, with a comma", "a"), (3, 'two\nlines "quoted"', "b"), (5, "last", "a")]


def test_bad_rows_are_reported_by_line_and_the_rest_is_read() -> None:
    data = b"text,label\nok one,a\ntoo,many,columns\n   ,b\n\nok two,b\n"
    table = read_text_table(data, name="bad.csv")
    assert [r.text for r in table.rows] == ["ok one", "ok two"]
    assert [(p["line"], p["code"]) for p in table.problems] == [
        (3, "too_many_columns"), (4, "empty_text")]
    assert table.problems[0]["message"] == (
        "line 3 has 3 columns, the header has 2: row skipped")
    assert table.problems[1]["message"] == "line 4: the text is empty: row skipped"


def test_a_one_megabyte_text_is_kept_whole() -> None:
    long = "好" * 1_000_000
    table = read_text_table(f"text,label\n{long},a\n".encode(), name="long.csv")
    assert len(table.rows[0].text) == 1_000_000


def test_label_variants_are_one_class_and_reported() -> None:
    data = "text,label\n一,正面\n二,正面 \n三,正面\u3000\n四,ＡＢ\n五,AB\n".encode()
    table = read_text_table(data, name="labels.csv")
    assert {r.label for r in table.rows} == {"正面", "AB"}
    assert table.label_variants == {"AB": ["ＡＢ"], "正面": ["正面 ", "正面\u3000"]}
    assert normalise_label(" traffic  light ") == "traffic light"


def test_mixed_scripts_emoji_and_traditional_characters_are_stored_as_written() -> None:
    texts = ["Great 手机 👍🏽", "這個產品很好", "这个产品很好", "e\u0301clair"]
    data = ("text\n" + "\n".join(texts) + "\n").encode()
    table = read_text_table(data, name="mixed.csv")
    assert [r.text for r in table.rows] == texts[:3] + ["\u00e9clair"]  # NFC
    assert all(r.label is None for r in table.rows)


def test_without_a_header_the_label_is_the_column_with_fewer_values() -> None:
    data = "正面,很好用\n负面,太慢了\n正面,不错\n".encode()
    table = read_text_table(data, name="x.csv")
    assert (table.text_column, table.label_column) == (1, 0)
    assert [r.label for r in table.rows] == ["正面", "负面", "正面"]


def test_chosen_columns_by_name_or_number_and_no_label() -> None:
    data = b"id,body,sentiment\n1,fine,pos\n2,bad,neg\n"
    by_name = read_text_table(data, name="t.csv", text_column="body", label_column="sentiment")
    by_number = read_text_table(data, name="t.csv", text_column=2, label_column=3)
    assert [(r.text, r.label) for r in by_name.rows] == [("fine", "pos"), ("bad", "neg")]
    assert by_number.rows == by_name.rows
    unlabeled = read_text_table(data, name="t.csv", text_column="body", label_column=0)
    assert [r.label for r in unlabeled.rows] == [None, None]
    with pytest.raises(TextFileError, match=r"t.csv: text_column 'review' is not a column"):
        read_text_table(data, name="t.csv", text_column="review")


def test_a_header_without_a_text_column_asks_for_one() -> None:
    with pytest.raises(TextFileError, match="choose the text column"):
        read_text_table(b"a,b,label\nx,y,z\n", name="h.csv")


def test_undecodable_bytes_name_the_file_and_the_offset() -> None:
    with pytest.raises(TextFileError, match=r"latin\.csv: the bytes are neither UTF-8 \(byte 3"):
        read_text_table(b"abc\x80\xff\n", name="latin.csv")
    with pytest.raises(TextFileError, match="unknown encoding 'klingon'"):
        decode_text(b"x", name="a.txt", encoding="klingon")
    assert decode_text("café".encode("cp1252"), name="a.txt", encoding="cp1252").text == "café"


def test_a_txt_file_is_one_text() -> None:
    assert read_text_file(b"\xef\xbb\xbfline one\r\nline two\r\n", name="a.txt").text == (
        "line one\nline two")
    with pytest.raises(TextFileError, match="a.txt: the file holds no text"):
        read_text_file(b" \n\t", name="a.txt")
    with pytest.raises(TextFileError, match="has no rows"):
        read_text_table(b"\n\n", name="empty.csv")


def test_nul_characters_are_removed_from_texts_and_labels() -> None:
    # Python's csv keeps NUL; PostgreSQL refuses it in text (the row's insert failed), and the
    # agent's text rule removes it: the stored text is what a device classifies
    table = read_text_table(b"text,label\na\x00b good,po\x00s\n\x00,neg\n", name="nul.csv")
    assert [(r.text, r.label) for r in table.rows] == [("ab good", "pos")]
    assert [p["code"] for p in table.problems] == ["empty_text"]
    assert normalise_label("tr\x00affic light") == "traffic light"
    assert read_text_file(b"x\x00y", name="a.txt").text == "xy"


@pytest.mark.parametrize(("data", "encoding"), [
    (b"text,label\n\"a\\ud800b x\",pos\n", "unicode_escape"),
    (b"text,label\n\"a\\ud800b x\",pos\n", "raw_unicode_escape"),
    (b"text,label\na+2AA-b,pos\n", "utf-7"),
])
def test_an_encoding_that_decodes_to_a_lone_surrogate_names_the_file(data: bytes,
                                                                     encoding: str) -> None:
    # the whole import failed in the worker (UnicodeEncodeError while hashing the text): review
    with pytest.raises(TextFileError, match=r"s.csv: decoded as .* it holds a lone surrogate "
                                            r"U\+D800 at character \d+"):
        read_text_table(data, name="s.csv", encoding=encoding)


def test_label_variants_keep_no_nul() -> None:
    table = read_text_table(b"text,label\none,pos\ntwo,p\x00os\nthree,pos\x00\n", name="v.csv")
    assert {r.label for r in table.rows} == {"pos"}
    assert "\x00" not in repr(table.label_variants)
