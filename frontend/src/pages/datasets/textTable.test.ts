import { describe, expect, it } from "vitest";

import { textReportOf, labelVariantsOf } from "./textReport";
import { bodyRows, columnField, decodePreview, guessLayout, importFields, parseTable, previewTable } from "./textTable";
import { bomCsv, GBK_CSV } from "./textTable.fixture";

describe("decodePreview", () => {
  it("reads a byte-order mark as UTF-8 with BOM, and drops the mark", () => {
    const decoded = decodePreview(bomCsv("id,review\n1,好\n"), "", false);
    expect(decoded).toEqual({ ok: true, text: "id,review\n1,好\n", encoding: "utf-8-sig" });
  });

  it("falls back to GB18030 when the bytes are not UTF-8", () => {
    const decoded = decodePreview(GBK_CSV, "", false);
    expect(decoded.ok && decoded.encoding).toBe("gb18030");
    expect(decoded.ok && decoded.text.split("\r\n")[1]).toBe("正面 ,今天天气很好");
  });

  it("takes a chosen encoding, and says when the bytes are not in it", () => {
    expect(decodePreview(new TextEncoder().encode("今天"), "utf-8", false)).toEqual({ ok: true, text: "今天", encoding: "utf-8" });
    expect(decodePreview(GBK_CSV, "utf-8", false)).toEqual({ ok: false, tried: ["utf-8"] });
    const utf16 = new Uint8Array([0xff, 0xfe, 0xca, 0x4e, 0x29, 0x59]); // BOM + 今天 in UTF-16 LE
    expect(decodePreview(utf16, "", false)).toEqual({ ok: true, text: "今天", encoding: "utf-16" });
  });

  it("does not take a character cut at the end of the slice for a decoding error", () => {
    const bytes = new TextEncoder().encode("review\n今天"); // 今天: 6 bytes in UTF-8
    const cut = bytes.slice(0, bytes.length - 1);
    expect(decodePreview(cut, "", true)).toMatchObject({ ok: true, encoding: "utf-8" });
    // the whole file ending like that is not UTF-8
    const whole = decodePreview(cut, "", false);
    expect(whole.ok && whole.encoding).not.toBe("utf-8");
  });
});

describe("guessLayout", () => {
  it("picks the text and label columns by their header names, as the server does", () => {
    const records = parseTable("id,Review ,Sentiment\n1,\"Great, really\",pos\n2,Bad,neg\n", ",", false);
    expect(records[1]).toEqual(["1", "Great, really", "pos"]);
    expect(guessLayout(records)).toEqual({ header: ["id", "Review ", "Sentiment"], width: 3, text: 1, label: 2 });
  });

  it("reads Chinese header names and quoted commas of a GBK table", () => {
    const decoded = decodePreview(GBK_CSV, "", false);
    if (!decoded.ok) throw new Error("not decoded");
    const records = parseTable(decoded.text, ",", false);
    const layout = guessLayout(records);
    expect(layout).toEqual({ header: ["标签", "文本"], width: 2, text: 1, label: 0 });
    expect(bodyRows(records, layout)).toEqual([
      ["正面 ", "今天天气很好"],
      ["负面", "今天很糟,不想出门"],
    ]);
  });

  it("without a header takes the column of most distinct values as the text and the other as the label", () => {
    const records = parseTable("很好\t正面\n很差\t负面\n还行\t正面\n", "\t", false);
    expect(guessLayout(records)).toEqual({ header: null, width: 2, text: 0, label: 1 });
    expect(guessLayout(parseTable("正面,很好\n负面,很差\n正面,还行\n", ",", false))).toMatchObject({ text: 1, label: 0 });
  });

  it("leaves the text column to the person when a header names none", () => {
    const unknown = parseTable("id,comment_text,label\n1,x,a\n", ",", false);
    expect(guessLayout(unknown)).toEqual({ header: ["id", "comment_text", "label"], width: 3, text: null, label: 2 });
  });

  it("drops the last line of a cut slice", () => {
    expect(parseTable("text\nfirst\nsec", ",", true)).toEqual([["text"], ["first"]]);
  });
});

describe("importFields", () => {
  const layout = { header: ["id", "review", "sentiment"], width: 3, text: 1, label: 2 };

  it("sends nothing for the server's own choice, and both columns when one changed", () => {
    expect(importFields({ text: 1, label: 2 }, layout, "")).toEqual({});
    expect(importFields({ text: 1, label: null }, layout, "gb18030")).toEqual({ encoding: "gb18030", text_column: "review", label_column: "0" });
    expect(importFields({ text: 0, label: 2 }, layout, "")).toEqual({ text_column: "id", label_column: "sentiment" });
    expect(importFields({ text: null, label: 2 }, { ...layout, text: null }, "")).toBeNull();
  });

  it("names a column by number without a header or when its name is not unique", () => {
    expect(columnField(1, null)).toBe("2");
    expect(columnField(0, ["text", "text"])).toBe("1");
    expect(columnField(0, ["2019", "text"])).toBe("1");
  });
});

describe("previewTable", () => {
  it("reads only the start of a large file", async () => {
    const rows = Array.from({ length: 40_000 }, (_, i) => `text number ${i},${i % 2 ? "pos" : "neg"}`);
    const file = new File([`text,label\n${rows.join("\n")}\n`], "big.csv", { type: "text/csv" });
    expect(file.size).toBeGreaterThan(256 * 1024);
    const preview = await previewTable(file, "");
    expect(preview.ok && preview.truncated).toBe(true);
    expect(preview.ok && preview.layout).toMatchObject({ text: 0, label: 1 });
  });
});

describe("textReportOf", () => {
  it("reads the report's text part and lists the merged label spellings", () => {
    const report = textReportOf({
      imported: 2,
      text: {
        tables: [{ file: "g.csv", encoding: "gb18030", delimiter: ",", header: ["标签", "文本"], text_column: 1, label_column: 0, rows: 2, skipped: 0, label_variants: { 正面: ["正面 ", "正面　"] } }],
        encodings: { gb18030: 1 },
        duplicates: 3,
      },
    });
    expect(report?.duplicates).toBe(3);
    expect(report && labelVariantsOf(report)).toEqual([
      { file: "g.csv", spelling: "正面 ", label: "正面" },
      { file: "g.csv", spelling: "正面　", label: "正面" },
    ]);
    expect(textReportOf({ imported: 1, rejected: [] })).toBeNull();
  });
});
