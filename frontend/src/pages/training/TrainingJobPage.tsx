// One training job, live: status, phase, epoch, a progress bar with time left, loss and
// validation curves fed by the websocket (polling every 2 s while the socket is down), cancel;
// then the links to its report and model version, or the server's error.
import { StopOutlined } from "@ant-design/icons";
import { useQueryClient } from "@tanstack/react-query";
import { Alert, Breadcrumb, Button, Card, Descriptions, Popconfirm, Progress, Skeleton, Space, Statistic, Tag, Tooltip, Typography } from "antd";
import { useCallback, useEffect, useMemo, useState } from "react";
import { useTranslation } from "react-i18next";
import { Link, useParams } from "react-router";

import { useCanEdit } from "../../api/queries/projects";
import { trainingKeys, useCancelTraining, useModelVersion, useTrainingJob } from "../../api/queries/training";
import { Chart } from "../../components/charts/Chart";
import { DatasetVersionLink } from "../../components/DatasetVersionLink";
import { ErrorAlert, useReportError } from "../../components/errors";
import { EditorOnly } from "../../components/ReadOnly";
import { formatDate } from "../../format";
import { applyMessage, applySnapshot, formatDuration, historySeries, isTerminal, keptIndex, percentDone, type JobMessage, type LiveJob } from "./jobState";
import { JobStatusTag } from "../../components/JobStatusTag";
import { jobSocketUrl, useJobSocket } from "./useJobSocket";

type PhaseKey = keyof typeof import("../../i18n/locales/en.json")["training"]["phases"];

export function TrainingJobPage() {
  const { t } = useTranslation();
  const { projectId = "", jobId = "" } = useParams();
  const queryClient = useQueryClient();
  const [live, setLive] = useState<LiveJob | null>(null);
  const terminal = live !== null && isTerminal(live.status);

  const onMessage = useCallback(
    (message: JobMessage) => {
      setLive((state) => (state ? applyMessage(state, message) : state));
      // the end: refetch for the model version, final history and metrics
      if (message.status && isTerminal(message.status)) {
        void queryClient.invalidateQueries({ queryKey: trainingKeys.detail(projectId, jobId) });
        void queryClient.invalidateQueries({ queryKey: trainingKeys.list(projectId) });
      }
    },
    [queryClient, projectId, jobId],
  );
  const connected = useJobSocket(jobSocketUrl("training", jobId), live !== null && !terminal, onMessage);
  const job = useTrainingJob(projectId, jobId, connected ? 5_000 : 2_000);

  useEffect(() => {
    if (job.data) setLive((state) => applySnapshot(state, job.data));
  }, [job.data]);

  if (job.isError) return <ErrorAlert error={job.error} onRetry={() => void job.refetch()} />;
  if (!job.data || !live) return <Skeleton active />;
  const j = job.data;

  return (
    <Space orientation="vertical" size="middle" style={{ width: "100%" }}>
      <Breadcrumb
        items={[
          { title: <Link to={`/projects/${projectId}/training`}>{t("training.title")}</Link> },
          { title: j.model_name || j.id.slice(0, 8) },
        ]}
      />
      <Space style={{ width: "100%", justifyContent: "space-between" }} wrap>
        <Space align="baseline" wrap>
          <Typography.Title level={3} style={{ margin: 0 }}>
            {t("training.jobTitle", { name: j.model_name || j.id.slice(0, 8) })}
          </Typography.Title>
          <JobStatusTag status={live.status} />
          {!terminal && (
            <Tooltip title={connected ? t("training.liveHint") : t("training.pollingHint")}>
              <Tag color={connected ? "green" : "default"} data-testid="live-tag">
                {connected ? t("training.live") : t("training.polling")}
              </Tag>
            </Tooltip>
          )}
        </Space>
        {!terminal && <CancelButton projectId={projectId} jobId={jobId} />}
      </Space>
      {live.status === "FAILED" && (
        <Alert type="error" showIcon role="alert" title={t("training.failed")} description={live.error || t("training.noReason")} />
      )}
      {live.status === "CANCELLED" && <Alert type="warning" showIcon title={t("training.cancelled")} />}
      {live.status === "SUCCEEDED" && <SucceededLinks projectId={projectId} jobId={jobId} modelVersionId={j.model_version_id} />}
      <ProgressCard live={live} budget={j.budget_s} />
      <CurvesCard live={live} metrics={live.status === "SUCCEEDED" ? j.metrics : undefined} />
      <Descriptions
        size="small"
        bordered
        column={2}
        items={[
          { key: "budget", label: t("training.budget"), children: formatDuration(j.budget_s) },
          { key: "arch", label: t("training.architecture"), children: j.architecture || "—" },
          {
            key: "version",
            label: t("training.version"),
            children: <DatasetVersionLink projectId={projectId} version={j.dataset_version} />,
          },
          { key: "seed", label: t("versions.seed"), children: j.seed },
          { key: "created", label: t("common.createdAt"), children: formatDate(j.created_at) },
          { key: "finished", label: t("training.finishedAt"), children: formatDate(j.finished_at) || "—" },
          ...(j.weights_note ? [{ key: "weights", label: t("training.weights"), children: j.weights_note, span: 2 }] : []),
        ]}
      />
    </Space>
  );
}

