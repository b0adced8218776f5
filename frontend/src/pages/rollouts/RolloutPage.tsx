// One rollout: its state (and why it rolled back), its batches with the one being sent or
// observed, its devices with their deployments, the last comparison of the new version with the
// previous one and the per-minute charts of both; "Roll back" while it is rolling. Refreshed
// every 5 s while rolling.
import { RollbackOutlined, WarningOutlined } from "@ant-design/icons";
import { Alert, Breadcrumb, Button, Card, Col, Descriptions, Empty, Input, Modal, Progress, Row, Skeleton, Space, Steps, Table, Typography } from "antd";
import { useMemo, useState } from "react";
import { useTranslation } from "react-i18next";
import { Link, useParams } from "react-router";

import { isApiError } from "../../api/errors";
import { useCanEdit } from "../../api/queries/projects";
import {
  comparisonOf,
  useRollbackRollout,
  useRollout,
  type ComparisonSide,
  type RolloutDetail,
  type RolloutDevice,
  type RolloutSeriesPoint,
} from "../../api/queries/rollouts";
import { Chart } from "../../components/charts/Chart";
import { ErrorAlert, useReportError } from "../../components/errors";
import { EditorOnly } from "../../components/ReadOnly";
import { formatDate } from "../../format";
import { DeploymentStateTag } from "../devices/DeploymentStateTag";
import { timeOption } from "../devices/DevicePage";
import type { Point } from "../devices/telemetry";
import { RolloutStateTag, useBatchName, versionLabel } from "./RolloutsPage";

const percent = (value: number | null | undefined, digits = 1) => (typeof value === "number" ? `${(value * 100).toFixed(digits)}%` : "—");
const fixed = (value: number | null | undefined, digits: number, unit = "") => (typeof value === "number" ? `${value.toFixed(digits)}${unit}` : "—");

/** When the current batch's observation ends: observed_since + observe_minutes (null before it starts). */
export function observedUntil(rollout: Pick<RolloutDetail, "observed_since" | "observe_minutes">): Date | null {
  if (!rollout.observed_since) return null;
  return new Date(new Date(rollout.observed_since).getTime() + rollout.observe_minutes * 60_000);
}

/** One side's points of the series; `pick` null draws a gap. */
function points(series: readonly RolloutSeriesPoint[], side: RolloutSeriesPoint["side"], pick: (p: RolloutSeriesPoint) => number | null): Point[] {
  return series.filter((p) => p.side === side).map((p) => [new Date(p.t).getTime(), pick(p)]);
}

function ChartCard({ title, option }: { title: string; option: Record<string, unknown> }) {
  return (
    <Card size="small" title={title}>
      <Chart option={option} height={200} ariaLabel={title} />
    </Card>
  );
}

function RollbackButton({ projectId, rolloutId }: { projectId: string; rolloutId: string }) {
  const { t } = useTranslation();
  const reportError = useReportError();
  const canEdit = useCanEdit(projectId);
  const rollback = useRollbackRollout(projectId, rolloutId);
  const [open, setOpen] = useState(false);
  const [reason, setReason] = useState("");
  const submit = () =>
    rollback.mutate(reason.trim() || undefined, {
      onSuccess: () => {
        setOpen(false);
        setReason("");
      },
      onError: (error) => {
        reportError(error);
        // 409: no longer rolling; the page shows what it is now
        if (isApiError(error) && error.status === 409) setOpen(false);
      },
    });
  return (
    <>
      <EditorOnly canEdit={canEdit}>
        <Button danger icon={<RollbackOutlined />} disabled={!canEdit} onClick={() => setOpen(true)}>
          {t("rollouts.rollback")}
        </Button>
      </EditorOnly>
      <Modal
        open={open}
        title={t("rollouts.rollbackTitle")}
        okText={t("rollouts.rollback")}
        okButtonProps={{ danger: true, loading: rollback.isPending }}
        onOk={submit}
        onCancel={() => setOpen(false)}
        cancelText={t("common.cancel")}
      >
        <Space orientation="vertical" style={{ width: "100%" }}>
          <Typography.Text>{t("rollouts.rollbackConfirm")}</Typography.Text>
          <Input.TextArea
            aria-label={t("rollouts.rollbackReason")}
            placeholder={t("rollouts.rollbackReasonPlaceholder")}
            maxLength={500}
            rows={3}
            value={reason}
            onChange={(e) => setReason(e.target.value)}
          />
        </Space>
      </Modal>
    </>
  );
}

function BatchSteps({ rollout }: { rollout: RolloutDetail }) {
  const { t } = useTranslation();
  const batchName = useBatchName();
  const sizes = Array.from({ length: rollout.batches }, (_, batch) => rollout.devices.filter((d) => d.batch === batch).length);
  const until = observedUntil(rollout);
  const rolling = rollout.state === "rolling";
  return (
    <Steps
      data-testid="rollout-steps"
      size="small"
      current={rollout.state === "completed" ? rollout.batches : rollout.current_batch}
      status={rollout.state === "rolled_back" ? "error" : rolling ? "process" : "finish"}
      items={sizes.map((size, batch) => ({
        title: batchName(rollout.strategy, batch),
        content: (
          <Space orientation="vertical" size={0}>
            <span>{t("rollouts.planDevices", { count: size })}</span>
            {rolling && batch === rollout.current_batch && (
              <Typography.Text type="secondary" data-testid="current-batch">
                {until ? t("rollouts.observingUntil", { time: formatDate(until.toISOString()) }) : t("rollouts.deploying")}
              </Typography.Text>
            )}
          </Space>
        ),
      }))}
    />
  );
}

