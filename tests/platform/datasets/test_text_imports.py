"""Text classification datasets through the REST API: CSV / TSV / .txt imports (the issue's bad
inputs), duplicates, labeling, a version; what images have that texts do not is refused clearly."""

from __future__ import annotations

import codecs
import io
import zipfile
from typing import Any

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from sampan.datasets.imports import import_job_run
from sampan.datasets.models import Sample

pytestmark = pytest.mark.django_db


@pytest.fixture
def ctx(project_with_roles: dict[str, Any], api: Any) -> dict[str, Any]:
    client = api(project_with_roles["editor"])
    project = project_with_roles["project"]
    base = f"/api/v1/projects/{project.pk}"
    answer = client.post(f"{base}/datasets/", {"name": "reviews",
                                               "task_type": "text_classification"},
                         format="json")
    assert answer.status_code == 201, answer.json()
    return {"client": client, "base": base, "dataset": answer.json()}


def post(ctx: dict[str, Any], files: dict[str, bytes], **extra: str) -> Any:
    return ctx["client"].post(
        f"{ctx['base']}/datasets/{ctx['dataset']['id']}/imports/",
        {"files": [SimpleUploadedFile(name, data) for name, data in files.items()], **extra},
        format="multipart")


def run(ctx: dict[str, Any], files: dict[str, bytes], **extra: str) -> dict[str, Any]:
    answer = post(ctx, files, **extra)
    assert answer.status_code == 202, answer.json()
    import_job_run(job_id=answer.json()["id"])
    return ctx["client"].get(f"{ctx['base']}/imports/{answer.json()['id']}/").json()


def samples(ctx: dict[str, Any]) -> list[dict[str, Any]]:
    answer = ctx["client"].get(f"{ctx['base']}/datasets/{ctx['dataset']['id']}/samples/",
                               {"page_size": 200})
    assert answer.status_code == 200, answer.json()
    return list(answer.json()["results"])


def labels_of(ctx: dict[str, Any]) -> dict[str, str | None]:
    names = {c["id"]: c["name"] for c in ctx["client"].get(
        f"{ctx['base']}/datasets/{ctx['dataset']['id']}/").json()["class_labels"]}
    return {s["text"]: next((names[a["class_label_id"]] for a in s["annotations"]), None)
            for s in samples(ctx)}


def test_a_gbk_csv_and_a_bom_csv_import_exactly_and_say_their_encodings(ctx: dict[str, Any]
                                                                        ) -> None:
    job = run(ctx, {"gbk.csv": "今天天气很好,正面\n服务太差了,负面\n".encode("gbk"),
                    "bom.csv": codecs.BOM_UTF8 + "text,label\n质量不错,正面 \n".encode()})
    assert job["status"] == "SUCCEEDED", job
    assert job["report"]["counts"]["imported"] == 3
    assert job["report"]["text"]["encodings"] == {"gb18030": 1, "utf-8-sig": 1}
    assert [t["header"] for t in job["report"]["text"]["tables"]] == [None, ["text", "label"]]
    assert labels_of(ctx) == {"今天天气很好": "正面", "服务太差了": "负面", "质量不错": "正面"}
    sample = samples(ctx)[0]
    assert sample["image_url"] is None and sample["width"] == 0
    assert ctx["client"].get(f"{ctx['base']}/samples/{sample['id']}/image/").status_code == 404


def test_bad_rows_are_named_by_line_duplicates_counted_and_the_rest_imported(
        ctx: dict[str, Any]) -> None:
    table = ("text,label\n"
             "\"good, really\",pos\n"    # line 2
             "too,many,cells\n"         # line 3
             "\"\",neg\n"                # line 4: empty text
             "\"good, really\",neg\n"   # line 5: same text, another label
             "fine\r\nagain,pos\n")     # lines 6-7: an unquoted CR LF ends a record
    job = run(ctx, {"t.csv": table.encode()})
    assert job["status"] == "SUCCEEDED", job
    report = job["report"]
    assert [(r["name"], r["code"]) for r in report["rejected"]] == [
        ("t.csv:3", "too_many_columns"), ("t.csv:4", "empty_text")]
    assert report["rejected"][0]["reason"] == (
        "line 3 has 3 columns, the header has 2: row skipped")
    assert report["duplicates"] == [{
        "name": "t.csv:5", "code": "duplicate",
        "reason": "same text as t.csv:2, which has the label 'pos'; the label 'neg' was not "
                  "used"}]
    assert report["counts"]["duplicates"] == 1
    assert labels_of(ctx) == {"good, really": "pos", "fine": None, "again": "pos"}


def test_the_same_texts_imported_again_are_duplicates_not_new_samples(ctx: dict[str, Any]
                                                                      ) -> None:
    data = {"a.csv": b"text,label\none,x\ntwo,y\n"}
    run(ctx, data)
    again = run(ctx, data)
    assert again["report"]["counts"] == {"imported": 0, "duplicates": 2, "ignored": 0,
                                         "rejected": 0}
    assert Sample.objects.filter(dataset_id=ctx["dataset"]["id"]).count() == 2