function ProgressCard({ live, budget }: { live: LiveJob; budget: number }) {
  const { t } = useTranslation();
  const p = live.progress;
  const running = live.status === "RUNNING";
  const percent = percentDone(live);
  // step events carry no validation accuracy: show the last epoch's
  const lastAccuracy = p.val_accuracy ?? [...live.history].reverse().find((h) => typeof h.val_accuracy === "number")?.val_accuracy;
  return (
    <Card size="small">
      <Space size="large" wrap>
        <Statistic
          title={t("training.phase")}
          value={p.phase ? t(`training.phases.${p.phase as PhaseKey}`, { defaultValue: p.phase }) : "—"}
        />
        <Statistic title={t("training.epoch")} value={typeof p.epoch === "number" ? `${p.epoch} / ${p.epochs ?? "?"}` : "—"} />
        <Statistic title={t("training.loss")} value={typeof p.loss === "number" ? p.loss.toFixed(4) : "—"} />
        <Statistic
          title={t("training.valAccuracy")}
          value={typeof lastAccuracy === "number" ? `${(100 * lastAccuracy).toFixed(1)}%` : "—"}
        />
        <Statistic title={t("training.elapsed")} value={typeof p.elapsed_s === "number" ? formatDuration(p.elapsed_s) : "—"} />
        <Statistic
          title={t("training.timeLeft")}
          value={running && typeof p.eta_s === "number" ? formatDuration(p.eta_s) : isTerminal(live.status) ? "—" : t("training.budgetOf", { budget: formatDuration(budget) })}
        />
      </Space>
      <Progress
        data-testid="training-progress"
        percent={percent}
        status={live.status === "FAILED" ? "exception" : live.status === "SUCCEEDED" ? "success" : running ? "active" : "normal"}
      />
      {!running && !isTerminal(live.status) && <Typography.Text type="secondary">{t("training.waiting")}</Typography.Text>}
    </Card>
  );
}

function CurvesCard({ live, metrics }: { live: LiveJob; metrics: unknown }) {
  const { t } = useTranslation();
  const series = useMemo(
    () => historySeries(live.history, (h) => (h.phase === "head" ? t("training.probeTick") : String(h.epoch))),
    [live.history, t],
  );
  // the model kept is the best epoch, which may not be the last: mark it, and say so
  const kept = keptIndex(live.history, metrics);
  const keptEntry = kept >= 0 ? live.history[kept] : undefined;
  const option = useMemo(
    () => ({
      animation: false,
      tooltip: { trigger: "axis" },
      legend: { top: 0 },
      grid: { left: 56, right: 56, top: 36, bottom: 36 },
      xAxis: { type: "category", name: t("training.epoch"), nameLocation: "middle", nameGap: 24, data: series.epochs },
      yAxis: [
        { type: "value", name: t("training.loss"), scale: true },
        { type: "value", name: t("training.valAccuracy"), min: 0, max: 1, axisLabel: { formatter: (v: number) => `${Math.round(v * 100)}%` } },
      ],
      series: [
        { name: t("training.loss"), type: "line", data: series.loss, showSymbol: true, connectNulls: true },
        { name: t("training.valLoss"), type: "line", data: series.valLoss, showSymbol: true, connectNulls: true },
        {
          name: t("training.valAccuracy"),
          type: "line",
          yAxisIndex: 1,
          data: series.valAccuracy,
          showSymbol: true,
          connectNulls: true,
          ...(kept >= 0 && {
            markLine: { symbol: "none", silent: true, label: { formatter: t("training.keptMark") }, data: [{ xAxis: kept }] },
          }),
        },
      ],
    }),
    [series, t, kept],
  );
  return (
    <Card size="small" title={t("training.curves")}>
      {series.epochs.length === 0 ? (
        <Typography.Text type="secondary">{t("training.noEpochs")}</Typography.Text>
      ) : (
        <Chart option={option} height={280} ariaLabel={t("training.curves")} />
      )}
      {keptEntry && (
        <Typography.Text type="secondary" data-testid="kept-epoch">
          {t("training.kept", {
            where: keptEntry.phase === "head" ? t("training.probeTick") : t("training.keptEpoch", { epoch: keptEntry.epoch }),
            accuracy: typeof keptEntry.val_accuracy === "number" ? `${(100 * keptEntry.val_accuracy).toFixed(1)}%` : "—",
          })}
        </Typography.Text>
      )}
    </Card>
  );
}

function CancelButton({ projectId, jobId }: { projectId: string; jobId: string }) {
  const { t } = useTranslation();
  const cancel = useCancelTraining(projectId, jobId);
  const reportError = useReportError();
  const canEdit = useCanEdit(projectId);
  if (!canEdit) {
    return (
      <EditorOnly canEdit={false}>
        <Button danger icon={<StopOutlined />} disabled>
          {t("training.cancelJob")}
        </Button>
      </EditorOnly>
    );
  }
  return (
    <Popconfirm
      title={t("training.cancelConfirm")}
      okText={t("training.cancelJob")}
      cancelText={t("training.keepRunning")}
      okButtonProps={{ danger: true }}
      onConfirm={() => cancel.mutate(undefined, { onError: (error) => reportError(error) })}
    >
      <Button danger icon={<StopOutlined />} loading={cancel.isPending}>
        {t("training.cancelJob")}
      </Button>
    </Popconfirm>
  );
}

function SucceededLinks({ projectId, jobId, modelVersionId }: { projectId: string; jobId: string; modelVersionId: string | null }) {
  const { t } = useTranslation();
  const model = useModelVersion(projectId, modelVersionId);
  return (
    <Alert
      type="success"
      showIcon
      title={t("training.succeeded")}
      description={
        <Space wrap>
          <Link to={`/projects/${projectId}/training/${jobId}/report`} data-testid="report-link">
            {t("training.openReport")}
          </Link>
          {modelVersionId && (
            <Link to={`/projects/${projectId}/models/versions/${modelVersionId}`} data-testid="model-link">
              {model.data ? t("training.openModel", { name: model.data.model_name, version: model.data.version }) : t("training.openModelPlain")}
            </Link>
          )}
        </Space>
      }
    />
  );
}
