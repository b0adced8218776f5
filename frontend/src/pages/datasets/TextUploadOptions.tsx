// The upload tab of a text classification dataset: which files it takes (TextFormatsHelp), and
// for a CSV / TSV about to be sent a preview made in the browser from the file's first 256 KB
// (textTable.ts), for an XLSX workbook one of its sheets (textXlsx.ts, read-excel-file), with the
// text column, the label column and the encoding (or the sheet) to read it with
// (TextImportOptions). What is chosen goes with the upload as the import's form fields; the
// server reads the whole file and its import report is what counts.
import { Alert, Card, Select, Space, Table, Tag, Typography } from "antd";
import { useEffect, useMemo, useState } from "react";
import { useTranslation } from "react-i18next";

import type { TextImportFields } from "../../api/upload";
import {
  bodyRows,
  ENCODING_CHOICES,
  encodingName,
  importFields,
  isTableFile,
  isTextUploadFile,
  previewTable,
  PREVIEW_ROWS,
  type ColumnChoice,
  type EncodingChoice,
  type TablePreview,
} from "./textTable";
import { isWorkbookFile, readWorkbook, sheetPreview, type WorkbookRead } from "./textXlsx";

// file trees and table lines are the same in every language
const EXAMPLES = {
  table: ["review,label", "\"Fast delivery, works well\",positive", "\"Broke after a day\",negative"],
  folders: ["positive/0001.txt", "positive/0002.txt", "negative/0003.txt"],
} as const;

/** What a text dataset imports, shown on its upload tab instead of the image layouts. */
export function TextFormatsHelp() {
  const { t } = useTranslation();
  return (
    <Card size="small" title={t("text.upload.formatsTitle")} data-testid="text-formats">
      <Space orientation="vertical" style={{ width: "100%" }}>
        <div data-format="table">
          <Typography.Text strong>CSV / TSV / XLSX</Typography.Text>: {t("text.upload.formatTable")}
          <pre style={{ margin: "4px 0 0", fontSize: 12, overflowX: "auto" }}>{EXAMPLES.table.join("\n")}</pre>
        </div>
        <div data-format="folders">
          <Typography.Text strong>.txt / .zip</Typography.Text>: {t("text.upload.formatFolders")}
          <pre style={{ margin: "4px 0 0", fontSize: 12, overflowX: "auto" }}>{EXAMPLES.folders.join("\n")}</pre>
        </div>
        <Typography.Text type="secondary">{t("text.upload.formatEncoding")}</Typography.Text>
      </Space>
    </Card>
  );
}

/**
 * The encoding and, for the first table or workbook among `files`, its preview and columns (and a
 * workbook's sheet). `onChange` gets the form fields to send, or null while the text column must
 * still be chosen.
 */