def test_txt_files_in_class_folders_and_a_table_inside_a_zip(ctx: dict[str, Any]) -> None:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("reviews/正面/1.txt", "很好用\n推荐".encode())
        archive.writestr("reviews/负面/2.txt", "太慢了".encode("gbk"))
        archive.writestr("reviews/README.txt", b"about this data")
        archive.writestr("reviews/more.tsv", "text\tlabel\nok 👍\t正面\n".encode())
    job = run(ctx, {"texts.zip": buffer.getvalue()})
    assert job["status"] == "SUCCEEDED", job
    assert labels_of(ctx) == {"很好用\n推荐": "正面", "太慢了": "负面", "ok 👍": "正面"}
    assert [i["name"] for i in job["report"]["ignored"]] == ["reviews/README.txt"]


def test_chosen_columns_and_encoding_from_the_import_dialog(ctx: dict[str, Any]) -> None:
    table = "id;body;stars\n".replace(";", ",") + "1,這家很好,5\n2,很差,1\n"
    job = run(ctx, {"big5.csv": table.encode("big5")}, text_column="body",
              label_column="stars", encoding="big5")
    assert job["status"] == "SUCCEEDED", job
    assert labels_of(ctx) == {"這家很好": "5", "很差": "1"}
    refused = post(ctx, {"a.csv": b"x"}, encoding="klingon")
    assert refused.status_code == 400 and refused.json()["error"]["field"] == "encoding"


def test_an_image_or_an_unreadable_table_is_refused_by_name(ctx: dict[str, Any]) -> None:
    answer = post(ctx, {"cat.png": b"\x89PNG\r\n\x1a\n"})
    assert answer.status_code == 400
    assert answer.json()["error"]["field"] == "files"
    assert "cat.png" in answer.json()["error"]["message"]
    job = run(ctx, {"latin.csv": "text\ncafé crème\n".encode("cp1252")})
    assert job["report"]["rejected"][0]["name"] == "latin.csv"
    assert "neither UTF-8" in job["report"]["rejected"][0]["reason"]


def test_a_labelled_text_dataset_freezes_a_version(ctx: dict[str, Any]) -> None:
    rows = "".join(f"text {i},{'ab'[i % 2]}\n" for i in range(20))
    run(ctx, {"v.csv": ("text,label\n" + rows).encode()})
    answer = ctx["client"].post(
        f"{ctx['base']}/datasets/{ctx['dataset']['id']}/versions/",
        {"split": {"val": 0.2, "test": 0.2}}, format="json")
    assert answer.status_code == 201, answer.json()
    version = answer.json()
    assert version["task_type"] == "text_classification"
    assert version["labels"] == ["a", "b"]
    assert sum(version["stats"]["splits"].values()) == 20


def test_search_finds_texts_case_insensitively(ctx: dict[str, Any]) -> None:
    run(ctx, {"s.csv": "text,label\nGreat phone,pos\n手机很好,pos\nslow,neg\n".encode()})
    url = f"{ctx['base']}/datasets/{ctx['dataset']['id']}/samples/"
    found = ctx["client"].get(url, {"search": "great"}).json()["results"]
    assert [s["text"] for s in found] == ["Great phone"]
    found = ctx["client"].get(url, {"search": "手机"}).json()["results"]
    assert [s["text"] for s in found] == ["手机很好"]


def test_a_version_exports_as_a_csv_that_imports_back(ctx: dict[str, Any]) -> None:
    rows = ['"comma, and ""quote""",a', '"two\nlines",b', "好评 👍,a", "差评,b"]
    run(ctx, {"v.csv": ("text,label\n" + "\n".join(rows) + "\n").encode()})
    version = ctx["client"].post(f"{ctx['base']}/datasets/{ctx['dataset']['id']}/versions/",
                                 {"split": {"val": 0.25, "test": 0.0}}, format="json").json()
    answer = ctx["client"].get(f"{ctx['base']}/dataset-versions/{version['id']}/export/",
                               {"format": "csv"})
    assert answer.status_code == 200, answer.content[:300]
    data = b"".join(answer.streaming_content)
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        assert archive.namelist() == ["reviews-v1.csv"]
        csv_bytes = archive.read("reviews-v1.csv")
    assert csv_bytes.startswith(codecs.BOM_UTF8 + b"text,label,split\r\n")
    other = ctx["client"].post(f"{ctx['base']}/datasets/", {
        "name": "again", "task_type": "text_classification"}, format="json").json()
    back = {**ctx, "dataset": other}
    job = run(back, {"back.csv": csv_bytes})
    assert job["report"]["counts"]["imported"] == 4
    assert labels_of(back) == labels_of(ctx) == {
        'comma, and "quote"': "a", "two\nlines": "b", "好评 👍": "a", "差评": "b"}