interface ComparisonRow {
  key: string;
  metric: string;
  candidate: string;
  baseline: string;
  rule: string;
}

function ComparisonCard({ rollout }: { rollout: RolloutDetail }) {
  const { t } = useTranslation();
  const comparison = comparisonOf(rollout.comparison);
  const row = (key: string, metric: string, value: (side: ComparisonSide) => string, rule: string): ComparisonRow =>
    comparison
      ? { key, metric, candidate: value(comparison.candidate), baseline: value(comparison.baseline), rule }
      : { key, metric, candidate: "—", baseline: "—", rule };
  const rows: ComparisonRow[] = [
    row("error_rate", t("rollouts.metric.errorRate"), (s) => percent(s.error_rate, 2), t("rollouts.rule.errorRate", { pp: (rollout.max_error_rate_increase * 100).toFixed(1) })),
    row("p95", t("rollouts.metric.p95"), (s) => fixed(s.p95_ms, 1, " ms"), t("rollouts.rule.p95", { ratio: rollout.max_latency_ratio })),
    row("confidence", t("rollouts.metric.confidence"), (s) => fixed(s.confidence, 3), t("rollouts.rule.confidence", { drop: rollout.max_confidence_drop.toFixed(2) })),
    row("restarts", t("rollouts.metric.restarts"), (s) => String(s.restarts), t("rollouts.rule.restarts", { count: rollout.max_restarts })),
    row("requests", t("rollouts.metric.requests"), (s) => `${s.requests} (${t("rollouts.errorsCount", { count: s.errors })})`, t("rollouts.rule.requests", { count: rollout.min_requests })),
    row("devices", t("rollouts.metric.devices"), (s) => String(s.devices), ""),
  ];
  return (
    <Card
      size="small"
      title={t("rollouts.comparison")}
      extra={comparison?.at && <Typography.Text type="secondary">{t("rollouts.comparedAt", { time: formatDate(comparison.at) })}</Typography.Text>}
    >
      {!comparison && (
        <Typography.Paragraph type="secondary" style={{ marginBottom: 8 }}>
          {t("rollouts.noComparison")}
        </Typography.Paragraph>
      )}
      <Table<ComparisonRow>
        data-testid="comparison"
        rowKey="key"
        size="small"
        pagination={false}
        dataSource={rows}
        columns={[
          { title: t("rollouts.metric.title"), dataIndex: "metric" },
          { title: t("rollouts.newVersion"), dataIndex: "candidate" },
          { title: t("rollouts.previousVersion"), dataIndex: "baseline" },
          { title: t("rollouts.rollsBackWhen"), dataIndex: "rule", render: (rule: string) => <Typography.Text type="secondary">{rule || "—"}</Typography.Text> },
        ]}
      />
      {comparison?.waiting_for && (
        <Typography.Paragraph data-testid="waiting-for" type="warning" style={{ marginTop: 12, marginBottom: 0 }}>
          {t("rollouts.waitingFor", { what: comparison.waiting_for })}
        </Typography.Paragraph>
      )}
      {comparison && comparison.regressions.length > 0 && (
        <div data-testid="regressions" style={{ marginTop: 12 }}>
          <Typography.Text strong type="danger">
            {t("rollouts.regressions")}
          </Typography.Text>
          <ul style={{ margin: "4px 0 0", paddingLeft: 20 }}>
            {comparison.regressions.map((text) => (
              <li key={text}>
                <Typography.Text type="danger">
                  <WarningOutlined /> {text}
                </Typography.Text>
              </li>
            ))}
          </ul>
        </div>
      )}
    </Card>
  );
}

function Charts({ series }: { series: RolloutSeriesPoint[] }) {
  const { t } = useTranslation();
  const charts = useMemo(() => {
    const both = (pick: (p: RolloutSeriesPoint) => number | null) => [
      { name: t("rollouts.newVersion"), data: points(series, "candidate", pick) },
      { name: t("rollouts.previousVersion"), data: points(series, "baseline", pick) },
    ];
    return {
      errorRate: timeOption(both((p) => (p.error_rate === null ? null : Math.round(p.error_rate * 10000) / 100)), "%"),
      p95: timeOption(both((p) => p.p95_ms)),
      confidence: timeOption(both((p) => p.confidence)),
    };
  }, [series, t]);
  if (series.length === 0) return <Empty description={t("rollouts.noSeries")} />;
  return (
    <Row gutter={[16, 16]}>
      <Col xs={24} lg={8}>
        <ChartCard title={t("rollouts.chartErrorRate")} option={charts.errorRate} />
      </Col>
      <Col xs={24} lg={8}>
        <ChartCard title={t("rollouts.chartP95")} option={charts.p95} />
      </Col>
      <Col xs={24} lg={8}>
        <ChartCard title={t("rollouts.chartConfidence")} option={charts.confidence} />
      </Col>
    </Row>
  );
}

