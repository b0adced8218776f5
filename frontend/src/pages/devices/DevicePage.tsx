// One device: its info, current deployment and telemetry charts, refreshed every 5 s.
import { Breadcrumb, Button, Card, Col, Descriptions, Empty, Row, Select, Skeleton, Space, Statistic, Tag, Typography } from "antd";
import { useMemo, useState } from "react";
import { useTranslation } from "react-i18next";
import { Link, useParams } from "react-router";

import { useCanEdit } from "../../api/queries/projects";
import { deploymentOf, fleetTags, metricsOf, useDevice, useDevices, useTelemetry, useUpdateDevice } from "../../api/queries/fleet";
import { Chart } from "../../components/charts/Chart";
import { ErrorAlert, useReportError } from "../../components/errors";
import { formatBytes, formatDate } from "../../format";
import { DeploymentStateTag, DeviceStatusBadge } from "./DeploymentStateTag";
import { LastSeen } from "./DevicesPage";
import { lastValue, telemetrySeries, type Point } from "./telemetry";

/** The device's tags (its groups): shown, and for editors edited in place (Enter adds a tag). */
function TagsEditor({ projectId, deviceId, tags }: { projectId: string; deviceId: string; tags: string[] }) {
  const { t } = useTranslation();
  const reportError = useReportError();
  const canEdit = useCanEdit(projectId);
  const update = useUpdateDevice(projectId, deviceId);
  const known = fleetTags(useDevices(projectId, false).data);
  const [draft, setDraft] = useState<string[] | null>(null);
  if (draft === null) {
    return (
      <Space size={[0, 4]} wrap data-testid="device-tags">
        {tags.length ? tags.map((tag) => <Tag key={tag}>{tag}</Tag>) : <Typography.Text type="secondary">{t("devices.noTags")}</Typography.Text>}
        {canEdit && (
          <Button size="small" type="link" onClick={() => setDraft(tags)}>
            {t("devices.editTags")}
          </Button>
        )}
      </Space>
    );
  }
  return (
    <Space wrap>
      <Select
        mode="tags"
        aria-label={t("devices.tags")}
        style={{ minWidth: 240 }}
        value={draft}
        onChange={(values: string[]) => setDraft(values)}
        options={known.map((tag) => ({ value: tag, label: tag }))}
        tokenSeparators={[",", " "]}
      />
      <Button
        size="small"
        type="primary"
        loading={update.isPending}
        onClick={() => update.mutate({ tags: draft }, { onSuccess: () => setDraft(null), onError: (error) => reportError(error) })}
      >
        {t("common.save")}
      </Button>
      <Button size="small" onClick={() => setDraft(null)}>
        {t("common.cancel")}
      </Button>
    </Space>
  );
}

/** A time-series option: one line (or bar) per series, time on x. */
export function timeOption(
  series: { name: string; data: Point[]; type?: "line" | "bar" }[],
  unit = "",
  integer = false,
): Record<string, unknown> {
  return {
    animation: false,
    grid: { left: 48, right: 16, top: series.length > 1 ? 32 : 16, bottom: 28 },
    ...(series.length > 1 ? { legend: { top: 0 } } : {}),
    tooltip: { trigger: "axis" },
    xAxis: { type: "time", axisLabel: { hideOverlap: true } },
    // an undefined axisLabel would replace ECharts' default (no labels), so set it only with a unit
    yAxis: { type: "value", min: 0, minInterval: integer ? 1 : 0, ...(unit ? { axisLabel: { formatter: `{value}${unit}` } } : {}) },
    series: series.map((s) =>
      s.type === "bar"
        ? // per-interval counts: a filled step line reads better than hair-thin bars on a time axis
          { name: s.name, type: "line", step: "end", areaStyle: { opacity: 0.25 }, data: s.data, showSymbol: false }
        : { name: s.name, type: "line", data: s.data, showSymbol: false, connectNulls: false },
    ),
  };
}

function ChartCard({ title, option }: { title: string; option: Record<string, unknown> }) {
  return (
    <Card size="small" title={title}>
      <Chart option={option} height={200} ariaLabel={title} />
    </Card>
  );
}