def test_the_text_report_reads_in_chinese(ctx: dict[str, Any]) -> None:
    job = run(ctx, {"t.csv": b"text,label\nok,a\n,b\nok,b\n",
                    "latin.csv": "text\ncafé\n".encode("cp1252")})
    answer = ctx["client"].get(f"{ctx['base']}/imports/{job['id']}/",
                               HTTP_ACCEPT_LANGUAGE="zh-hans").json()
    reasons = {r["name"]: r["reason"] for r in answer["report"]["rejected"]}
    assert reasons["t.csv:3"] == "第 3 行：文本为空：已跳过该行"
    assert reasons["latin.csv"].startswith("latin.csv：内容既不是 UTF-8（第 8 个字节为 e9）")
    assert answer["report"]["duplicates"][0]["reason"] == (
        "与 t.csv:2 的文本相同，该文本的标签为 'a'；未使用标签 'b'")


def _workbook(*sheets: tuple[str, list[list[Any]]]) -> bytes:
    from openpyxl import Workbook

    book = Workbook()
    book.remove(book.active)
    for title, rows in sheets:
        sheet = book.create_sheet(title)
        for row in rows:
            sheet.append(row)
    buffer = io.BytesIO()
    book.save(buffer)
    return buffer.getvalue()


def test_an_xlsx_imports_with_its_rows_named_by_sheet_row_and_a_sheet_chosen(
        ctx: dict[str, Any]) -> None:
    data = _workbook(("Notes", [["text", "label"], ["物流很快 🚚", 1.0], ["Too slow", 0],
                                [None, 1], ["=CONCAT(\"a\",\"b\")", 0]]),
                     ("二月", [["文本", "标签"], ["第二张表", "好"]]))
    job = run(ctx, {"reviews.xlsx": data})
    assert job["status"] == "SUCCEEDED", job
    assert labels_of(ctx) == {"物流很快 🚚": "1", "Too slow": "0"}
    assert [(r["name"], r["code"]) for r in job["report"]["rejected"]] == [
        ("reviews.xlsx:4", "empty_text"), ("reviews.xlsx:5", "formula_without_value")]
    assert job["report"]["text"]["encodings"] == {"xlsx": 1}
    (table,) = job["report"]["text"]["tables"]
    assert (table["sheet"], table["encoding"], table["header"]) == (
        "Notes", "xlsx", ["text", "label"])
    chinese = ctx["client"].get(f"{ctx['base']}/imports/{job['id']}/",
                                HTTP_ACCEPT_LANGUAGE="zh-hans").json()
    assert chinese["report"]["rejected"][1]["reason"] == (
        "第 5 行：单元格 A5 是公式，但文件中没有保存它的计算结果（请在 Excel 或 LibreOffice 中"
        "打开并保存以计算它）：已跳过该行")

    second = run(ctx, {"reviews.xlsx": data}, sheet="二月")
    assert second["report"]["counts"]["imported"] == 1, second["report"]
    assert second["report"]["text"]["tables"][0]["sheet"] == "二月"
    missing = run(ctx, {"reviews.xlsx": data}, sheet="March")
    assert missing["report"]["rejected"] == [{
        "name": "reviews.xlsx", "code": "unreadable",
        "reason": "reviews.xlsx: no sheet named 'March'; its sheets: 'Notes', '二月'"}]


def test_an_xlsx_inside_a_zip_of_tables_and_a_corrupt_one_beside_it(ctx: dict[str, Any]
                                                                    ) -> None:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("tables/good.xlsx", _workbook(("S", [["review", "class"],
                                                              ["很好用", "正面"]])))
        archive.writestr("tables/broken.xlsx", b"PK\x03\x04 not really a workbook")
        archive.writestr("tables/more.csv", "text,label\nok 👍,正面\n".encode())
    job = run(ctx, {"tables.zip": buffer.getvalue()})
    assert job["status"] == "SUCCEEDED", job
    assert labels_of(ctx) == {"很好用": "正面", "ok 👍": "正面"}
    (rejected,) = job["report"]["rejected"]
    assert rejected["name"] == "tables/broken.xlsx" and rejected["code"] == "unreadable"
    assert rejected["reason"].startswith("tables/broken.xlsx: not read as an .xlsx workbook")
    assert job["report"]["text"]["encodings"] == {"xlsx": 1, "utf-8": 1}


def test_reading_a_long_workbook_keeps_the_job_alive(ctx: dict[str, Any], monkeypatch: Any
                                                     ) -> None:
    from sampan.datasets import imports
    from sampan.datasets.formats import text_xlsx

    beats: list[str] = []
    real = imports.job_report_progress

    def spy(model: Any, pk: Any, progress: dict[str, Any]) -> bool:
        beats.append(progress.get("message", ""))
        return bool(real(model, pk, progress))

    monkeypatch.setattr(text_xlsx, "PROGRESS_ROWS", 2)
    monkeypatch.setattr(imports, "EXTRACT_HEARTBEAT_S", 0.0)
    monkeypatch.setattr(imports, "job_report_progress", spy)
    job = run(ctx, {"long.xlsx": _workbook(("S", [["text"], *[[f"t{i}"] for i in range(5)]]))})
    assert job["status"] == "SUCCEEDED" and job["report"]["counts"]["imported"] == 5
    assert beats[:3] == ["reading long.xlsx: 2 rows", "reading long.xlsx: 4 rows",
                         "reading long.xlsx: 6 rows"]
