// What an import gave a text classification dataset, below the usual counts (ImportReportView,
// which lists the rejected rows by file:line with their reasons and counts every duplicate text,
// `duplicateCount`, so the count is not repeated here): the encoding each file was read with, how
// each table was read (header, text and label columns, rows used and skipped) and the label
// spellings merged into one class ("正面 " -> "正面").
import { Space, Table, Tag, Typography } from "antd";
import { useTranslation } from "react-i18next";

import { encodingName } from "./textTable";
import { labelVariantsOf, type TextReport, type TextTableReport } from "./textReport";

/** A string with its spaces visible: in quotes, so "正面 " and "正面" read apart. */
const quoted = (value: string) => `“${value}”`;

export function TextImportReportView({ report }: { report: TextReport }) {
  const { t } = useTranslation();
  const variants = labelVariantsOf(report);
  const columnName = (table: TextTableReport, index: number | null) =>
    index === null
      ? t("text.report.noLabels")
      : table.header?.[index]
        ? t("text.upload.columnNamed", { number: index + 1, name: table.header[index] })
        : t("text.upload.column", { number: index + 1 });

  return (
    <Space orientation="vertical" style={{ width: "100%" }} data-testid="text-report">
      <div data-testid="text-encodings">
        <Typography.Text type="secondary">{t("text.report.encodings")}</Typography.Text>
        <div>
          {Object.entries(report.encodings).map(([codec, files]) => (
            <Tag key={codec}>{t("text.report.encodingFiles", { encoding: encodingName(codec), count: files })}</Tag>
          ))}
        </div>
      </div>
      {report.tables.length > 0 && (
        <div data-testid="text-tables">
        <Table<TextTableReport>
          size="small"
          rowKey="file"
          dataSource={report.tables}
          pagination={report.tables.length > 20 ? { pageSize: 20, showSizeChanger: false } : false}
          scroll={{ x: "max-content" }}
          columns={[
            { title: t("imports.file"), dataIndex: "file" },
            { title: t("text.report.encoding"), dataIndex: "encoding", render: (codec: string) => encodingName(codec) },
            {
              title: t("text.report.delimiter"),
              key: "delimiter",
              render: (_, table) => (table.sheet !== undefined ? t("text.report.sheet", { sheet: table.sheet }) : table.delimiter === "tab" ? t("text.report.tab") : table.delimiter),
            },
            {
              title: t("text.report.header"),
              dataIndex: "header",
              render: (header: string[] | null) => (header ? header.join(" | ") : <Typography.Text type="secondary">{t("text.report.noHeader")}</Typography.Text>),
            },
            { title: t("text.upload.textColumn"), key: "text", render: (_, table) => columnName(table, table.text_column) },
            { title: t("text.upload.labelColumn"), key: "label", render: (_, table) => columnName(table, table.label_column) },
            { title: t("text.report.rows"), dataIndex: "rows", align: "right" },
            {
              title: t("text.report.skipped"),
              dataIndex: "skipped",
              align: "right",
              render: (skipped: number) => (skipped ? <Typography.Text type="danger">{skipped}</Typography.Text> : 0),
            },
          ]}
        />
        </div>
      )}
      {variants.length > 0 && (
        <div data-testid="label-variants">
          <Typography.Text strong>{t("text.report.variants")}</Typography.Text>
          <ul style={{ margin: "4px 0 0", paddingInlineStart: 20 }}>
            {variants.map((v) => (
              <li key={`${v.file}\u0000${v.spelling}`}>
                <Typography.Text code>{quoted(v.spelling)}</Typography.Text> → <Typography.Text code>{quoted(v.label)}</Typography.Text>
                {report.tables.length > 1 && <Typography.Text type="secondary"> ({v.file})</Typography.Text>}
              </li>
            ))}
          </ul>
        </div>
      )}
    </Space>
  );
}
