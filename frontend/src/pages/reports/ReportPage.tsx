// A training job's evaluation report: an object detector's (report.task "object_detection") in
// DetectionReport.tsx, every other a classifier's here: the split it was computed on (test: never
// used to choose the model; else validation), accuracy and macro-F1 (per-class recall and
// macro-F1 first when the classes are imbalanced), the validation figures beside test ones, where
// the weights came from, the per-class table, the confusion matrix (click a cell for its
// samples), the misclassified samples. A text classifier's report (the job's task_type
// text_classification) is the same with texts in place of images (TextSamples.tsx).
import { useQuery, useQueryClient } from "@tanstack/react-query";
import { Alert, Card, Col, Empty, Pagination, Progress, Row, Skeleton, Space, Statistic, Table, Tooltip, Typography } from "antd";
import { Fragment, useMemo, useState } from "react";
import { useTranslation } from "react-i18next";
import { useParams } from "react-router";

import { api } from "../../api/client";
import { unwrap } from "../../api/errors";
import {
  classificationReportOf,
  isDetectionReport,
  useTrainingJob,
  useTrainingReport,
  type ClassificationReport,
  type EvaluationReport,
  type PerClassRow,
} from "../../api/queries/training";
import { sampleKey } from "../../api/queries/samples";
import { useDatasetVersion } from "../../api/queries/versions";
import { Chart, type ChartClick } from "../../components/charts/Chart";
import { ErrorAlert } from "../../components/errors";
import { cellSamples, heatmapSeries, maxOffDiagonal } from "./confusion";
import { DetectionReportView } from "./DetectionReport";
import { classesWithoutEvaluation, notEvaluated, reportImbalance } from "./imbalance";
import { classColumn, notInSplitText, pct, perClassRowProps, ReportBreadcrumb, ReportTitle, WeightsAlert } from "./reportParts";
import { SampleThumb } from "./SampleThumb";
import { isTextTask } from "../training/textJob";
import { TextSamples, textReportNotes } from "./TextSamples";

const THUMBS_PER_PAGE = 48;

export function ReportPage() {
  const { projectId = "", jobId = "" } = useParams();
  const evaluation = useTrainingReport(projectId, jobId);
  const job = useTrainingJob(projectId, jobId, 10_000);

  if (evaluation.isError) return <ErrorAlert error={evaluation.error} onRetry={() => void evaluation.refetch()} />;
  // the job says the task: a text classifier's samples are texts, not images
  if (!evaluation.data || job.isPending) return <Skeleton active />;
  const name = job.data?.model_name || jobId.slice(0, 8);
  const props = { evaluation: evaluation.data, projectId, jobId, name, versionId: job.data?.dataset_version_id };
  return isDetectionReport(evaluation.data) ? (
    <DetectionReportView {...props} />
  ) : (
    <ClassificationReportView {...props} text={isTextTask(job.data?.task_type)} />
  );
}