export function TextImportOptions({ files, onChange }: { files: File[]; onChange: (fields: TextImportFields | null) => void }) {
  const { t } = useTranslation();
  const table = files.find((f) => isTableFile(f.name) || isWorkbookFile(f.name)) ?? null;
  const workbook = table !== null && isWorkbookFile(table.name);
  const refused = files.filter((f) => !isTextUploadFile(f.name) && !isWorkbookFile(f.name)).map((f) => f.name);
  const onlyWorkbooks = files.length > 0 && files.every((f) => isWorkbookFile(f.name));
  const [encoding, setEncoding] = useState<EncodingChoice>("");
  const [preview, setPreview] = useState<{ file: File; encoding: EncodingChoice; result: TablePreview } | null>(null);
  const [book, setBook] = useState<{ file: File; result: WorkbookRead } | null>(null);
  // a workbook's sheet ("": the first, the server's default) — reset with each file
  const [sheet, setSheet] = useState("");
  // the person's columns; null: the server's choice (the guess) — reset with each file, encoding and sheet
  const [choice, setChoice] = useState<ColumnChoice | null>(null);

  useEffect(() => {
    setSheet("");
    if (!table || !workbook) return;
    let current = true;
    void readWorkbook(table).then((result) => {
      if (current) setBook({ file: table, result });
    });
    return () => {
      current = false;
    };
  }, [table, workbook]);

  useEffect(() => {
    setChoice(null);
    if (!table || workbook) return;
    let current = true;
    void previewTable(table, encoding).then(
      (result) => {
        if (current) setPreview({ file: table, encoding, result });
      },
      () => {
        if (current) setPreview({ file: table, encoding, result: { ok: false, reason: "undecodable", tried: [encoding || "utf-8"] } });
      },
    );
    return () => {
      current = false;
    };
  }, [table, encoding]);

  const bookRead = workbook && book !== null && book.file === table ? book.result : null;
  const sheets = bookRead?.ok ? bookRead.sheets : [];
  const sheetIndex = Math.max(0, sheets.findIndex((s) => s.name === sheet));
  const sheetShown = sheets[sheetIndex] ?? null;
  const bookPreview = useMemo(() => (sheetShown ? sheetPreview(sheetShown) : null), [sheetShown]);
  const ready = workbook ? bookPreview : preview !== null && preview.file === table && preview.encoding === encoding ? preview.result : null;
  const layout = ready?.ok ? ready.layout : null;
  const columns: ColumnChoice | null = layout ? (choice ?? { text: layout.text, label: layout.label }) : null;

  const fields = useMemo<TextImportFields | null>(() => {
    if (!table) return encoding ? { encoding } : {};
    if (!layout || !columns) return encoding ? { encoding } : {}; // still reading, or unreadable here: the server decides
    const chosen = importFields(columns, layout, encoding);
    // another sheet than the first (the server's default) goes with the upload by name
    if (chosen && sheetShown && sheetIndex > 0) chosen.sheet = sheetShown.name;
    return chosen;
  }, [table, layout, columns, encoding, sheetShown, sheetIndex]);
  const fieldsKey = JSON.stringify(fields);
  useEffect(() => {
    onChange(fields);
  }, [fieldsKey]); // by value: `fields` is a new object on every render

  const columnOptions = (width: number) =>
    Array.from({ length: width }, (_, i) => {
      const name = layout?.header?.[i]?.trim();
      return { value: i, label: name ? t("text.upload.columnNamed", { number: i + 1, name }) : t("text.upload.column", { number: i + 1 }) };
    });

  return (
    <Space orientation="vertical" style={{ width: "100%" }} data-testid="text-import-options">
      {refused.length > 0 && <Alert type="error" showIcon title={t("text.upload.refused", { files: refused.join(", ") })} />}
      {!onlyWorkbooks && (
        <Space wrap>
          <Typography.Text>{t("text.upload.encoding")}</Typography.Text>
          <Select<EncodingChoice>
            aria-label={t("text.upload.encoding")}
            value={encoding}
            onChange={setEncoding}
            style={{ minWidth: 220 }}
            options={ENCODING_CHOICES.map((value) => ({
              value,
              label:
                value ? encodingName(value)
                : !workbook && ready?.ok && !encoding ? t("text.upload.encodingDetected", { encoding: encodingName(ready.encoding) })
                : t("text.upload.encodingAuto"),
            }))}
          />
        </Space>
      )}
      {table && bookRead?.ok === false && (
        <Alert
          type="warning"
          showIcon
          data-testid="preview-problem"
          title={
            bookRead.reason === "xls"
              ? t("text.upload.workbookXls", { file: table.name })
              : bookRead.reason === "tooLarge"
                ? t("text.upload.workbookTooLarge", { file: table.name })
                : t("text.upload.workbookUnreadable", { file: table.name })
          }
        />
      )}
      {table && sheets.length > 1 && (
        <Space wrap>
          <Typography.Text>{t("text.upload.sheet")}</Typography.Text>
          <Select<string>
            aria-label={t("text.upload.sheet")}
            value={sheetShown?.name}
            onChange={(name) => {
              setSheet(name);
              setChoice(null);
            }}
            style={{ minWidth: 220 }}
            options={sheets.map((s) => ({ value: s.name, label: s.name }))}
          />
        </Space>
      )}
      {table && ready?.ok === false && (
        <Alert
          type="warning"
          showIcon
          data-testid="preview-problem"
          title={
            ready.reason === "empty"
              ? t("text.upload.emptyTable", { file: table.name })
              : encoding
                ? t("text.upload.notEncoding", { file: table.name, encoding: encodingName(encoding) })
                : t("text.upload.undecodable", { file: table.name })
          }
        />
      )}
      {table && ready?.ok && layout && columns && (
        <Card size="small" title={t("text.upload.previewOf", { file: table.name, rows: PREVIEW_ROWS })} data-testid="text-preview">
          <Space orientation="vertical" style={{ width: "100%" }}>
            <Space wrap size="middle">
              <Typography.Text data-testid="preview-encoding">
                {workbook && sheetShown ? t("text.upload.readSheet", { sheet: sheetShown.name }) : t("text.upload.readAs", { encoding: encodingName(ready.encoding) })}
              </Typography.Text>
              <Typography.Text type="secondary">{layout.header ? t("text.upload.withHeader") : t("text.upload.noHeader")}</Typography.Text>
            </Space>
            <Space wrap>
              <Typography.Text>{t("text.upload.textColumn")}</Typography.Text>
              <Select<number>
                aria-label={t("text.upload.textColumn")}
                value={columns.text ?? undefined}
                placeholder={t("text.upload.chooseColumn")}
                status={columns.text === null ? "error" : undefined}
                onChange={(text) => setChoice({ ...columns, text, label: columns.label === text ? null : columns.label })}
                style={{ minWidth: 180 }}
                options={columnOptions(layout.width)}
              />
              <Typography.Text>{t("text.upload.labelColumn")}</Typography.Text>
              <Select<number>
                aria-label={t("text.upload.labelColumn")}
                value={columns.label ?? -1}
                onChange={(label) => setChoice({ ...columns, label: label < 0 ? null : label })}
                style={{ minWidth: 180 }}
                options={[
                  { value: -1, label: t("text.upload.noLabels") },
                  ...columnOptions(layout.width).filter((o) => o.value !== columns.text),
                ]}
              />
            </Space>
            {columns.text === null && <Alert type="warning" showIcon title={t("text.upload.chooseText")} />}
            <PreviewTable records={ready.records} preview={ready} columns={columns} />
            <Typography.Text type="secondary">{t(workbook ? "text.upload.previewNoteWorkbook" : "text.upload.previewNote")}</Typography.Text>
          </Space>
        </Card>
      )}
    </Space>
  );
}

