// One compression job, live: status, the phase in words with a progress bar, cancel; the
// candidates as they arrive (accuracy, drop, size, the device's latency, the measurement's state),
// the Pareto chart of the measured ones, and the outcome: the pick with its reason, its model
// version and a one-click deploy to the device, or the advice to keep the float model.
// Every websocket event refetches the job (its `candidates` in the database are the truth).
import { CheckCircleOutlined, CloseCircleOutlined, CloudUploadOutlined, SyncOutlined } from "@ant-design/icons";
import { useQueryClient } from "@tanstack/react-query";
import { Alert, App, Breadcrumb, Button, Card, Descriptions, Progress, Skeleton, Space, Table, Tag, Tooltip, Typography } from "antd";
import { useCallback, useEffect, useMemo, useState } from "react";
import { useTranslation } from "react-i18next";
import { Link, useParams } from "react-router";

import {
  candidatesOf,
  compressionKeys,
  compressionProgressOf,
  useCancelCompression,
  useCompressionJob,
  type Candidate,
  type CompressionJob,
} from "../../api/queries/compression";
import { TERMINAL_JOB_STATES } from "../../api/queries/datasets";
import { useDeploy } from "../../api/queries/fleet";
import { useCanEdit } from "../../api/queries/projects";
import { Chart } from "../../components/charts/Chart";
import { ErrorAlert, useReportError } from "../../components/errors";
import { JobStatusTag } from "../../components/JobStatusTag";
import { CancelJobButton } from "../../components/CancelJobButton";
import { EditorOnly } from "../../components/ReadOnly";
import { formatDate } from "../../format";
import { formatDuration } from "../training/jobState";
import { jobSocketUrl, useJobSocket } from "../training/useJobSocket";
import {
  beyondBudget,
  budgetFloor,
  describeCandidate,
  formatAccuracy,
  formatMB,
  formatMs,
  formatPoints,
  formatRatio,
  isTextCandidate,
  p50Of,
  paretoOption,
  paretoPoints,
  progressPercent,
  progressText,
  REFERENCE_KEY,
  referenceOf,
  sizeRatio,
  speedUp,
  type ParetoPoint,
} from "./candidates";

