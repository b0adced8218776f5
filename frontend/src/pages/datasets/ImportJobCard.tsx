import { Alert, Card, Collapse, Progress, Space, Statistic, Table, Typography } from "antd";
import { useQueryClient } from "@tanstack/react-query";
import { useEffect } from "react";
import { useTranslation } from "react-i18next";

import {
  datasetKeys,
  importReportOf,
  progressOf,
  TERMINAL_JOB_STATES,
  useImportJob,
  type ImportFileOutcome,
  type ImportJob,
} from "../../api/queries/datasets";
import { ErrorAlert } from "../../components/errors";
import { JobStatusTag } from "../../components/JobStatusTag";
import { detectionReportOf } from "./detectionReport";
import { DetectionReportView } from "./DetectionReportView";
import { TextImportReportView } from "./TextImportReportView";
import { textReportOf } from "./textReport";

/** One import job: its progress while it runs (polled every second), then its report. */
export function ImportJobCard({ projectId, datasetId, jobId }: { projectId: string; datasetId: string; jobId: string }) {
  const { t } = useTranslation();
  const job = useImportJob(projectId, jobId);
  const queryClient = useQueryClient();
  const status = job.data?.status;
  const ended = status !== undefined && TERMINAL_JOB_STATES.has(status);

  useEffect(() => {
    if (ended) {
      void queryClient.invalidateQueries({ queryKey: datasetKeys.detail(projectId, datasetId) });
      void queryClient.invalidateQueries({ queryKey: datasetKeys.list(projectId) });
    }
  }, [ended, queryClient, projectId, datasetId]);

  if (job.isError) return <ErrorAlert error={job.error} onRetry={() => void job.refetch()} />;
  if (!job.data) return <Card size="small" loading />;

  return (
    <Card
      size="small"
      data-testid="import-job"
      title={t("imports.title", { id: jobId.slice(0, 8) })}
      extra={
        <JobStatusTag status={job.data.status} />
      }
    >
      <JobBody job={job.data} />
    </Card>
  );
}

function JobBody({ job }: { job: ImportJob }) {
  const { t } = useTranslation();
  const progress = progressOf(job);
  const report = importReportOf(job);
  const detection = detectionReportOf(job.report);
  const text = textReportOf(job.report);

  if (!TERMINAL_JOB_STATES.has(job.status)) {
    return (
      <div>
        <Progress percent={Math.floor(100 * (progress.fraction ?? 0))} status="active" />
        {progress.total !== undefined && (
          <Typography.Text type="secondary">{t("imports.progress", { done: progress.done ?? 0, total: progress.total })}</Typography.Text>
        )}
      </div>
    );
  }
  return (
    <Space orientation="vertical" style={{ width: "100%" }}>
      {job.status === "FAILED" && <Alert type="error" showIcon title={job.error} />}
      {report && (
        <ImportReportView
          imported={report.imported}
          duplicates={report.duplicates}
          duplicateCount={text?.duplicates}
          ignored={report.ignored}
          rejected={report.rejected}
        />
      )}
      {detection && <DetectionReportView report={detection} />}
      {text && <TextImportReportView report={text} />}
    </Space>
  );
}

export function ImportReportView(props: {
  imported: number;
  duplicates: ImportFileOutcome[];
  /** every duplicate, when the report lists only some (a text import lists at most 200) */
  duplicateCount?: number;
  ignored: ImportFileOutcome[];
  rejected: ImportFileOutcome[];
}) {
  const { t } = useTranslation();
  const lists = (["rejected", "ignored", "duplicates"] as const).filter((kind) => props[kind].length > 0);
  return (
    <Space orientation="vertical" style={{ width: "100%" }}>
      <Space size="large" wrap>
        <Statistic title={t("imports.imported")} value={props.imported} />
        <Statistic title={t("imports.duplicates")} value={Math.max(props.duplicateCount ?? 0, props.duplicates.length)} />
        <Statistic title={t("imports.ignored")} value={props.ignored.length} />
        <Statistic
          title={t("imports.rejected")}
          value={props.rejected.length}
          styles={props.rejected.length ? { content: { color: "#cf1322" } } : undefined}
        />
      </Space>
      {lists.length === 0 ? (
        <Typography.Text type="secondary">{t("imports.nothingSkipped")}</Typography.Text>
      ) : (
        <Collapse
          size="small"
          defaultActiveKey={lists.includes("rejected") ? ["rejected"] : []}
          items={lists.map((kind) => ({
            key: kind,
            label: `${t(`imports.${kind}`)} (${props[kind].length})`,
            children: (
              <Table<ImportFileOutcome>
                size="small"
                rowKey={(row) => `${row.name}\u0000${row.reason}`}
                dataSource={props[kind]}
                pagination={props[kind].length > 20 ? { pageSize: 20, showSizeChanger: false } : false}
                columns={[
                  { title: t("imports.file"), dataIndex: "name", ellipsis: true },
                  { title: t("imports.reason"), dataIndex: "reason" },
                ]}
              />
            ),
          }))}
        />
      )}
    </Space>
  );
}
