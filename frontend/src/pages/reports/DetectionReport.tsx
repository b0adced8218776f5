// An object detector's evaluation report (report.task "object_detection"): mAP@0.5 and
// mAP@0.5:0.95 on the split named (test: never used to choose the model), the validation figures
// that chose the training step and the threshold beside them, precision, recall and F1 at the
// serving threshold, the precision-recall curves per class, the per-class table, and the error
// browser (ErrorBrowser.tsx).
import { Alert, Card, Col, Collapse, Row, Space, Statistic, Table, Tooltip, Typography } from "antd";
import { useMemo } from "react";
import { useTranslation } from "react-i18next";

import { detectionReportOf, type DetectionPerClassRow, type DetectionReport, type EvaluationReport } from "../../api/queries/training";
import { Chart } from "../../components/charts/Chart";
import { NotEvaluatedTag } from "../../components/NotEvaluatedTag";
import { prCurvesOption, totalErrors } from "./detection";
import { ErrorBrowser } from "./ErrorBrowser";
import { notEvaluated } from "./imbalance";
import { classColumn, pct, perClassRowProps, ReportBreadcrumb, ReportTitle, WeightsAlert } from "./reportParts";

export function DetectionReportView(props: { evaluation: EvaluationReport; projectId: string; jobId: string; name: string; versionId: string | undefined }) {
  const { t } = useTranslation();
  const { evaluation: e, projectId, jobId, name } = props;
  const report = useMemo(() => detectionReportOf(e), [e]);
  const split = report.split === "test" || (report.split === undefined && e.split === "test") ? "test" : "val";
  // classes of the model with no true box in the split: the means leave them out
  const missing = report.per_class.filter(notEvaluated).map((r) => r.label);
  const skipped = report.skipped_samples ?? [];
  const threshold = report.score_threshold.toFixed(2);

  return (
    <Space orientation="vertical" size="middle" style={{ width: "100%" }} data-testid="detection-report">
      <ReportBreadcrumb projectId={projectId} jobId={jobId} name={name} />
      <ReportTitle name={name} />
      <Typography.Text data-testid="report-split">
        {t(split === "test" ? "report.detection.splitTest" : "report.detection.splitVal", { count: report.n, boxes: report.boxes })}{" "}
        <Typography.Text type="secondary">{t("report.onnxNote")}</Typography.Text>
      </Typography.Text>
      {missing.length > 0 && (
        <Alert
          type="warning"
          showIcon
          data-testid="report-missing-classes"
          title={t(split === "test" ? "report.detection.missingClassesTest" : "report.detection.missingClassesVal", {
            count: missing.length,
            classes: missing.join(", "),
          })}
          description={t(split === "test" ? "report.missingClassesHint" : "report.missingClassesHintVal")}
        />
      )}
      {skipped.length > 0 && <SkippedAlert skipped={skipped} />}
      <Space size="large" wrap align="start">
        <div>
          <Statistic title={t("report.detection.map50")} value={pct(report.map50)} data-testid="report-map50" />
          <NotEvaluatedTag headline={{ split, notEvaluated: missing }} />
        </div>
        <Statistic title={t("report.detection.map")} value={pct(report.map)} data-testid="report-map" />
        <Statistic title={t("report.evaluated")} value={report.n} />
        <Statistic title={t("report.detection.objects")} value={report.boxes} />
        {split === "test" && report.validation && (
          <Statistic
            title={t("report.detection.validation")}
            data-testid="report-validation"
            value={t("report.detection.validationValue", { map50: pct(report.validation.map50), map: pct(report.validation.map), n: report.validation.n })}
            styles={{ content: { fontSize: 16 } }}
          />
        )}
      </Space>
      <Card size="small" title={t("report.detection.atThreshold", { threshold })} data-testid="report-threshold">
        <Space size="large" wrap>
          <Statistic title={t("report.precision")} value={pct(report.precision)} data-testid="report-precision" />
          <Statistic title={t("report.recall")} value={pct(report.recall)} data-testid="report-recall" />
          <Statistic title={t("report.f1")} value={pct(report.f1)} data-testid="report-f1" />
          <Statistic title={t("report.errors")} value={totalErrors(report)} />
        </Space>
        <Typography.Paragraph type="secondary" style={{ margin: "8px 0 0" }}>
          {t("report.detection.thresholdHint", { threshold })}
        </Typography.Paragraph>
      </Card>
      <WeightsAlert evaluation={e} />
      <Row gutter={[16, 16]}>
        <Col xs={24} xl={13}>
          <Card size="small" title={t("report.detection.prCurves")} extra={<Typography.Text type="secondary">{t("report.detection.prHint")}</Typography.Text>}>
            <PrCurves report={report} />
          </Card>
        </Col>
        <Col xs={24} xl={11}>
          <Card size="small" title={t("report.perClass")}>
            <PerClassTable rows={report.per_class} split={split} />
          </Card>
        </Col>
      </Row>
      <ErrorBrowser projectId={projectId} versionId={props.versionId} report={report} labels={e.labels} />
    </Space>
  );
}

