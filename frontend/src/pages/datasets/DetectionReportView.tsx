// What a COCO, Pascal VOC or YOLO zip gave an object detection dataset: images, boxes per class,
// background images, and every skipped annotation (file and line, XML object, COCO annotation
// id), missing image and image no annotation file mentions, each with its reason.
import { Alert, Collapse, Space, Statistic, Table, Tag, Typography } from "antd";
import { useTranslation } from "react-i18next";

import type { ImportFileOutcome } from "../../api/queries/datasets";
import { DETECTION_LISTS, totalOf, type DetectionList, type DetectionReport } from "./detectionReport";

const FORMAT_NAMES = { coco: "COCO", voc: "Pascal VOC", yolo: "YOLO" } as const;
const LIST_TITLES = { skipped_annotations: "skipped", missing_images: "missing", unannotated_images: "unannotated" } as const;

export function DetectionReportView({ report }: { report: DetectionReport }) {
  const { t } = useTranslation();
  const lists = DETECTION_LISTS.filter((kind) => totalOf(report, kind) > 0);
  return (
    <Space orientation="vertical" style={{ width: "100%" }} data-testid="detection-report">
      <Space size="large" wrap align="start">
        <Statistic
          title={t("imports.detection.format")}
          value={[...new Set(report.formats)].map((f) => FORMAT_NAMES[f] ?? f).join(", ")}
        />
        <Statistic title={t("imports.detection.images")} value={report.images} />
        <Statistic title={t("imports.detection.boxes")} value={report.boxes} />
        <Statistic title={t("imports.detection.background")} value={report.background_images} />
        <Statistic title={t("imports.detection.clipped")} value={report.clipped_boxes} />
        <Statistic
          title={t("imports.detection.skipped")}
          value={totalOf(report, "skipped_annotations")}
          styles={totalOf(report, "skipped_annotations") ? { content: { color: "#cf1322" } } : undefined}
        />
      </Space>
      {report.classes.length > 0 && (
        <div data-testid="detection-classes">
          <Typography.Text type="secondary">{t("imports.detection.classes")}: </Typography.Text>
          {report.classes.map((c) => (
            <Tag key={c.name}>
              {c.name} · {c.boxes}
            </Tag>
          ))}
        </div>
      )}
      {report.warnings.length > 0 && (
        <Alert
          type="info"
          showIcon
          title={t("imports.detection.warnings")}
          description={
            <ul style={{ margin: 0, paddingInlineStart: 20 }}>
              {report.warnings.map((w, i) => (
                <li key={i}>{w}</li>
              ))}
            </ul>
          }
        />
      )}
      {lists.length > 0 && (
        <Collapse
          size="small"
          defaultActiveKey={lists.filter((k) => k !== "unannotated_images")}
          items={lists.map((kind) => ({
            key: kind,
            label: `${t(`imports.detection.${LIST_TITLES[kind]}`)} (${totalOf(report, kind)})`,
            children: <OutcomeTable kind={kind} rows={report[kind]} total={totalOf(report, kind)} />,
          }))}
        />
      )}
    </Space>
  );
}

function OutcomeTable({ kind, rows, total }: { kind: DetectionList; rows: ImportFileOutcome[]; total: number }) {
  const { t } = useTranslation();
  return (
    <>
      <Table<ImportFileOutcome>
        size="small"
        rowKey={(row) => `${row.name}\u0000${row.reason}`}
        dataSource={rows}
        pagination={rows.length > 20 ? { pageSize: 20, showSizeChanger: false } : false}
        columns={[
          { title: kind === "skipped_annotations" ? t("imports.detection.annotation") : t("imports.file"), dataIndex: "name", ellipsis: true },
          { title: t("imports.reason"), dataIndex: "reason" },
        ]}
      />
      {total > rows.length && <Typography.Text type="secondary">{t("imports.detection.more", { count: total - rows.length })}</Typography.Text>}
    </>
  );
}
