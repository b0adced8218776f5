// The `text` part of an import job's report into a text classification dataset
// (platform/sampan/datasets/text_imports.py, `TextImport.report`): how each table was read, the
// encodings used and how many texts were duplicates. Rejected rows ("file.csv:LINE") and the
// listed duplicates are in the report's usual `rejected` and `duplicates` lists.

export interface TextTableReport {
  file: string;
  /** the server's codec name: utf-8, utf-8-sig, utf-16, gb18030... */
  encoding: string;
  /** "," or "tab"; "" for a workbook */
  delimiter: string;
  /** a workbook's (.xlsx) worksheet that was read */
  sheet?: string;
  /** the header's cells, or null when the first row was data */
  header: string[] | null;
  /** 0-based */
  text_column: number;
  /** 0-based; null: no labels */
  label_column: number | null;
  rows: number;
  skipped: number;
  /** {stored label: the other spellings merged into it} */
  label_variants: Record<string, string[]>;
}

export interface TextReport {
  tables: TextTableReport[];
  /** codec -> files decoded with it (tables and .txt files) */
  encodings: Record<string, number>;
  /** every duplicate text (the report lists at most 200 of them) */
  duplicates: number;
}

const isObject = (value: unknown): value is Record<string, unknown> => value !== null && typeof value === "object" && !Array.isArray(value);
const count = (value: unknown): number => (typeof value === "number" && Number.isFinite(value) ? value : 0);
const column = (value: unknown): number | null => (typeof value === "number" && Number.isInteger(value) && value >= 0 ? value : null);

function table(raw: unknown): TextTableReport | null {
  if (!isObject(raw) || typeof raw.file !== "string") return null;
  const variants: Record<string, string[]> = {};
  if (isObject(raw.label_variants)) {
    for (const [label, spellings] of Object.entries(raw.label_variants)) {
      if (Array.isArray(spellings)) variants[label] = spellings.filter((s): s is string => typeof s === "string");
    }
  }
  return {
    file: raw.file,
    encoding: typeof raw.encoding === "string" ? raw.encoding : "",
    delimiter: typeof raw.delimiter === "string" ? raw.delimiter : ",",
    ...(typeof raw.sheet === "string" && raw.sheet ? { sheet: raw.sheet } : {}),
    header: Array.isArray(raw.header) ? raw.header.map(String) : null,
    text_column: column(raw.text_column) ?? 0,
    label_column: column(raw.label_column),
    rows: count(raw.rows),
    skipped: count(raw.skipped),
    label_variants: variants,
  };
}

/** The report's `text` part, or null for an import into an image dataset. */
export function textReportOf(report: unknown): TextReport | null {
  if (!isObject(report) || !isObject(report.text)) return null;
  const raw = report.text;
  const encodings: Record<string, number> = {};
  if (isObject(raw.encodings)) {
    for (const [codec, files] of Object.entries(raw.encodings)) encodings[codec] = count(files);
  }
  return {
    tables: (Array.isArray(raw.tables) ? raw.tables : []).map(table).filter((t): t is TextTableReport => t !== null),
    encodings,
    duplicates: count(raw.duplicates),
  };
}

/** Every label variant of the report: a spelling found in `file` and the class it was merged into. */
export function labelVariantsOf(report: TextReport): { file: string; spelling: string; label: string }[] {
  return report.tables.flatMap((t) =>
    Object.entries(t.label_variants).flatMap(([label, spellings]) => spellings.map((spelling) => ({ file: t.file, spelling, label }))),
  );
}
