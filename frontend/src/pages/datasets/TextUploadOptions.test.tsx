import { fireEvent, screen, waitFor, within } from "@testing-library/react";
import userEvent from "@testing-library/user-event";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";

import { json, renderRoutes } from "../../test/render";
import { bomCsv, GBK_CSV } from "./textTable.fixture";
import { xlsxFile } from "./textXlsx.fixture";
import { UploadPanel } from "./UploadPanel";

const routes = [{ path: "/p/:projectId", element: <UploadPanel projectId="p1" datasetId="d1" /> }];

function server(taskType = "text_classification") {
  return (async (request: Request) => {
    const url = new URL(request.url);
    if (url.pathname === "/api/v1/projects/p1/datasets/d1/")
      return json(200, { id: "d1", name: "reviews", task_type: taskType, description: "", created_at: "2026-12-01T10:00:00Z", class_labels: [] });
    if (url.pathname === "/api/v1/projects/p1/imports/job-1/")
      return json(200, { id: "job-1", dataset_id: "d1", status: "RUNNING", progress: {}, report: {}, error: "" });
    if (url.pathname === "/api/v1/projects/") return json(200, []);
    return json(404, { error: { code: "not_found", message: url.pathname } });
  }) as unknown as typeof globalThis.fetch;
}

/** The multipart upload's XMLHttpRequest (api/upload.ts): what it sent, answered with a queued job. */
const sent: { url: string; form: FormData }[] = [];
class FakeXhr {
  upload = { onprogress: null };
  status = 202;
  statusText = "Accepted";
  responseText = JSON.stringify({ id: "job-1", dataset_id: "d1", status: "QUEUED", progress: {}, report: {}, error: "" });
  withCredentials = false;
  onload: (() => void) | null = null;
  onerror: (() => void) | null = null;
  onabort: (() => void) | null = null;
  private url = "";
  open(_method: string, url: string) {
    this.url = url;
  }
  setRequestHeader() {}
  abort() {}
  send(form: FormData) {
    sent.push({ url: this.url, form });
    setTimeout(() => this.onload?.(), 0);
  }
}

beforeEach(() => {
  sent.length = 0;
  vi.stubGlobal("XMLHttpRequest", FakeXhr);
});
afterEach(() => vi.unstubAllGlobals());

function choose(container: HTMLElement, file: File) {
  fireEvent.change(container.querySelector("input[type=file]") as HTMLInputElement, { target: { files: [file] } });
}

/** A preview column's title (the table may render its header cells more than once). */
const columnTitle = (preview: HTMLElement, number: number) => within(preview).getAllByTestId(`preview-column-${number}`)[0];

const shownValue = (label: string) => screen.getByRole("combobox", { name: label }).closest(".ant-select");

async function pick(label: string, option: string) {
  fireEvent.mouseDown(screen.getByRole("combobox", { name: label }));
  const item = await waitFor(() => {
    const found = [...document.querySelectorAll(".ant-select-item-option")].find(
      (o) => o.textContent === option && o.closest(".ant-select-dropdown:not(.ant-select-dropdown-hidden)"),
    );
    expect(found).toBeTruthy();
    return found as HTMLElement;
  });
  fireEvent.click(item);
}