export function CompressionJobPage() {
  const { t } = useTranslation();
  const { projectId = "", jobId = "" } = useParams();
  const queryClient = useQueryClient();
  const [connected, setConnected] = useState(false);
  const job = useCompressionJob(projectId, jobId, connected ? 5_000 : 2_000);
  const terminal = job.data ? TERMINAL_JOB_STATES.has(job.data.status) : false;

  const onMessage = useCallback(
    (message: { status?: string }) => {
      // {status, progress} or {status, candidate}: the job in the database is the truth
      void queryClient.invalidateQueries({ queryKey: compressionKeys.detail(projectId, jobId), exact: true });
      if (message.status && TERMINAL_JOB_STATES.has(message.status)) {
        void queryClient.invalidateQueries({ queryKey: compressionKeys.all(projectId) });
      }
    },
    [queryClient, projectId, jobId],
  );
  const live = useJobSocket(jobSocketUrl("compression", jobId), Boolean(job.data) && !terminal, onMessage);
  useEffect(() => setConnected(live), [live]);

  if (job.isError) return <ErrorAlert error={job.error} onRetry={() => void job.refetch()} />;
  if (!job.data) return <Skeleton active />;
  const j = job.data;
  const candidates = candidatesOf(j);
  const sourceLink = `/projects/${projectId}/models/versions/${j.source.id}`;

  return (
    <Space orientation="vertical" size="middle" style={{ width: "100%" }}>
      <Breadcrumb
        items={[
          { title: <Link to={`/projects/${projectId}/models`}>{t("nav.models")}</Link> },
          { title: <Link to={sourceLink}>{`${j.source.model_name} v${j.source.version}`}</Link> },
          { title: t("compression.title") },
        ]}
      />
      <Space style={{ width: "100%", justifyContent: "space-between" }} wrap>
        <Space align="baseline" wrap>
          <Typography.Title level={3} style={{ margin: 0 }}>
            {t("compression.jobTitle", { name: j.source.model_name, version: j.source.version })}
          </Typography.Title>
          <Typography.Text type="secondary" data-testid="target">
            {j.device_name ? t("compression.forDevice", { device: j.device_name }) : t("compression.forWorker")}
          </Typography.Text>
          <JobStatusTag status={j.status} />
          {!terminal && (
            <Tooltip title={live ? t("training.liveHint") : t("training.pollingHint")}>
              <Tag color={live ? "green" : "default"} data-testid="live-tag">
                {live ? t("training.live") : t("training.polling")}
              </Tag>
            </Tooltip>
          )}
        </Space>
        {!terminal && <CancelButton projectId={projectId} jobId={jobId} />}
      </Space>
      {j.status === "FAILED" && (
        <Alert type="error" showIcon role="alert" title={t("compression.failed")} description={j.error || t("training.noReason")} />
      )}
      {j.status === "CANCELLED" && <Alert type="warning" showIcon title={t("compression.cancelled")} />}
      {j.warnings.map((warning) => (
        <Alert key={warning} type="warning" showIcon title={warning} data-testid="compression-warning" />
      ))}
      {!terminal && <ProgressCard job={j} />}
      {j.status === "SUCCEEDED" && <OutcomeCard projectId={projectId} job={j} candidates={candidates} />}
      <CandidatesTable job={j} candidates={candidates} />
      <ParetoCard job={j} candidates={candidates} />
      <Descriptions
        size="small"
        bordered
        column={2}
        items={[
          { key: "source", label: t("compression.details.source"), children: <Link to={sourceLink}>{`${j.source.model_name} v${j.source.version}`}</Link> },
          {
            key: "device",
            label: t("compression.details.device"),
            children: j.device_id ? <Link to={`/projects/${projectId}/devices/${j.device_id}`}>{j.device_name || j.device_id.slice(0, 8)}</Link> : t("compression.workerName"),
          },
          { key: "accuracy", label: t("compression.details.accuracyBudget"), children: t("compression.points", { count: j.accuracy_budget_pt }) },
          { key: "time", label: t("compression.details.timeBudget"), children: formatDuration(j.budget_s) },
          { key: "methods", label: t("compression.details.methods"), children: j.methods.length ? j.methods.join(", ") : t("compression.details.allMethods") },
          { key: "created", label: t("common.createdAt"), children: formatDate(j.created_at) },
          { key: "finished", label: t("compression.details.finished"), children: formatDate(j.finished_at) || "—" },
        ]}
      />
    </Space>
  );
}

function ProgressCard({ job }: { job: CompressionJob }) {
  const { t } = useTranslation();
  const progress = compressionProgressOf(job);
  const running = job.status === "RUNNING";
  return (
    <Card size="small">
      <Space style={{ width: "100%", justifyContent: "space-between" }} wrap>
        <Typography.Text strong data-testid="phase-text">
          {progressText(t, progress, job.status, job.device_name)}
        </Typography.Text>
        {typeof progress.elapsed_s === "number" && (
          <Typography.Text type="secondary">
            {formatDuration(progress.elapsed_s)} / {formatDuration(job.budget_s)}
          </Typography.Text>
        )}
      </Space>
      <Progress data-testid="compression-progress" percent={progressPercent(progress, job.status)} status={running ? "active" : "normal"} />
    </Card>
  );
}