function PrCurves({ report }: { report: DetectionReport }) {
  const { t } = useTranslation();
  const option = useMemo(
    () =>
      prCurvesOption(report, {
        recall: t("report.recall"),
        precision: t("report.precision"),
        atRecall: (recall) => t("report.detection.atRecall", { recall }),
      }),
    [report, t],
  );
  if (report.pr_curves.length === 0) return <Typography.Text type="secondary">{t("report.detection.noCurves")}</Typography.Text>;
  return <Chart option={option} height={360} ariaLabel={t("report.detection.prCurves")} />;
}

/** AP per class and precision/recall at the serving threshold; a class with no true box reads so, greyed, with "—". */
function PerClassTable({ rows, split }: { rows: DetectionPerClassRow[]; split: string }) {
  const { t } = useTranslation();
  const num = (x: number | null, r: DetectionPerClassRow) => (notEvaluated(r) || x === null ? "—" : x.toFixed(3));
  const by = (key: "ap50" | "ap" | "precision" | "recall") => (a: DetectionPerClassRow, b: DetectionPerClassRow) => (a[key] ?? -1) - (b[key] ?? -1);
  return (
    <Table<DetectionPerClassRow>
      rowKey="index"
      size="small"
      dataSource={rows}
      data-testid="per-class"
      // six columns do not fit half the page at 1280 px: the table scrolls, the card does not
      scroll={{ x: "max-content" }}
      {...perClassRowProps(rows)}
      columns={[
        classColumn(t, split),
        { title: t("report.detection.ap50"), dataIndex: "ap50", render: num, sorter: by("ap50") },
        { title: t("report.detection.ap"), dataIndex: "ap", render: num, sorter: by("ap") },
        {
          title: <Tooltip title={t("report.detection.supportHint")}>{t("report.detection.support")}</Tooltip>,
          dataIndex: "support",
          sorter: (a, b) => a.support - b.support,
        },
        { title: t("report.precision"), dataIndex: "precision", render: num, sorter: by("precision") },
        { title: t("report.recall"), dataIndex: "recall", render: num, sorter: by("recall") },
      ]}
    />
  );
}

/** Images or boxes the engine left out (an undecodable file, a box under 1 px), in its words. */
function SkippedAlert({ skipped }: { skipped: NonNullable<DetectionReport["skipped_samples"]> }) {
  const { t } = useTranslation();
  return (
    <Alert
      type="warning"
      showIcon
      data-testid="report-skipped"
      title={t("report.detection.skipped", { count: skipped.length })}
      description={
        <Collapse
          ghost
          size="small"
          items={[
            {
              key: "list",
              label: t("report.detection.skippedList"),
              children: (
                <ul style={{ margin: 0, paddingInlineStart: 20, maxHeight: 200, overflow: "auto" }}>
                  {skipped.slice(0, 200).map((s, i) => (
                    <li key={i}>
                      <Typography.Text code>{s.sample_id.slice(0, 8)}</Typography.Text>
                      {typeof s.box === "number" ? ` ${t("report.detection.skippedBox", { box: s.box + 1 })}` : ""}: {s.error}
                    </li>
                  ))}
                </ul>
              ),
            },
          ]}
        />
      }
    />
  );
}
