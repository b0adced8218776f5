import { screen, within } from "@testing-library/react";
import { describe, expect, it } from "vitest";

import { json, renderRoutes } from "../../test/render";
import { ImportJobCard } from "./ImportJobCard";

// an import job of two tables into a text dataset, as GET imports/{id}/ answers it
// (platform/sampan/datasets/imports.py, text_imports.py)
const report = {
  imported: 4,
  duplicates: [
    { name: "t.csv:5", code: "duplicate", reason: "same text as t.csv:2, which has the label 'pos'; the label 'neg' was not used" },
  ],
  ignored: [],
  rejected: [
    { name: "t.csv:3", code: "too_many_columns", reason: "line 3 has 3 columns, the header has 2: row skipped" },
    { name: "t.csv:4", code: "empty_text", reason: "line 4: the text is empty: row skipped" },
  ],
  counts: { imported: 4, duplicates: 250, ignored: 0, rejected: 2 },
  text: {
    tables: [
      { file: "gbk.csv", encoding: "gb18030", delimiter: ",", header: null, text_column: 0, label_column: 1, rows: 2, skipped: 0, label_variants: { 正面: ["正面 ", "正面　"] } },
      { file: "t.csv", encoding: "utf-8-sig", delimiter: "tab", header: ["text", "label"], text_column: 0, label_column: null, rows: 2, skipped: 2, label_variants: {} },
      { file: "book.xlsx", encoding: "xlsx", delimiter: "", sheet: "评论", header: ["text", "label"], text_column: 0, label_column: 1, rows: 0, skipped: 0, label_variants: {} },
    ],
    encodings: { gb18030: 1, "utf-8-sig": 2, xlsx: 1 },
    duplicates: 250,
    duplicates_listed: 1,
  },
};

function server() {
  return (async (request: Request) => {
    const url = new URL(request.url);
    if (url.pathname === "/api/v1/projects/p1/imports/job-1/")
      return json(200, { id: "job-1", dataset_id: "d1", status: "SUCCEEDED", progress: { fraction: 1 }, report, error: "" });
    return json(404, { error: { code: "not_found", message: url.pathname } });
  }) as unknown as typeof globalThis.fetch;
}

describe("the import report of a text dataset", () => {
  it("shows each file's encoding, how its table was read, merged label spellings, rejected rows by line and every duplicate", async () => {
    renderRoutes([{ path: "/", element: <ImportJobCard projectId="p1" datasetId="d1" jobId="job-1" /> }], "/", server());
    const text = await screen.findByTestId("text-report");

    // encodings: files per codec, as people name them
    expect(within(text).getByTestId("text-encodings")).toHaveTextContent("GB18030 / GBK: 1 file");
    expect(within(text).getByTestId("text-encodings")).toHaveTextContent("UTF-8 (BOM): 2 files");

    // the tables: header, columns (1-based, with the header's names), rows and skipped rows
    const tables = within(text).getByTestId("text-tables");
    const gbk = within(tables).getByText("gbk.csv").closest("tr")!;
    expect(gbk).toHaveTextContent("GB18030 / GBK");
    expect(gbk).toHaveTextContent("none"); // no header
    expect(gbk).toHaveTextContent("Column 1");
    expect(gbk).toHaveTextContent("Column 2");
    const t = within(tables).getByText("t.csv").closest("tr")!;
    expect(t).toHaveTextContent("text | label");
    expect(t).toHaveTextContent("tab");
    expect(t).toHaveTextContent("1 · text");
    expect(t).toHaveTextContent("no labels");
    // a workbook: the worksheet read instead of a delimiter, and its format named
    const book = within(tables).getByText("book.xlsx").closest("tr")!;
    expect(book).toHaveTextContent("Excel (XLSX)");
    expect(book).toHaveTextContent("worksheet “评论”");
    expect(within(text).getByTestId("text-encodings")).toHaveTextContent("Excel (XLSX): 1 file");

    // label spellings merged, their spaces visible
    const variants = within(text).getByTestId("label-variants");
    expect([...variants.querySelectorAll("li")].map((li) => li.textContent)).toEqual(["“正面 ” → “正面” (gbk.csv)", "“正面　” → “正面” (gbk.csv)"]);

    // every duplicate counted (250), though the report lists one, and shown once: in the card's
    // counts, not again in the text part
    const card = screen.getByTestId("import-job");
    expect(within(card).getByText("Duplicates").closest(".ant-statistic")).toHaveTextContent("250");
    expect(within(card).getAllByText(/^Duplicate/).filter((e) => e.closest(".ant-statistic"))).toHaveLength(1);
    expect(within(text).queryByText(/duplicate/i)).toBeNull();
    expect(within(card).queryByText("Duplicate texts")).toBeNull();

    // rejected rows by file:line with the reason
    const rejected = within(card).getByText("t.csv:3").closest("tr")!;
    expect(rejected).toHaveTextContent("line 3 has 3 columns, the header has 2: row skipped");
    expect(within(card).getByText("t.csv:4").closest("tr")).toHaveTextContent("the text is empty");
  });

  it("leaves image imports as they were", async () => {
    const image = { imported: 3, duplicates: [], ignored: [], rejected: [], counts: { imported: 3, duplicates: 0, ignored: 0, rejected: 0 } };
    const fetch = (async () => json(200, { id: "job-1", dataset_id: "d1", status: "SUCCEEDED", progress: {}, report: image, error: "" })) as unknown as typeof globalThis.fetch;
    renderRoutes([{ path: "/", element: <ImportJobCard projectId="p1" datasetId="d1" jobId="job-1" /> }], "/", fetch);
    expect(await screen.findByText("Every file was imported.")).toBeInTheDocument();
    expect(screen.queryByTestId("text-report")).toBeNull();
  });
});