function PreviewTable({ records, preview, columns }: { records: string[][]; preview: Extract<TablePreview, { ok: true }>; columns: ColumnChoice }) {
  const { t } = useTranslation();
  const { layout } = preview;
  const rows = bodyRows(records, layout);
  const width = Math.max(layout.width, ...rows.map((r) => r.length));
  return (
    <Table<{ key: number; cells: string[] }>
      size="small"
      pagination={false}
      scroll={{ x: "max-content" }}
      dataSource={rows.map((cells, key) => ({ key, cells }))}
      columns={Array.from({ length: width }, (_, i) => ({
        key: i,
        title: (
          <Space size={4} data-testid={`preview-column-${i + 1}`}>
            <span>{layout.header?.[i] || t("text.upload.column", { number: i + 1 })}</span>
            {columns.text === i && <Tag color="blue">{t("text.upload.textTag")}</Tag>}
            {columns.label === i && <Tag color="green">{t("text.upload.labelTag")}</Tag>}
          </Space>
        ),
        // texts as text (React escapes them), one line each here
        render: (_: unknown, row: { cells: string[] }) => (
          <Typography.Text ellipsis style={{ maxWidth: columns.text === i ? 420 : 200 }} title={row.cells[i]}>
            {row.cells[i] ?? ""}
          </Typography.Text>
        ),
      }))}
    />
  );
}