export function RolloutPage() {
  const { t } = useTranslation();
  const { projectId = "", rolloutId = "" } = useParams();
  const rollout = useRollout(projectId, rolloutId);
  const batchName = useBatchName();

  if (rollout.isError) return <ErrorAlert error={rollout.error} onRetry={() => void rollout.refetch()} />;
  if (!rollout.data) return <Skeleton active />;
  const r = rollout.data;
  const label = versionLabel(r.model_version);

  return (
    <Space orientation="vertical" size="middle" style={{ width: "100%" }}>
      <Breadcrumb items={[{ title: <Link to={`/projects/${projectId}/rollouts`}>{t("nav.rollouts")}</Link> }, { title: label }]} />
      <Space style={{ width: "100%", justifyContent: "space-between" }} wrap>
        <Space align="baseline" wrap>
          <Typography.Title level={3} style={{ margin: 0 }}>
            {t("rollouts.title", { version: label })}
          </Typography.Title>
          <RolloutStateTag state={r.state} />
          {r.state === "rolling" && <Typography.Text type="secondary">{t("devices.refreshing")}</Typography.Text>}
        </Space>
        {r.state === "rolling" && <RollbackButton projectId={projectId} rolloutId={r.id} />}
      </Space>
      {r.state === "rolled_back" && (
        <Alert data-testid="rollback-reason" type="error" showIcon title={t("rollouts.rolledBackTitle")} description={r.reason || undefined} />
      )}
      {r.state === "completed" && (
        <Alert type="success" showIcon title={t("rollouts.completedTitle", { time: formatDate(r.finished_at) })} />
      )}
      <Card size="small" title={t("rollouts.batches")}>
        <BatchSteps rollout={r} />
      </Card>
      <Descriptions
        size="small"
        bordered
        column={{ xs: 1, md: 2 }}
        items={[
          {
            key: "version",
            label: t("rollouts.modelVersion"),
            children: <Link to={`/projects/${projectId}/models/versions/${r.model_version.id}`}>{label}</Link>,
          },
          {
            key: "strategy",
            label: t("rollouts.strategy"),
            children: r.tag ? `${t(`rollouts.strategies.${r.strategy}`)} · ${t("rollouts.tagged", { tag: r.tag })}` : t(`rollouts.strategies.${r.strategy}`),
          },
          {
            key: "progress",
            label: t("rollouts.progress"),
            children: (
              <Progress
                data-testid="rollout-progress"
                size="small"
                percent={r.devices_total ? Math.round((r.devices_running / r.devices_total) * 100) : 0}
                status={r.state === "rolled_back" ? "exception" : r.state === "completed" ? "success" : "active"}
                format={() => `${r.devices_running} / ${r.devices_total}`}
                style={{ maxWidth: 320, margin: 0 }}
              />
            ),
          },
          { key: "observe", label: t("rollouts.observe"), children: t("rollouts.minutes", { count: r.observe_minutes }) },
          { key: "created", label: t("common.createdAt"), children: r.created_by ? t("rollouts.createdBy", { time: formatDate(r.created_at), user: r.created_by }) : formatDate(r.created_at) },
          { key: "finished", label: t("rollouts.finished"), children: r.finished_at ? formatDate(r.finished_at) : "—" },
        ]}
      />
      <Card size="small" title={t("rollouts.devices")}>
        <Table<RolloutDevice>
          data-testid="rollout-devices"
          rowKey="device_id"
          size="small"
          pagination={false}
          dataSource={r.devices}
          columns={[
            {
              title: t("deployments.device"),
              dataIndex: "device_name",
              render: (name: string, d) => <Link to={`/projects/${projectId}/devices/${d.device_id}`}>{name}</Link>,
            },
            { title: t("rollouts.batch"), dataIndex: "batch", render: (batch: number) => batchName(r.strategy, batch) },
            {
              title: t("rollouts.previousVersion"),
              key: "previous",
              render: (_, d) =>
                d.previous_model_version ? (
                  <Link to={`/projects/${projectId}/models/versions/${d.previous_model_version.id}`}>{versionLabel(d.previous_model_version)}</Link>
                ) : (
                  <Typography.Text type="secondary">{t("devices.none")}</Typography.Text>
                ),
            },
            {
              title: t("rollouts.deployment"),
              key: "deployment",
              render: (_, d) =>
                d.deployment ? (
                  <DeploymentStateTag state={d.deployment.state} error={d.deployment.error} />
                ) : (
                  <Typography.Text type="secondary">{d.note || t("rollouts.notSent")}</Typography.Text>
                ),
            },
            {
              title: t("rollouts.rollbackDeployment"),
              key: "rollback",
              render: (_, d) => (d.rollback ? <DeploymentStateTag state={d.rollback.state} error={d.rollback.error} /> : "—"),
            },
          ]}
        />
      </Card>
      <ComparisonCard rollout={r} />
      <Charts series={r.series} />
    </Space>
  );
}