/** The pick with its reason, its model version and "Deploy to <device>"; or keep the float model. */
export function OutcomeCard({ projectId, job, candidates }: { projectId: string; job: CompressionJob; candidates: Candidate[] }) {
  const { t } = useTranslation();
  const picked = job.picked ? candidates.find((c) => c.key === job.picked) : undefined;
  if (!job.picked) {
    return (
      <Alert
        type="info"
        showIcon
        data-testid="outcome"
        title={t("compression.outcome.keepFloat")}
        description={
          <Space orientation="vertical" size={4}>
            <span data-testid="pick-reason">{job.pick_reason}</span>
            <Link to={`/projects/${projectId}/models/versions/${job.source.id}`} data-testid="float-link">
              {t("compression.outcome.openFloat", { name: job.source.model_name, version: job.source.version })}
            </Link>
          </Space>
        }
      />
    );
  }
  return (
    <Alert
      type="success"
      showIcon
      data-testid="outcome"
      title={t("compression.outcome.picked", { key: job.picked, description: picked ? describeCandidate(t, picked) : job.picked })}
      description={
        <Space orientation="vertical" size={8}>
          <span data-testid="pick-reason">{job.pick_reason}</span>
          <Space wrap>
            {job.model_version && (
              <Link to={`/projects/${projectId}/models/versions/${job.model_version.id}`} data-testid="picked-version-link">
                {t("compression.outcome.openVersion", { name: job.model_version.model_name, version: job.model_version.version })}
              </Link>
            )}
            {job.model_version && job.device_id ? (
              <DeployToDevice projectId={projectId} versionId={job.model_version.id} deviceId={job.device_id} deviceName={job.device_name} />
            ) : (
              job.model_version && <Typography.Text type="secondary">{t("compression.outcome.workerOnly")}</Typography.Text>
            )}
          </Space>
        </Space>
      }
    />
  );
}

function DeployToDevice({ projectId, versionId, deviceId, deviceName }: { projectId: string; versionId: string; deviceId: string; deviceName: string }) {
  const { t } = useTranslation();
  const { message } = App.useApp();
  const reportError = useReportError();
  const deploy = useDeploy(projectId);
  const canEdit = useCanEdit(projectId);
  const device = deviceName || deviceId.slice(0, 8);
  return (
    <Space wrap>
      <EditorOnly canEdit={canEdit}>
        <Button
          type="primary"
          icon={<CloudUploadOutlined />}
          disabled={!canEdit || deploy.isSuccess}
          loading={deploy.isPending}
          onClick={() =>
            deploy.mutate(
              { model_version_id: versionId, device_ids: [deviceId] },
              {
                onSuccess: () => void message.success(t("compression.outcome.deployed", { device })),
                onError: (error) => reportError(error),
              },
            )
          }
        >
          {t("compression.outcome.deployTo", { device })}
        </Button>
      </EditorOnly>
      {deploy.isSuccess && (
        <Link to={`/projects/${projectId}/devices/${deviceId}`} data-testid="watch-device">
          {t("compression.outcome.watchDevice", { device })}
        </Link>
      )}
    </Space>
  );
}