describe("UploadPanel of a text classification dataset", () => {
  it("explains the files it takes and accepts tables, workbooks, .txt and zips", async () => {
    const { container } = renderRoutes(routes, "/p/p1", server());
    const help = await screen.findByTestId("text-formats");
    expect(help).toHaveTextContent("Files for text classification");
    expect(help.querySelector('[data-format="table"]')).toHaveTextContent("review,label");
    expect(help.querySelector('[data-format="table"]')).toHaveTextContent("CSV / TSV / XLSX");
    expect(screen.getByText(/Drop CSV, TSV, XLSX, \.txt or zip files here/)).toBeInTheDocument();
    expect(help.querySelector('[data-format="folders"]')).toHaveTextContent("positive/0001.txt");
    expect(container.querySelector("input[type=file]")).toHaveAttribute("accept", ".csv,.tsv,.tab,.xlsx,.txt,.zip");
    expect(screen.queryByText(/ImageNet-folder layout/)).toBeNull();
  });

  it("previews a UTF-8 CSV with a byte-order mark: its header's text and label columns", async () => {
    const { container } = renderRoutes(routes, "/p/p1", server());
    await screen.findByTestId("text-formats");
    const csv = bomCsv('id,review,sentiment\n1,"Great, really",pos\n2,"<b>Bad</b>",neg\n');
    choose(container, new File([csv], "reviews.csv", { type: "text/csv" }));

    const preview = await screen.findByTestId("text-preview");
    expect(within(preview).getByTestId("preview-encoding")).toHaveTextContent("Read as UTF-8 (BOM)");
    expect(preview).toHaveTextContent("the first row is a header");
    expect(shownValue("Text column")).toHaveTextContent("2 · review");
    expect(shownValue("Label column")).toHaveTextContent("3 · sentiment");
    expect(columnTitle(preview, 2)).toHaveTextContent("review" + "text");
    expect(columnTitle(preview, 3)).toHaveTextContent("sentiment" + "label");
    // the quoted comma stays in its cell; markup is shown as text
    expect(within(preview).getByText("Great, really")).toBeInTheDocument();
    expect(within(preview).getByText("<b>Bad</b>")).toBeInTheDocument();
    expect(preview.querySelector("b")).toBeNull();
    // the encoding select says what was detected
    expect(shownValue("Encoding")).toHaveTextContent("Automatic (UTF-8 (BOM))");
  });

  it("previews a GBK CSV with Chinese header names, and sends the columns chosen with the upload", async () => {
    const { container } = renderRoutes(routes, "/p/p1", server());
    await screen.findByTestId("text-formats");
    choose(container, new File([GBK_CSV], "评论.csv", { type: "text/csv" }));

    const preview = await screen.findByTestId("text-preview");
    expect(within(preview).getByTestId("preview-encoding")).toHaveTextContent("Read as GB18030 / GBK");
    expect(shownValue("Text column")).toHaveTextContent("2 · 文本");
    expect(shownValue("Label column")).toHaveTextContent("1 · 标签");
    expect(within(preview).getByText("今天天气很好")).toBeInTheDocument();
    expect(within(preview).getByText("今天很糟,不想出门")).toBeInTheDocument();

    // the server's own choice: no column fields
    await userEvent.click(screen.getByRole("button", { name: "Upload" }));
    await waitFor(() => expect(sent).toHaveLength(1));
    expect(sent[0]!.url).toBe("/api/v1/projects/p1/datasets/d1/imports/");
    expect((sent[0]!.form.get("files") as File).name).toBe("评论.csv");
    expect([...sent[0]!.form.keys()].sort()).toEqual(["files"]);
  });

  it("sends the label column 'no labels' and a chosen encoding as form fields", async () => {
    const { container } = renderRoutes(routes, "/p/p1", server());
    await screen.findByTestId("text-formats");
    choose(container, new File([GBK_CSV], "g.csv", { type: "text/csv" }));
    await screen.findByTestId("text-preview");

    await pick("Encoding", "GB18030 / GBK");
    await waitFor(() => expect(screen.getByTestId("preview-encoding")).toHaveTextContent("Read as GB18030 / GBK"));
    await pick("Label column", "No labels");
    await waitFor(() => expect(shownValue("Label column")).toHaveTextContent("No labels"));
    expect(columnTitle(screen.getByTestId("text-preview"), 1)).not.toHaveTextContent("label");

    await userEvent.click(screen.getByRole("button", { name: "Upload" }));
    await waitFor(() => expect(sent).toHaveLength(1));
    const form = sent[0]!.form;
    expect(Object.fromEntries([...form.entries()].filter(([key]) => key !== "files"))).toEqual({
      encoding: "gb18030",
      text_column: "文本",
      label_column: "0",
    });
  });

  it("says when a file is not in the chosen encoding, and when a header names no text column", async () => {
    const { container } = renderRoutes(routes, "/p/p1", server());
    await screen.findByTestId("text-formats");
    choose(container, new File([GBK_CSV], "g.csv", { type: "text/csv" }));
    await screen.findByTestId("text-preview");
    await pick("Encoding", "UTF-8");
    expect(await screen.findByTestId("preview-problem")).toHaveTextContent("g.csv: its first 256 KB are not UTF-8");

    await userEvent.click(screen.getByRole("button", { name: "Clear" }));
    choose(container, new File(["id,comment_text,label\n1,hello,a\n"], "x.csv", { type: "text/csv" }));
    expect(await screen.findByText("No header cell names a text column: choose the text column.")).toBeInTheDocument();
    expect(screen.getByRole("button", { name: "Upload" })).toBeDisabled();
    await pick("Text column", "2 · comment_text");
    await waitFor(() => expect(screen.getByRole("button", { name: "Upload" })).toBeEnabled());
  });

  it("previews an XLSX workbook's first sheet and sends the sheet chosen instead by name", async () => {
    const { container } = renderRoutes(routes, "/p/p1", server());
    await screen.findByTestId("text-formats");
    const file = await xlsxFile("评论.xlsx", [
      { sheet: "Notes", data: [["文本", "标签"], ["今天天气很好 😀", 1], ["Terrible service", 0]] },
      { sheet: "二月", data: [["id", "comment_text", "label"], [1, "第二张表的评论", 5.0], [2, "Second sheet", 4]] },
    ]);
    choose(container, file);

    const preview = await screen.findByTestId("text-preview");
    expect(within(preview).getByTestId("preview-encoding")).toHaveTextContent("Sheet “Notes” of the workbook");
    expect(shownValue("Text column")).toHaveTextContent("1 · 文本");
    expect(shownValue("Label column")).toHaveTextContent("2 · 标签");
    expect(within(preview).getByText("今天天气很好 😀")).toBeInTheDocument();
    expect(within(preview).getByText("1")).toBeInTheDocument();
    // a workbook has no encoding to choose
    expect(screen.queryByRole("combobox", { name: "Encoding" })).toBeNull();
    expect(shownValue("Sheet")).toHaveTextContent("Notes");

    await pick("Sheet", "二月");
    await waitFor(() => expect(screen.getByTestId("preview-encoding")).toHaveTextContent("Sheet “二月” of the workbook"));
    expect(within(screen.getByTestId("text-preview")).getByText("第二张表的评论")).toBeInTheDocument();
    // no header cell names a text column there: the person chooses it
    expect(screen.getByText("No header cell names a text column: choose the text column.")).toBeInTheDocument();
    expect(shownValue("Label column")).toHaveTextContent("3 · label");
    await pick("Text column", "2 · comment_text");
    await waitFor(() => expect(screen.getByRole("button", { name: "Upload" })).toBeEnabled());

    await userEvent.click(screen.getByRole("button", { name: "Upload" }));
    await waitFor(() => expect(sent).toHaveLength(1));
    const form = sent[0]!.form;
    expect((form.get("files") as File).name).toBe("评论.xlsx");
    expect(Object.fromEntries([...form.entries()].filter(([key]) => key !== "files"))).toEqual({
      sheet: "二月",
      text_column: "comment_text",
      label_column: "label",
    });
  });

  it("says when a workbook is an .xls or password-protected one", async () => {
    const { container } = renderRoutes(routes, "/p/p1", server());
    await screen.findByTestId("text-formats");
    const ole2 = new Uint8Array([0xd0, 0xcf, 0x11, 0xe0, 0xa1, 0xb1, 0x1a, 0xe1, ...new Array<number>(504).fill(0)]);
    choose(container, new File([ole2], "old.xlsx"));
    expect(await screen.findByTestId("preview-problem")).toHaveTextContent(
      "old.xlsx is an Excel 97-2003 (.xls) or password-protected workbook, which the server refuses",
    );
    expect(screen.queryByTestId("text-preview")).toBeNull();
    expect(screen.queryByText(/so the server will refuse the upload/)).toBeNull();
  });
});
