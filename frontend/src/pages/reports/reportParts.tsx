// What the classification and the detection report pages share: the breadcrumb and heading, where
// the weights came from, the words for a class the evaluated split holds nothing of.
import type { TFunction } from "i18next";
import { Alert, Breadcrumb, Typography, type TableProps } from "antd";
import type { ColumnType } from "antd/es/table";
import { useTranslation } from "react-i18next";
import { Link } from "react-router";

import type { EvaluationReport } from "../../api/queries/training";
import { notEvaluated } from "./imbalance";

export const pct = (x: number) => `${(100 * x).toFixed(1)}%`;

export function ReportBreadcrumb({ projectId, jobId, name }: { projectId: string; jobId: string; name: string }) {
  const { t } = useTranslation();
  return (
    <Breadcrumb
      items={[
        { title: <Link to={`/projects/${projectId}/training`}>{t("training.title")}</Link> },
        { title: <Link to={`/projects/${projectId}/training/${jobId}`}>{name}</Link> },
        { title: t("report.title") },
      ]}
    />
  );
}

export function ReportTitle({ name }: { name: string }) {
  const { t } = useTranslation();
  return (
    <Typography.Title level={3} style={{ margin: 0 }}>
      {t("report.heading", { name })}
    </Typography.Title>
  );
}

/** Pretrained or from scratch, with the engine's note on the weights. */
export function WeightsAlert({ evaluation }: { evaluation: Pick<EvaluationReport, "pretrained" | "weights_note"> }) {
  const { t } = useTranslation();
  const e = evaluation;
  return e.pretrained === false ? (
    <Alert type="warning" showIcon title={t("report.notPretrained")} description={e.weights_note || undefined} />
  ) : e.pretrained === true ? (
    <Alert type="info" showIcon title={t("report.pretrained")} description={e.weights_note || undefined} />
  ) : e.weights_note ? (
    <Alert type="info" showIcon title={e.weights_note} />
  ) : null;
}

/** "not in the test split" (or validation): a class with nothing in the evaluated split. */
export function notInSplitText(t: TFunction, split: string): string {
  return split === "test" ? t("report.notInTestSplit") : t("report.notInValSplit");
}

type ClassRow = { label: string; support: number };

/** What both per-class tables do with their rows: classes not evaluated greyed, 20 a page. */
export function perClassRowProps<R extends ClassRow>(rows: R[]): Pick<TableProps<R>, "onRow" | "pagination"> {
  return {
    onRow: (r) => (notEvaluated(r) ? { style: { color: "rgba(0, 0, 0, 0.45)" } } : {}),
    pagination: rows.length > 20 ? { pageSize: 20, showSizeChanger: false } : false,
  };
}

/** The class column of a per-class table: the name, and "(not in the test split)" when not evaluated. */
export function classColumn<R extends ClassRow>(t: TFunction, split: string): ColumnType<R> {
  return {
    title: t("report.class"),
    dataIndex: "label",
    render: (label: string, r) =>
      notEvaluated(r) ? (
        <Typography.Text type="secondary">
          {label} <Typography.Text type="secondary" italic>({notInSplitText(t, split)})</Typography.Text>
        </Typography.Text>
      ) : (
        label
      ),
  };
}