function ClassificationReportView(props: { evaluation: EvaluationReport; projectId: string; jobId: string; name: string; versionId: string | undefined; text?: boolean }) {
  const { t } = useTranslation();
  const { evaluation: e, projectId, jobId, name, text = false } = props;
  const [cell, setCell] = useState<{ row: number; col: number } | null>(null);

  const report = useMemo(() => classificationReportOf(e), [e]);
  const labels = e.labels;
  // the split the figures were computed on: the report's own word, else the evaluation's
  const split = report.split ?? e.split ?? "val";
  // only reports without `predictions` need the evaluated samples' true labels (diagonal cells)
  const trueLabels = useSplitTrueLabels(projectId, props.versionId, split, report.predictions.length === 0);

  const selected = cell ? cellSamples(report, labels, cell.row, cell.col, trueLabels) : [];
  // imbalanced classes (judged on the training split when the report says): per-class recall
  // and macro-F1 lead, accuracy follows
  const { imbalanced, ratio } = reportImbalance(report);
  const fromTraining = typeof report.imbalanced === "boolean";
  // classes the model learned that the evaluated split holds no image of
  const missing = classesWithoutEvaluation(report);
  const macroF1 = <Statistic title={t("report.macroF1")} value={pct(report.macro_f1)} data-testid="report-macro-f1" />;
  // a text report: texts longer than the model reads, and empty ones left out
  const notes = text ? textReportNotes(e.report, split) : null;

  return (
    <Space orientation="vertical" size="middle" style={{ width: "100%" }}>
      <ReportBreadcrumb projectId={projectId} jobId={jobId} name={name} />
      <ReportTitle name={name} />
      <Typography.Text data-testid="report-split">
        {text
          ? t(split === "test" ? "report.text.splitTest" : "report.text.splitVal", { count: report.n })
          : split === "test"
            ? t("report.splitTest", { count: report.n })
            : t("report.splitVal", { count: report.n })}{" "}
        <Typography.Text type="secondary">{t("report.onnxNote")}</Typography.Text>
      </Typography.Text>
      {notes && (notes.truncated > 0 || notes.skipped > 0) && (
        <Typography.Text type="secondary" data-testid="report-text-notes">
          {[
            notes.truncated > 0 ? t("report.text.truncated", { count: notes.truncated }) : "",
            notes.skipped > 0 ? t("report.text.skipped", { count: notes.skipped }) : "",
          ]
            .filter(Boolean)
            .join(" ")}
        </Typography.Text>
      )}
      {missing.length > 0 && (
        <Alert
          type="warning"
          showIcon
          data-testid="report-missing-classes"
          title={t(
            text
              ? split === "test" ? "report.text.missingClassesTest" : "report.text.missingClassesVal"
              : split === "test" ? "report.missingClassesTest" : "report.missingClassesVal",
            { count: missing.length, classes: missing.join(", ") },
          )}
          description={t(
            text
              ? split === "test" ? "report.text.missingClassesHint" : "report.text.missingClassesHintVal"
              : split === "test" ? "report.missingClassesHint" : "report.missingClassesHintVal",
          )}
        />
      )}
      {imbalanced && (
        <Alert
          type="info"
          showIcon
          data-testid="report-imbalanced"
          title={
            ratio === null
              ? t("report.imbalancedPlain")
              : t(fromTraining ? (text ? "report.text.imbalancedTrain" : "report.imbalancedTrain") : "report.imbalanced", { ratio: ratio.toFixed(1) })
          }
        />
      )}
      {imbalanced && <RecallPerClass rows={report.per_class} split={split} />}
      <Space size="large" wrap>
        {imbalanced && macroF1}
        <Statistic title={t("report.accuracy")} value={pct(report.accuracy)} data-testid="report-accuracy" />
        {!imbalanced && macroF1}
        <Statistic title={t("report.evaluated")} value={report.n} />
        <Statistic title={t("report.misclassified")} value={report.misclassified.length} />
        {split === "test" && report.validation && (
          <Statistic
            title={t("report.validation")}
            data-testid="report-validation"
            value={t(text ? "report.text.validationValue" : "report.validationValue", {
              accuracy: pct(report.validation.accuracy),
              f1: pct(report.validation.macro_f1),
              n: report.validation.n,
            })}
            styles={{ content: { fontSize: 16 } }}
          />
        )}
      </Space>
      {/* a text model starts from nothing by design: no pretrained text weights to compare with */}
      {!text && <WeightsAlert evaluation={e} />}
      <Row gutter={[16, 16]}>
        <Col xs={24} xl={13}>
          <Card size="small" title={t("report.confusion")} extra={<Typography.Text type="secondary">{t("report.confusionHint")}</Typography.Text>}>
            <ConfusionHeatmap report={report} labels={labels} split={split} onCell={(row, col) => setCell({ row, col })} />
          </Card>
        </Col>
        <Col xs={24} xl={11}>
          <Card
            size="small"
            data-testid="cell-samples"
            title={
              cell
                ? t("report.cellTitle", { true: labels[cell.row], predicted: labels[cell.col], count: selected.length })
                : t("report.cellNone")
            }
          >
            {cell ? (
              text ? (
                <TextSamples key={`${cell.row}:${cell.col}`} projectId={projectId} samples={selected} />
              ) : (
                <ThumbGrid projectId={projectId} samples={selected} />
              )
            ) : (
              <Typography.Text type="secondary">{t("report.cellPick")}</Typography.Text>
            )}
          </Card>
        </Col>
      </Row>
      <Card size="small" title={t("report.perClass")}>
        <PerClassTable rows={report.per_class} split={split} />
      </Card>
      <Card size="small" title={t("report.misclassifiedTitle", { count: report.misclassified.length })}>
        {text ? (
          <TextSamples projectId={projectId} samples={report.misclassified} emptyText={t("report.noneMisclassified")} />
        ) : (
          <ThumbGrid projectId={projectId} samples={report.misclassified} emptyText={t("report.noneMisclassified")} />
        )}
      </Card>
    </Space>
  );
}

