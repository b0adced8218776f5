// The fleet: every enrolled device with its status and last metrics (refreshed every 5 s), and
// "Add device", which issues an enrollment token and shows the enroll command once, and "Roll out
// gradually…", which opens the rollouts page with the new-rollout form.
import { PlusOutlined, RocketOutlined } from "@ant-design/icons";
import { Alert, Button, Modal, Skeleton, Space, Table, Tag, Tooltip, Typography } from "antd";
import { useTranslation } from "react-i18next";
import { Link, useNavigate, useParams } from "react-router";

import { useCanEdit } from "../../api/queries/projects";
import { fleetTags, metricsOf, useCreateEnrollmentToken, useDevices, type Device } from "../../api/queries/fleet";
import { ErrorAlert, useReportError } from "../../components/errors";
import { EditorOnly } from "../../components/ReadOnly";
import { formatDate } from "../../format";
import { DeviceStatusBadge } from "./DeploymentStateTag";
import { relativeTime } from "./telemetry";

const TOKEN_HOURS = 24;

export function LastSeen({ value }: { value: string | null }) {
  const { t } = useTranslation();
  if (!value) return <Typography.Text type="secondary">{t("devices.never")}</Typography.Text>;
  const { key, count } = relativeTime(value);
  return <Tooltip title={formatDate(value)}>{t(key, { count })}</Tooltip>;
}

function AddDeviceButton({ projectId }: { projectId: string }) {
  const { t } = useTranslation();
  const reportError = useReportError();
  const create = useCreateEnrollmentToken(projectId);
  const issued = create.data;
  const canEdit = useCanEdit(projectId);
  return (
    <>
      <EditorOnly canEdit={canEdit}>
        <Button
          type="primary"
          icon={<PlusOutlined />}
          loading={create.isPending}
          disabled={!canEdit}
          onClick={() => create.mutate({ expires_in_hours: TOKEN_HOURS }, { onError: (error) => reportError(error) })}
        >
          {t("devices.add")}
        </Button>
      </EditorOnly>
      <Modal
        open={Boolean(issued)}
        title={t("devices.addTitle")}
        onCancel={() => create.reset()}
        footer={<Button onClick={() => create.reset()}>{t("common.close")}</Button>}
        width={720}
      >
        {issued && (
          <Space orientation="vertical" style={{ width: "100%" }}>
            <Typography.Paragraph>{t("devices.addIntro", { hours: TOKEN_HOURS })}</Typography.Paragraph>
            {issued.server_url_is_local && <Alert data-testid="local-url" type="info" showIcon title={t("devices.localUrl", { url: issued.server_url })} />}
            <Alert type="warning" showIcon title={t("devices.shownOnce")} />
            {(
              [
                ["install-command", "devices.stepInstall", issued.install_command],
                ["enroll-command", "devices.stepEnroll", issued.enroll_command],
                ["run-command", "devices.stepRun", issued.run_command],
              ] as const
            ).map(([testId, label, command]) => (
              <div key={testId}>
                <Typography.Text strong>{t(label)}</Typography.Text>
                <Typography.Paragraph data-testid={testId} copyable={{ text: command }} code style={{ whiteSpace: "pre-wrap", wordBreak: "break-all", marginBottom: 0 }}>
                  {command}
                </Typography.Paragraph>
              </div>
            ))}
            <Typography.Text type="secondary">
              {t("devices.tokenExpires")}: {formatDate(issued.expires_at)}
            </Typography.Text>
          </Space>
        )}
      </Modal>
    </>
  );
}

/** Opens the rollouts page with the new-rollout form: a version sent to a canary first, then the rest. */
function RollOutButton({ projectId }: { projectId: string }) {
  const { t } = useTranslation();
  const navigate = useNavigate();
  const canEdit = useCanEdit(projectId);
  return (
    <EditorOnly canEdit={canEdit}>
      <Button icon={<RocketOutlined />} disabled={!canEdit} onClick={() => void navigate(`/projects/${projectId}/rollouts?new=1`)}>
        {t("rollouts.rollOutGradually")}
      </Button>
    </EditorOnly>
  );
}

export function DevicesPage() {
  const { t } = useTranslation();
  const { projectId = "" } = useParams();
  const navigate = useNavigate();
  const devices = useDevices(projectId);
  if (devices.isError) return <ErrorAlert error={devices.error} onRetry={() => void devices.refetch()} />;
  return (
    <Space orientation="vertical" size="middle" style={{ width: "100%" }}>
      <Space style={{ width: "100%", justifyContent: "space-between" }} wrap>
        <Typography.Title level={3} style={{ margin: 0 }}>
          {t("nav.devices")}
        </Typography.Title>
        <Space wrap>
          <RollOutButton projectId={projectId} />
          <AddDeviceButton projectId={projectId} />
        </Space>
      </Space>
      {!devices.data ? (
        <Skeleton active />
      ) : (
        <Table<Device>
          data-testid="devices-table"
          rowKey="id"
          size="small"
          pagination={false}
          dataSource={devices.data}
          locale={{ emptyText: t("devices.empty") }}
          onRow={(device) => ({ onClick: () => void navigate(`/projects/${projectId}/devices/${device.id}`), style: { cursor: "pointer" } })}
          columns={[
            {
              title: t("common.name"),
              dataIndex: "name",
              render: (name: string, d) => <Link to={`/projects/${projectId}/devices/${d.id}`}>{name}</Link>,
            },
            { title: t("devices.status"), dataIndex: "status", render: (_, d) => <DeviceStatusBadge status={d.status} /> },
            {
              title: t("devices.tags"),
              key: "tags",
              render: (_, d) => (
                <Space size={[0, 4]} wrap>
                  {d.tags.map((tag) => (
                    <Tag key={tag}>{tag}</Tag>
                  ))}
                </Space>
              ),
              filters: fleetTags(devices.data).map((tag) => ({ text: tag, value: tag })),
              onFilter: (value, d) => d.tags.includes(String(value)),
            },
            { title: t("devices.lastSeen"), dataIndex: "last_seen_at", render: (value: string | null) => <LastSeen value={value} /> },
            {
              title: t("devices.modelVersion"),
              key: "model",
              render: (_, d) =>
                d.current_model_version ? (
                  <Link to={`/projects/${projectId}/models/versions/${d.current_model_version.id}`} onClick={(e) => e.stopPropagation()}>
                    {d.current_model_version.model_name} v{d.current_model_version.version}
                  </Link>
                ) : (
                  <Typography.Text type="secondary">{t("devices.none")}</Typography.Text>
                ),
            },
            { title: t("devices.requests"), key: "requests", render: (_, d) => metricsOf(d.last_metrics).requests ?? "—" },
            {
              title: t("devices.p95"),
              key: "p95",
              render: (_, d) => {
                const p95 = metricsOf(d.last_metrics).latency_ms?.p95;
                return typeof p95 === "number" ? t("models.latencyMs", { ms: p95.toFixed(1) }) : "—";
              },
            },
          ]}
        />
      )}
    </Space>
  );
}
