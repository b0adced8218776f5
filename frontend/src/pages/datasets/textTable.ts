// The browser's preview of a CSV / TSV table about to be imported into a text classification
// dataset: the first PREVIEW_BYTES of the file decoded and parsed here, the columns the server
// would choose, and the import's form fields for what the person chose instead. The rules follow
// the server's reader (platform/sampan/datasets/formats/text_table.py), whose result is the one
// that counts: this only helps to choose before uploading.
import Papa from "papaparse";

import type { TextImportFields } from "../../api/upload";

/** The preview reads this much of the file (File.slice), never the whole file. */
export const PREVIEW_BYTES = 256 * 1024;
/** Rows shown in the preview table. */
export const PREVIEW_ROWS = 10;
/** Rows the column guess looks at without a header (as the server does). */
const GUESS_ROWS = 2000;

/** Header names the server takes for the text and the label column (text_table.py). */
export const TEXT_COLUMN_NAMES: ReadonlySet<string> = new Set([
  "text", "texts", "content", "contents", "sentence", "review", "comment", "document", "body",
  "message", "title", "query", "文本", "内容", "评论", "句子", "正文", "评价", "文字",
]);
export const LABEL_COLUMN_NAMES: ReadonlySet<string> = new Set([
  "label", "labels", "class", "category", "sentiment", "tag", "target", "y", "intent",
  "标签", "类别", "分类", "情感", "类型",
]);

/** What the encoding select offers ("": detected) and sends as the `encoding` field. */
export const ENCODING_CHOICES = ["", "utf-8", "gb18030", "big5", "utf-16"] as const;
export type EncodingChoice = (typeof ENCODING_CHOICES)[number];

const ENCODING_NAMES: Record<string, string> = {
  "utf-8": "UTF-8",
  "utf-8-sig": "UTF-8 (BOM)",
  "utf-16": "UTF-16",
  gb18030: "GB18030 / GBK",
  gbk: "GBK",
  big5: "Big5",
  xlsx: "Excel (XLSX)",
};

/** An encoding as people know it: the server's codec names ("utf-8-sig") and the choices. */
export function encodingName(codec: string): string {
  return ENCODING_NAMES[codec.toLowerCase()] ?? codec;
}

export const TABLE_SUFFIXES = [".csv", ".tsv", ".tab"] as const;
/** What a text dataset imports (platform/sampan/datasets/text_imports.py); the rest is refused. */
export const TEXT_UPLOAD_SUFFIXES = [...TABLE_SUFFIXES, ".txt", ".zip"] as const;

export function isTableFile(name: string): boolean {
  const lower = name.toLowerCase();
  return TABLE_SUFFIXES.some((suffix) => lower.endsWith(suffix));
}

export function isTextUploadFile(name: string): boolean {
  const lower = name.toLowerCase();
  return TEXT_UPLOAD_SUFFIXES.some((suffix) => lower.endsWith(suffix));
}

/** The server's delimiter rule: tab for .tsv / .tab, else comma (it does not sniff). */
export function delimiterFor(name: string): "," | "\t" {
  const lower = name.toLowerCase();
  return lower.endsWith(".tsv") || lower.endsWith(".tab") ? "\t" : ",";
}

export type Decoded = { ok: true; text: string; encoding: string } | { ok: false; tried: string[] };

function decodeAs(label: string, bytes: Uint8Array, truncated: boolean): string | null {
  try {
    // stream: a cut slice may end inside a character; its bytes wait instead of failing
    return new TextDecoder(label, { fatal: true }).decode(bytes, { stream: truncated });
  } catch {
    return null;
  }
}

function utf16Label(bytes: Uint8Array): "utf-16le" | "utf-16be" {
  return bytes[0] === 0xfe && bytes[1] === 0xff ? "utf-16be" : "utf-16le";
}