function ConfusionHeatmap(props: { report: ClassificationReport; labels: string[]; split: string; onCell: (row: number, col: number) => void }) {
  const { t } = useTranslation();
  const { report, labels, split, onCell } = props;
  const option = useMemo(() => {
    const { errors, correct, absent } = heatmapSeries(report.confusion_matrix);
    const notInSplit = notInSplitText(t, split);
    return {
      tooltip: {
        position: "top",
        formatter: (p: { seriesIndex: number; data: [number, number, number] }) =>
          p.seriesIndex === 2
            ? `${labels[p.data[1]]}: ${notInSplit}`
            : t("report.cellTooltip", { true: labels[p.data[1]], predicted: labels[p.data[0]], count: p.data[2] }),
      },
      grid: { left: 72, right: 24, top: 16, bottom: 96 },
      xAxis: { type: "category", data: labels, name: t("report.predicted"), nameLocation: "middle", nameGap: 32, splitArea: { show: true } },
      yAxis: { type: "category", data: labels, name: t("report.true"), nameLocation: "middle", nameGap: 52, inverse: true, splitArea: { show: true } },
      visualMap: {
        seriesIndex: 0,
        min: 0,
        max: maxOffDiagonal(report.confusion_matrix),
        calculable: false,
        orient: "horizontal",
        left: "center",
        bottom: 0,
        itemHeight: 120,
        itemWidth: 12,
        inRange: { color: ["#fafafa", "#ff7a45", "#a8071a"] },
        text: [t("report.errorsMore"), t("report.errorsNone")],
      },
      series: [
        {
          name: t("report.errors"),
          type: "heatmap",
          data: errors,
          label: { show: true, formatter: (p: { data: number[] }) => (p.data[2] ? String(p.data[2]) : "") },
          emphasis: { itemStyle: { borderColor: "#000", borderWidth: 1 } },
        },
        {
          name: t("report.correct"),
          type: "heatmap",
          data: correct,
          itemStyle: { color: "#b7eb8f" },
          label: { show: true },
          emphasis: { itemStyle: { borderColor: "#000", borderWidth: 1 } },
        },
        {
          // classes with no image in the split: nothing to be correct about, so not green
          name: notInSplit,
          type: "heatmap",
          data: absent,
          itemStyle: { color: "#f0f0f0" },
          label: { show: true, color: "#bfbfbf", formatter: () => "—" },
        },
      ],
    };
  }, [report, labels, split, t]);
  const size = Math.min(560, Math.max(300, 120 + labels.length * 36));
  return (
    <Chart
      option={option}
      height={size}
      ariaLabel={t("report.confusion")}
      onClick={(p: ChartClick) => {
        const d = p.data as number[] | undefined;
        if (Array.isArray(d) && typeof d[0] === "number" && typeof d[1] === "number") onCell(d[1], d[0]);
      }}
    />
  );
}

/**
 * Each class's recall as a bar, smallest first: what accuracy hides when classes are imbalanced.
 * Classes with no image in the split come last, greyed, without a bar.
 */
function RecallPerClass({ rows, split }: { rows: PerClassRow[]; split: string }) {
  const { t } = useTranslation();
  const sorted = [...rows.filter((r) => !notEvaluated(r)).sort((a, b) => a.recall - b.recall), ...rows.filter(notEvaluated)];
  return (
    <Card size="small" title={t("report.recallPerClass")} data-testid="report-recall">
      <div style={{ display: "grid", gridTemplateColumns: "minmax(80px, max-content) minmax(160px, 360px) max-content", gap: "4px 12px", alignItems: "center" }}>
        {sorted.map((r) =>
          notEvaluated(r) ? (
            <Fragment key={r.label}>
              <Typography.Text type="secondary">{r.label}</Typography.Text>
              <Typography.Text type="secondary" style={{ gridColumn: "span 2" }}>
                {notInSplitText(t, split)}
              </Typography.Text>
            </Fragment>
          ) : (
            <Fragment key={r.label}>
              <Typography.Text>{r.label}</Typography.Text>
              <Tooltip title={`${t("report.recall")} ${pct(r.recall)} · ${t("report.support")} ${r.support}`}>
                <Progress percent={Math.round(1000 * r.recall) / 10} size="small" showInfo={false} status={r.recall < 0.5 ? "exception" : "normal"} />
              </Tooltip>
              <Typography.Text type="secondary">
                {pct(r.recall)} ({r.support})
              </Typography.Text>
            </Fragment>
          ),
        )}
      </div>
    </Card>
  );
}