export function CandidatesTable({ job, candidates }: { job: CompressionJob; candidates: Candidate[] }) {
  const { t } = useTranslation();
  const reference = referenceOf(candidates);
  const terminal = TERMINAL_JOB_STATES.has(job.status);
  return (
    <Card size="small" title={t("compression.candidates")}>
      <Table<Candidate>
        data-testid="candidates-table"
        rowKey="key"
        size="small"
        pagination={false}
        scroll={{ x: true }}
        dataSource={candidates}
        locale={{ emptyText: t("compression.noCandidates") }}
        onRow={(c) => (c.key === job.picked ? { style: { background: "#f6ffed" }, "data-picked": "true" } as React.HTMLAttributes<HTMLElement> : {})}
        columns={[
          {
            title: t("compression.columns.candidate"),
            key: "candidate",
            render: (_, c) => (
              <Space orientation="vertical" size={0}>
                <Space size={4} wrap>
                  <Typography.Text code>{c.key}</Typography.Text>
                  {c.key === job.picked && (
                    <Tag color="success" icon={<CheckCircleOutlined />} data-testid="picked-tag">
                      {t("compression.picked")}
                    </Tag>
                  )}
                  {c.key === REFERENCE_KEY && <Tag color="blue">{t("compression.reference")}</Tag>}
                  {(c.status === "failed" || c.status === "skipped") && (
                    <Tag color={c.status === "failed" ? "error" : "default"}>{t(`compression.candidateStatus.${c.status}`)}</Tag>
                  )}
                </Space>
                <Typography.Text type="secondary" style={{ fontSize: 12 }}>
                  {describeCandidate(t, c)}
                </Typography.Text>
                {c.status !== "ready" && c.reason && (
                  <Typography.Text type={c.status === "failed" ? "danger" : "secondary"} style={{ fontSize: 12 }} data-testid="candidate-reason">
                    {c.reason}
                  </Typography.Text>
                )}
              </Space>
            ),
          },
          {
            title: t("compression.columns.accuracy"),
            key: "accuracy",
            render: (_, c) =>
              typeof c.accuracy === "number" ? (
                <span>
                  {formatAccuracy(c.accuracy)}{" "}
                  <Typography.Text type="secondary" style={{ fontSize: 12 }}>
                    ({t(`compression.split.${c.evaluated_on === "test" ? "test" : "val"}`)}
                    {typeof c.n_evaluated === "number" && c.n_evaluated > 0 ? `, ${t(isTextCandidate(c) ? "compression.texts" : "compression.images", { count: c.n_evaluated })}` : ""})
                  </Typography.Text>
                </span>
              ) : (
                "—"
              ),
          },
          {
            title: t("compression.columns.drop"),
            key: "drop",
            render: (_, c) => {
              if (c.key === REFERENCE_KEY || typeof c.accuracy_drop_pt !== "number") return "—";
              const beyond = beyondBudget(c, job.accuracy_budget_pt);
              return beyond ? (
                <Tooltip title={t("compression.beyondBudget", { budget: job.accuracy_budget_pt })}>
                  <Typography.Text type="danger" strong data-testid="drop-beyond">
                    {formatPoints(c.accuracy_drop_pt)}
                  </Typography.Text>
                </Tooltip>
              ) : (
                <span>{formatPoints(c.accuracy_drop_pt)}</span>
              );
            },
          },
          {
            title: t("compression.columns.size"),
            key: "size",
            render: (_, c) => {
              if (typeof c.size_bytes !== "number") return "—";
              // a student at a lower resolution keeps its weights: no "1.0× smaller"
              const ratio = c.key === REFERENCE_KEY ? null : sizeRatio(c, reference);
              return (
                <Space orientation="vertical" size={0} style={{ whiteSpace: "nowrap" }}>
                  <span>{formatMB(c.size_bytes)}</span>
                  {ratio !== null && ratio >= 1.05 && (
                    <Typography.Text type="secondary" style={{ fontSize: 12 }}>
                      {t("compression.smaller", { ratio: formatRatio(ratio) })}
                    </Typography.Text>
                  )}
                </Space>
              );
            },
          },
          {
            title: t("compression.columns.latency"),
            key: "latency",
            render: (_, c) => {
              const p50 = p50Of(c);
              if (p50 === null) return "—";
              const p99 = c.latency?.p99_ms;
              return (
                <span style={{ whiteSpace: "nowrap" }}>
                  {t("compression.latencyMs", { p50: formatMs(p50), p99: typeof p99 === "number" ? formatMs(p99) : "—" })}
                </span>
              );
            },
          },
          {
            title: t("compression.columns.speedUp"),
            key: "speedUp",
            render: (_, c) => {
              const ratio = c.key === REFERENCE_KEY ? null : speedUp(c, reference);
              return ratio === null ? "—" : <span data-testid="speed-up">{formatRatio(ratio)}</span>;
            },
          },
          {
            title: t("compression.columns.measurement"),
            key: "measurement",
            render: (_, c) => <MeasurementCell candidate={c} terminal={terminal} />,
          },
        ]}
      />
    </Card>
  );
}