export function DevicePage() {
  const { t } = useTranslation();
  const { projectId = "", deviceId = "" } = useParams();
  const device = useDevice(projectId, deviceId);
  const telemetry = useTelemetry(projectId, deviceId);
  const series = useMemo(() => telemetrySeries(telemetry.data ?? []), [telemetry.data]);

  if (device.isError) return <ErrorAlert error={device.error} onRetry={() => void device.refetch()} />;
  if (!device.data) return <Skeleton active />;
  const d = device.data;
  const metrics = metricsOf(d.last_metrics);
  const deployment = deploymentOf(d);
  const info = d.info && typeof d.info === "object" ? Object.entries(d.info as Record<string, unknown>) : [];

  return (
    <Space orientation="vertical" size="middle" style={{ width: "100%" }}>
      <Breadcrumb items={[{ title: <Link to={`/projects/${projectId}/devices`}>{t("nav.devices")}</Link> }, { title: d.name }]} />
      <Space align="baseline">
        <Typography.Title level={3} style={{ margin: 0 }}>
          {d.name}
        </Typography.Title>
        <DeviceStatusBadge status={d.status} />
        <Typography.Text type="secondary">{t("devices.refreshing")}</Typography.Text>
      </Space>
      <Space size="large" wrap>
        <Statistic title={t("devices.requests")} value={metrics.requests ?? "—"} />
        <Statistic data-testid="requests-per-second" title={t("devices.requestsPerSecond")} value={lastValue(series.requestsPerSecond)?.toFixed(2) ?? "—"} />
        <Statistic title={t("devices.errors")} value={metrics.errors ?? "—"} />
        <Statistic
          title={typeof metrics.latency_window_s === "number" ? t("devices.p95Window", { seconds: metrics.latency_window_s }) : t("devices.p95")}
          value={typeof metrics.latency_ms?.p95 === "number" ? t("models.latencyMs", { ms: metrics.latency_ms.p95.toFixed(1) }) : "—"}
        />
        <Statistic
          data-testid="cpu"
          title={typeof metrics.cpu_count === "number" ? t("devices.cpuOfCores", { count: metrics.cpu_count }) : t("devices.cpu")}
          value={typeof metrics.cpu_percent === "number" ? `${metrics.cpu_percent.toFixed(1)}%` : "—"}
        />
        <Statistic title={t("devices.memory")} value={typeof metrics.memory_bytes === "number" ? formatBytes(metrics.memory_bytes) : "—"} />
        {series.hasDetections && (
          <Statistic data-testid="detections-per-second" title={t("devices.detectionsPerSecond")} value={lastValue(series.detectionsPerSecond)?.toFixed(2) ?? "—"} />
        )}
      </Space>
      <DetectionsByClass counts={metrics.detections_by_class} />
      <Descriptions
        size="small"
        bordered
        column={{ xs: 1, md: 2 }}
        items={[
          { key: "tags", label: t("devices.tags"), span: "filled", children: <TagsEditor projectId={projectId} deviceId={d.id} tags={d.tags} /> },
          { key: "seen", label: t("devices.lastSeen"), children: <LastSeen value={d.last_seen_at} /> },
          { key: "clock", label: t("devices.deviceTime"), children: d.device_time ? formatDate(d.device_time) : "—" },
          {
            key: "model",
            label: t("models.currentModel"),
            children: d.current_model_version ? (
              <Link to={`/projects/${projectId}/models/versions/${d.current_model_version.id}`}>
                {d.current_model_version.model_name} v{d.current_model_version.version}
              </Link>
            ) : (
              t("devices.none")
            ),
          },
          {
            key: "deployment",
            label: t("devices.deployment"),
            children: deployment ? (
              <Space wrap>
                <Link to={`/projects/${projectId}/models/versions/${deployment.model_version.id}`}>
                  {deployment.model_version.model_name} v{deployment.model_version.version}
                </Link>
                <DeploymentStateTag state={deployment.state} error={deployment.error} />
                <Typography.Text type="secondary">{formatDate(deployment.state_changed_at)}</Typography.Text>
              </Space>
            ) : (
              t("devices.noDeployment")
            ),
          },
          { key: "agent", label: t("devices.agentVersion"), children: d.agent_version || "—" },
          { key: "enrolled", label: t("devices.enrolled"), children: formatDate(d.created_at) },
          {
            key: "info",
            label: t("devices.info"),
            span: "filled",
            children: info.length ? info.map(([k, v]) => `${k}: ${typeof v === "object" ? JSON.stringify(v) : String(v)}`).join(" · ") : "—",
          },
        ]}
      />
      {telemetry.isError && <ErrorAlert error={telemetry.error} onRetry={() => void telemetry.refetch()} />}
      {telemetry.data && telemetry.data.length === 0 && <Empty description={t("devices.noTelemetry")} />}
      {telemetry.data && telemetry.data.length > 0 && (
        <Row gutter={[16, 16]}>
          <Col xs={24} lg={12}>
            <ChartCard title={t("devices.chartRequests")} option={timeOption([{ name: t("devices.requestsPerSecond"), data: series.requestsPerSecond }])} />
          </Col>
          <Col xs={24} lg={12}>
            <ChartCard
              title={t("devices.chartLatency")}
              option={timeOption([
                { name: "p50", data: series.p50 },
                { name: "p95", data: series.p95 },
                { name: "p99", data: series.p99 },
              ])}
            />
          </Col>
          <Col xs={24} lg={8}>
            <ChartCard title={t("devices.chartErrors")} option={timeOption([{ name: t("devices.errors"), data: series.errors, type: "bar" }], "", true)} />
          </Col>
          <Col xs={24} lg={8}>
            <ChartCard title={t("devices.chartCpu")} option={timeOption([{ name: t("devices.cpu"), data: series.cpu }], "%")} />
          </Col>
          <Col xs={24} lg={8}>
            <ChartCard title={t("devices.chartMemory")} option={timeOption([{ name: t("devices.memory"), data: series.memoryMb }])} />
          </Col>
          {series.hasDetections && (
            <Col xs={24} lg={12}>
              <ChartCard title={t("devices.chartDetections")} option={timeOption([{ name: t("devices.detectionsPerSecond"), data: series.detectionsPerSecond }])} />
            </Col>
          )}
        </Row>
      )}
    </Space>
  );
}

/** A detection model's objects per class since the agent started (the 20 most frequent it reports). */
function DetectionsByClass({ counts }: { counts: Record<string, number> | null | undefined }) {
  const { t } = useTranslation();
  const entries = counts && typeof counts === "object" ? Object.entries(counts).filter(([, n]) => typeof n === "number") : [];
  if (entries.length === 0) return null;
  entries.sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0]));
  return (
    <Space wrap size={[4, 4]} data-testid="detections-by-class">
      <Typography.Text type="secondary" title={t("devices.detectionsByClassHint", { count: entries.length })}>
        {t("devices.detectionsByClass")}:
      </Typography.Text>
      {entries.map(([label, count]) => (
        <Tag key={label}>
          {label} {count}
        </Tag>
      ))}
    </Space>
  );
}