/** Classes with no image in the split read so, greyed, with "—" for precision, recall and F1. */
function PerClassTable({ rows, split }: { rows: PerClassRow[]; split: string }) {
  const { t } = useTranslation();
  const num = (x: number, r: PerClassRow) => (notEvaluated(r) ? "—" : x.toFixed(3));
  return (
    <Table<PerClassRow>
      rowKey="label"
      size="small"
      dataSource={rows}
      data-testid="per-class"
      {...perClassRowProps(rows)}
      columns={[
        classColumn(t, split),
        { title: t("report.precision"), dataIndex: "precision", render: num, sorter: (a, b) => a.precision - b.precision },
        { title: t("report.recall"), dataIndex: "recall", render: num, sorter: (a, b) => a.recall - b.recall },
        { title: t("report.f1"), dataIndex: "f1", render: num, sorter: (a, b) => a.f1 - b.f1, defaultSortOrder: undefined },
        { title: t("report.support"), dataIndex: "support", sorter: (a, b) => a.support - b.support },
      ]}
    />
  );
}

function ThumbGrid(props: {
  projectId: string;
  samples: { sample_id: string; true: string; predicted: string; probability: number | null }[];
  emptyText?: string;
}) {
  const { t } = useTranslation();
  const [page, setPage] = useState(1);
  const { samples } = props;
  if (samples.length === 0) return <Empty image={Empty.PRESENTED_IMAGE_SIMPLE} description={props.emptyText ?? t("report.cellEmpty")} />;
  const start = (Math.min(page, Math.ceil(samples.length / THUMBS_PER_PAGE)) - 1) * THUMBS_PER_PAGE;
  return (
    <Space orientation="vertical" style={{ width: "100%" }}>
      <div style={{ display: "flex", flexWrap: "wrap", gap: 8 }}>
        {samples.slice(start, start + THUMBS_PER_PAGE).map((s) => (
          <SampleThumb key={s.sample_id} projectId={props.projectId} sampleId={s.sample_id} predicted={s.predicted} true={s.true} probability={s.probability} />
        ))}
      </div>
      {samples.length > THUMBS_PER_PAGE && (
        <Pagination size="small" current={page} pageSize={THUMBS_PER_PAGE} total={samples.length} onChange={setPage} showSizeChanger={false} />
      )}
    </Space>
  );
}

/**
 * Sample id -> true label name of a version's samples in `split` (all pages of 500). A text
 * sample comes with its text: it is kept as that sample's read by id (TextSamples reads no
 * text twice).
 */
function useSplitTrueLabels(projectId: string, versionId: string | undefined, split: string, enabled: boolean): Map<string, string> | undefined {
  const queryClient = useQueryClient();
  const version = useDatasetVersion(projectId, enabled ? versionId : undefined);
  const datasetId = version.data?.dataset_id;
  const query = useQuery({
    queryKey: ["projects", projectId, "dataset-versions", versionId, "split-labels", split],
    enabled: enabled && Boolean(datasetId && versionId),
    queryFn: async () => {
      const out = new Map<string, string>();
      for (let page = 1; page < 1000; page += 1) {
        const data = unwrap(
          await api().GET("/api/v1/projects/{project_id}/datasets/{dataset_id}/samples/", {
            params: {
              path: { project_id: projectId, dataset_id: datasetId ?? "" },
              query: { version: versionId, split: split === "test" ? "test" : "val", page, page_size: 500 },
            },
          }),
        );
        for (const s of data.results) {
          const label = s.annotations.find((a) => a.kind === "class")?.class_label;
          if (label) out.set(s.id, label);
          if (s.text) queryClient.setQueryData(sampleKey(projectId, s.id), s);
        }
        if (!data.next) break;
      }
      return out;
    },
  });
  return query.data;
}