/** The measurement's state: spinning while on its way, incompatible with the device's reasons, expired or failed with the reason. */
function MeasurementCell({ candidate: c, terminal }: { candidate: Candidate; terminal: boolean }) {
  const { t } = useTranslation();
  if (c.status !== "ready") return <>—</>;
  const status = c.benchmark?.status ?? (p50Of(c) !== null ? "succeeded" : undefined);
  const error = c.benchmark?.error ?? "";
  switch (status) {
    case "pending":
    case "running":
      return (
        <Tag icon={<SyncOutlined spin />} color="processing">
          {t(`compression.benchmark.${status}`)}
        </Tag>
      );
    case "succeeded":
      return <Tag color="success">{t("compression.benchmark.succeeded")}</Tag>;
    case "incompatible": {
      const reasons = c.incompatibilities?.length ? c.incompatibilities : error ? [error] : [];
      return (
        <Tooltip
          title={
            <div data-testid="incompatible-reasons">
              {t("compression.incompatibleWhy")}
              <ul style={{ margin: 0, paddingLeft: 16 }}>
                {reasons.map((reason) => (
                  <li key={reason}>{reason}</li>
                ))}
              </ul>
            </div>
          }
        >
          <Tag color="warning" icon={<CloseCircleOutlined />} data-testid="incompatible-tag">
            {t("compression.benchmark.incompatible")}
          </Tag>
        </Tooltip>
      );
    }
    case "expired":
    case "failed":
    case "cancelled":
      return (
        <Space orientation="vertical" size={0}>
          <Tag color={status === "failed" ? "error" : "default"}>{t(`compression.benchmark.${status}`)}</Tag>
          {error && (
            <Typography.Text type={status === "failed" ? "danger" : "secondary"} style={{ fontSize: 12 }}>
              {error}
            </Typography.Text>
          )}
        </Space>
      );
    default:
      return <Typography.Text type="secondary">{t(terminal ? "compression.benchmark.notMeasured" : "compression.benchmark.notYet")}</Typography.Text>;
  }
}

export function ParetoCard({ job, candidates }: { job: CompressionJob; candidates: Candidate[] }) {
  const { t } = useTranslation();
  const points = useMemo(() => paretoPoints(candidates, job.picked, job.accuracy_budget_pt), [candidates, job.picked, job.accuracy_budget_pt]);
  const floor = budgetFloor(referenceOf(candidates), job.accuracy_budget_pt);
  const option = useMemo(
    () =>
      paretoOption(points, floor, {
        x: t("compression.paretoX"),
        y: t("compression.paretoY"),
        series: { reference: t("compression.series.reference"), within: t("compression.series.within"), beyond: t("compression.series.beyond") },
        picked: t("compression.picked"),
        floor: floor === null ? "" : t("compression.floor", { value: floor.toFixed(1) }),
        tooltip: (p: ParetoPoint) => [
          p.key,
          t("compression.tooltip.accuracy", { accuracy: `${p.y.toFixed(1)}%`, split: t(`compression.split.${p.evaluatedOn === "test" ? "test" : "val"}`) }),
          ...(p.drop !== null && p.key !== REFERENCE_KEY ? [t("compression.tooltip.drop", { points: formatPoints(p.drop) })] : []),
          t("compression.tooltip.latency", { p50: formatMs(p.x), p99: p.p99 !== null ? formatMs(p.p99) : "—" }),
          ...(p.speedUp !== null && p.key !== REFERENCE_KEY ? [t("compression.tooltip.speedUp", { ratio: formatRatio(p.speedUp) })] : []),
          ...(p.sizeBytes !== null ? [t("compression.tooltip.size", { size: formatMB(p.sizeBytes) })] : []),
        ],
      }),
    [points, floor, t],
  );
  return (
    <Card size="small" title={t("compression.pareto")}>
      {points.length === 0 ? (
        <Typography.Text type="secondary">{t("compression.paretoEmpty")}</Typography.Text>
      ) : (
        <Chart option={option} height={340} ariaLabel={t("compression.pareto")} />
      )}
      <Typography.Paragraph type="secondary" style={{ margin: "4px 0 0", fontSize: 12 }}>
        {t("compression.paretoNote")}
      </Typography.Paragraph>
    </Card>
  );
}

function CancelButton({ projectId, jobId }: { projectId: string; jobId: string }) {
  const { t } = useTranslation();
  const cancel = useCancelCompression(projectId, jobId);
  return <CancelJobButton projectId={projectId} cancel={cancel} label={t("compression.cancel")} confirm={t("compression.cancelConfirm")} />;
}