/**
 * The bytes as text, as the server decodes them: the chosen encoding; else a byte-order mark
 * (UTF-8, UTF-16 LE/BE) decides; else strict UTF-8; else strict GB18030. `encoding` is the
 * server's codec name for what was used ("utf-8-sig" for UTF-8 with a BOM). `truncated`: the
 * bytes are the start of a longer file.
 */
export function decodePreview(bytes: Uint8Array, choice: EncodingChoice, truncated: boolean): Decoded {
  const attempt = (label: string, encoding: string): Decoded | null => {
    const text = decodeAs(label, bytes, truncated);
    return text === null ? null : { ok: true, text, encoding };
  };
  if (choice === "utf-16") return attempt(utf16Label(bytes), "utf-16") ?? { ok: false, tried: ["utf-16"] };
  if (choice) return attempt(choice, choice) ?? { ok: false, tried: [choice] };
  if (bytes[0] === 0xef && bytes[1] === 0xbb && bytes[2] === 0xbf) return attempt("utf-8", "utf-8-sig") ?? { ok: false, tried: ["utf-8-sig"] };
  if ((bytes[0] === 0xff && bytes[1] === 0xfe) || (bytes[0] === 0xfe && bytes[1] === 0xff))
    return attempt(utf16Label(bytes), "utf-16") ?? { ok: false, tried: ["utf-16"] };
  return attempt("utf-8", "utf-8") ?? attempt("gb18030", "gb18030") ?? { ok: false, tried: ["utf-8", "gb18030"] };
}

/** A header cell as the server compares names: no BOM, NFKC, runs of spaces as one, trimmed, case-folded. */
export function normaliseName(cell: string): string {
  return cell.replace(/^\ufeff/, "").normalize("NFKC").split(/\s+/).filter(Boolean).join(" ").toLowerCase();
}

/**
 * The records of a table's text (quoted fields may hold the delimiter, quotes and line breaks);
 * rows with only blank cells are skipped, as the server does. `truncated`: the text is the start
 * of a longer file, so its last, possibly cut, line is dropped.
 */
export function parseTable(text: string, delimiter: "," | "\t", truncated: boolean, maxRows = GUESS_ROWS + 1): string[][] {
  let body = text;
  if (truncated) {
    const end = body.lastIndexOf("\n");
    body = end >= 0 ? body.slice(0, end) : "";
  }
  const parsed = Papa.parse<string[]>(body, { delimiter, skipEmptyLines: "greedy", preview: maxRows });
  return parsed.data.filter((cells) => Array.isArray(cells) && cells.some((cell) => cell.trim() !== ""));
}

/** How the server would read a table: 0-based columns; `text` null: it cannot choose (the person must). */
export interface TableLayout {
  /** the first row's cells when it is a header, else null */
  header: string[] | null;
  /** the first record's number of cells */
  width: number;
  text: number | null;
  /** null: no labels */
  label: number | null;
}

const known = (cell: string, names: ReadonlySet<string>) => names.has(normaliseName(cell));

/** The columns the server chooses when the person chooses none (text_table.py `read_text_table`). */
export function guessLayout(records: string[][]): TableLayout {
  const first = records[0] ?? [];
  const width = first.length;
  const hasHeader = first.some((cell) => known(cell, TEXT_COLUMN_NAMES) || known(cell, LABEL_COLUMN_NAMES));
  const header = hasHeader ? first.map((cell) => cell.replace(/^\ufeff/, "")) : null;
  let text: number | null = null;
  let label: number | null = null;
  if (header) {
    const t = header.findIndex((cell) => known(cell, TEXT_COLUMN_NAMES));
    text = t >= 0 ? t : null;
    const l = header.findIndex((cell, i) => known(cell, LABEL_COLUMN_NAMES) && i !== text);
    label = l >= 0 ? l : null;
  }
  if (text === null) {
    if (width === 1) text = 0;
    else if (header && label !== null && width === 2) text = 1 - label;
    else if (!header) [text, label] = guessByValues(records, width);
  }
  return { header, width, text, label };
}

