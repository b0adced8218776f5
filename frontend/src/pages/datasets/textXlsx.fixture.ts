// Workbooks for the text import tests (textXlsx.test.ts, TextUploadOptions.test.tsx), written in
// the test with write-excel-file, read-excel-file's companion writer (a devDependency only).
import writeXlsxFile from "write-excel-file/universal";

/** A tiny .xlsx File of `sheets` (name, rows; a row's null is an empty cell, a Date a date cell). */
export async function xlsxFile(name: string, sheets: { sheet: string; data: unknown[][] }[]): Promise<File> {
  const blob = await writeXlsxFile(sheets.map((s) => ({ sheet: s.sheet, dateFormat: "yyyy-mm-dd", data: s.data as never }))).toBlob();
  return new File([blob], name, { type: "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet" });
}
