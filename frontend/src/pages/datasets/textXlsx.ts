// The browser's preview of an XLSX workbook about to be imported into a text classification
// dataset: its sheets read here with read-excel-file, each sheet's rows as the text cells the
// server reads (platform/sampan/datasets/formats/text_xlsx.py), so that the person picks the
// sheet and the text and label columns as for a CSV (textTable.ts chooses the columns the same
// way). A workbook is a zip and cannot be read in part: one over XLSX_PREVIEW_BYTES is not
// previewed (the server still reads it, choosing the columns by their header names). The reader
// is loaded when a workbook is first previewed (its own chunk), not with the dataset page.
import { guessLayout, readStart, type TablePreview } from "./textTable";

export const WORKBOOK_SUFFIXES = [".xlsx"] as const;
/** The largest workbook previewed in the browser (read whole: about 1 s for 16 MB). */
export const XLSX_PREVIEW_BYTES = 16 * 1024 * 1024;
/** Rows kept of each sheet: the preview's and the column guess's (the server looks at 2,000). */
const KEPT_ROWS = 2001;

export function isWorkbookFile(name: string): boolean {
  const lower = name.toLowerCase();
  return WORKBOOK_SUFFIXES.some((suffix) => lower.endsWith(suffix));
}

/** A cell as the server reads it: whole numbers without a decimal point, other numbers to 15
 * significant digits, dates ISO 8601 (no time when midnight), TRUE/FALSE, empty for none. */
export function cellText(value: unknown): string {
  if (value === null || value === undefined) return "";
  if (typeof value === "string") return value;
  if (typeof value === "boolean") return value ? "TRUE" : "FALSE";
  if (typeof value === "number") return Number.isInteger(value) ? String(value) : String(Number(value.toPrecision(15)));
  if (value instanceof Date) {
    const iso = value.toISOString();
    return iso.endsWith("T00:00:00.000Z") ? iso.slice(0, 10) : iso.slice(0, iso.endsWith(".000Z") ? 19 : 23);
  }
  return String(value);
}

/** A sheet's rows as table records: cells as text, empty cells after a row's last value dropped,
 * rows without a non-blank cell skipped (as the server does). */
export function sheetRecords(rows: readonly (readonly unknown[])[], maxRows = KEPT_ROWS): string[][] {
  const records: string[][] = [];
  for (const row of rows) {
    const cells = row.map(cellText);
    while (cells.length > 0 && (cells[cells.length - 1] ?? "").trim() === "") cells.pop();
    if (cells.length > 0) records.push(cells);
    if (records.length >= maxRows) break;
  }
  return records;
}

export interface WorkbookSheet {
  name: string;
  records: string[][];
}

/** What the browser could read of a workbook: its sheets in order, or why not. */
export type WorkbookRead =
  | { ok: true; sheets: WorkbookSheet[] }
  | { ok: false; reason: "tooLarge" | "xls" | "unreadable" };

export async function readWorkbook(file: File): Promise<WorkbookRead> {
  if (file.size > XLSX_PREVIEW_BYTES) return { ok: false, reason: "tooLarge" };
  try {
    const bytes = await readStart(file, file.size);
    const { default: readXlsxFile } = await import("read-excel-file/browser");
    const sheets = await readXlsxFile(bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength) as ArrayBuffer, { trim: false });
    return { ok: true, sheets: sheets.map((sheet) => ({ name: sheet.sheet, records: sheetRecords(sheet.data) })) };
  } catch (error) {
    // an .xls, or a password-protected workbook (both OLE2 files); anything else unreadable
    const code = (error as { code?: unknown } | null)?.code;
    return { ok: false, reason: code === "XLS_FILE_NOT_SUPPORTED" ? "xls" : "unreadable" };
  }
}

/** A sheet's preview, as a CSV's: how the server would choose its columns. */
export function sheetPreview(sheet: WorkbookSheet): TablePreview {
  if (sheet.records.length === 0) return { ok: false, reason: "empty" };
  return { ok: true, encoding: "xlsx", records: sheet.records, layout: guessLayout(sheet.records), truncated: false };
}