/** Without a header: the text is the column with the most distinct values (ties: the longer), the label the other. */
function guessByValues(body: string[][], width: number): [number, number | null] {
  if (width < 2) return [0, null];
  const rows = body.slice(0, GUESS_ROWS);
  const stats = [0, 1].map((index) => {
    const values = rows.filter((cells) => index < cells.length).map((cells) => cells[index] ?? "");
    return [new Set(values).size, values.reduce((sum, v) => sum + v.length, 0), index] as const;
  });
  const [a, b] = stats as [readonly [number, number, number], readonly [number, number, number]];
  const text = a[0] !== b[0] ? (a[0] > b[0] ? 0 : 1) : a[1] !== b[1] ? (a[1] > b[1] ? 0 : 1) : 1;
  return [text, 1 - text];
}

/** The rows under the header, as the preview table shows them. */
export function bodyRows(records: string[][], layout: TableLayout, count = PREVIEW_ROWS): string[][] {
  return records.slice(layout.header ? 1 : 0, (layout.header ? 1 : 0) + count);
}

/** The person's choice of columns: 0-based; `label` null: no labels. */
export interface ColumnChoice {
  text: number | null;
  label: number | null;
}

/** A column as the form sends it: its header name when that names it alone, else its 1-based number. */
export function columnField(index: number, header: string[] | null): string {
  const name = header?.[index]?.trim() ?? "";
  const unique = header !== null && header.filter((cell) => normaliseName(cell) === normaliseName(name)).length === 1;
  return name !== "" && !/^\d+$/.test(name) && unique ? name : String(index + 1);
}

/**
 * The import's form fields for a choice: nothing when it is what the server would choose anyway
 * (each table of the upload is then read by its own header); both columns when either differs
 * (a chosen text column alone would change how the server guesses the label); the encoding
 * when one is chosen. Null while no text column is chosen where the server cannot choose one.
 */
export function importFields(choice: ColumnChoice, layout: TableLayout, encoding: EncodingChoice): TextImportFields | null {
  if (choice.text === null) return null;
  const fields: TextImportFields = {};
  if (encoding) fields.encoding = encoding;
  if (choice.text !== layout.text || choice.label !== layout.label) {
    fields.text_column = columnField(choice.text, layout.header);
    fields.label_column = choice.label === null ? "0" : columnField(choice.label, layout.header);
  }
  return fields;
}

/** The first `PREVIEW_BYTES` of a file (FileReader: jsdom's Blob has no arrayBuffer()). */
export function readStart(file: Blob, bytes = PREVIEW_BYTES): Promise<Uint8Array> {
  const slice = file.slice(0, bytes);
  return new Promise((resolve, reject) => {
    const reader = new FileReader();
    reader.onload = () => resolve(new Uint8Array(reader.result as ArrayBuffer));
    reader.onerror = () => reject(reader.error ?? new Error("the file could not be read"));
    reader.readAsArrayBuffer(slice);
  });
}

/** A table's preview: how it decoded, its records (the header first, if any) and the guessed layout. */
export type TablePreview =
  | { ok: true; encoding: string; records: string[][]; layout: TableLayout; truncated: boolean }
  | { ok: false; reason: "undecodable"; tried: string[] }
  | { ok: false; reason: "empty" };

export async function previewTable(file: File, encoding: EncodingChoice): Promise<TablePreview> {
  const bytes = await readStart(file);
  const truncated = file.size > bytes.length;
  const decoded = decodePreview(bytes, encoding, truncated);
  if (!decoded.ok) return { ok: false, reason: "undecodable", tried: decoded.tried };
  const records = parseTable(decoded.text, delimiterFor(file.name), truncated);
  if (records.length === 0) return { ok: false, reason: "empty" };
  return { ok: true, encoding: decoded.encoding, records, layout: guessLayout(records), truncated };
}
