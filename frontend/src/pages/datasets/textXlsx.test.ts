// The browser's reading of an XLSX workbook for the text import preview (textXlsx.ts): workbooks
// written here with write-excel-file (read-excel-file's companion writer), read back as the
// server reads them: cells as text, blank rows and trailing empty cells dropped, every sheet.
import { describe, expect, it } from "vitest";

import { cellText, isWorkbookFile, readWorkbook, sheetPreview, sheetRecords, XLSX_PREVIEW_BYTES } from "./textXlsx";
import { xlsxFile } from "./textXlsx.fixture";

describe("cellText", () => {
  it("writes cells as the server reads them", () => {
    expect([null, undefined, "x", 7, 1.0, -2, 0.5, 0.1 + 0.2, true, false].map(cellText)).toEqual([
      "", "", "x", "7", "1", "-2", "0.5", "0.3", "TRUE", "FALSE",
    ]);
    expect(cellText(new Date(Date.UTC(2024, 4, 1)))).toBe("2024-05-01");
    expect(cellText(new Date(Date.UTC(2024, 4, 1, 13, 45)))).toBe("2024-05-01T13:45:00");
  });

  it("drops blank rows and the empty cells after a row's last value", () => {
    expect(sheetRecords([["a", null, ""], [null, null], ["  ", ""], ["", "b"]])).toEqual([["a"], ["", "b"]]);
  });
});

describe("readWorkbook", () => {
  it("reads every sheet: Chinese, English and emoji texts, numbers and dates as text", async () => {
    const file = await xlsxFile("评论.xlsx", [
      {
        sheet: "Notes",
        data: [
          ["文本", "标签", "日期"],
          ["今天天气很好 😀", 1, new Date(Date.UTC(2024, 4, 1))],
          [null, null, null],
          ["Terrible service", 0, null],
        ],
      },
      { sheet: "二月", data: [["text"], ["second sheet"]] },
    ]);
    expect(isWorkbookFile(file.name)).toBe(true);
    const read = await readWorkbook(file);
    expect(read.ok).toBe(true);
    if (!read.ok) return;
    expect(read.sheets.map((s) => s.name)).toEqual(["Notes", "二月"]);
    expect(read.sheets[0]!.records).toEqual([
      ["文本", "标签", "日期"],
      ["今天天气很好 😀", "1", "2024-05-01"],
      ["Terrible service", "0"],
    ]);
    const preview = sheetPreview(read.sheets[0]!);
    expect(preview.ok && preview.layout).toEqual({ header: ["文本", "标签", "日期"], width: 3, text: 0, label: 1 });
    expect(read.sheets[1]!.records).toEqual([["text"], ["second sheet"]]);
  });

  it("says an .xls (or a password-protected workbook), a file that is no workbook and one too large to preview", async () => {
    const ole2 = new Uint8Array([0xd0, 0xcf, 0x11, 0xe0, 0xa1, 0xb1, 0x1a, 0xe1, ...new Array(504).fill(0)]);
    expect(await readWorkbook(new File([ole2], "old.xlsx"))).toEqual({ ok: false, reason: "xls" });
    expect(await readWorkbook(new File(["text,label\nhello,a\n"], "renamed.xlsx"))).toEqual({ ok: false, reason: "unreadable" });
    const big = { name: "big.xlsx", size: XLSX_PREVIEW_BYTES + 1 } as File;
    expect(await readWorkbook(big)).toEqual({ ok: false, reason: "tooLarge" });
    expect(sheetPreview({ name: "S", records: [] })).toEqual({ ok: false, reason: "empty" });
  });
});
