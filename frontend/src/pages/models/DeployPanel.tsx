// Deploying a model version: a modal to pick devices (one click deploys to all of them), and the
// version's active deployments, polled every 2 s while any is pending/downloading/verifying.
import { CloudUploadOutlined } from "@ant-design/icons";
import { App, Button, Card, Checkbox, Empty, Modal, Select, Space, Table, Typography } from "antd";
import { useState } from "react";
import { useTranslation } from "react-i18next";
import { Link } from "react-router";

import { useCanEdit } from "../../api/queries/projects";
import { fleetTags, useActiveDeployments, useDeploy, useDevices, type Deployment } from "../../api/queries/fleet";
import type { ModelVersion } from "../../api/queries/training";
import { useReportError } from "../../components/errors";
import { EditorOnly } from "../../components/ReadOnly";
import { formatDate } from "../../format";
import { DeploymentStateTag, DeviceStatusBadge } from "../devices/DeploymentStateTag";

export function DeployButton({ projectId, version }: { projectId: string; version: ModelVersion }) {
  const { t } = useTranslation();
  const { message } = App.useApp();
  const reportError = useReportError();
  const [open, setOpen] = useState(false);
  const [selected, setSelected] = useState<string[]>([]);
  const devices = useDevices(projectId, open ? 5000 : false);
  const deploy = useDeploy(projectId);
  const canEdit = useCanEdit(projectId);

  const submit = () =>
    deploy.mutate(
      { model_version_id: version.id, device_ids: selected },
      {
        onSuccess: () => {
          void message.success(t("models.deployStarted"));
          setOpen(false);
          setSelected([]);
        },
        onError: (error) => reportError(error),
      },
    );

  return (
    <>
      <EditorOnly canEdit={canEdit}>
        <Button type="primary" icon={<CloudUploadOutlined />} onClick={() => setOpen(true)} disabled={!canEdit}>
          {t("models.deploy")}
        </Button>
      </EditorOnly>
      <Modal
        open={open}
        title={t("models.deployTitle", { name: version.model_name, version: version.version })}
        okText={t("models.deployOk", { count: selected.length })}
        okButtonProps={{ disabled: selected.length === 0, loading: deploy.isPending }}
        onOk={submit}
        onCancel={() => setOpen(false)}
        cancelText={t("common.cancel")}
      >
        <Typography.Paragraph type="secondary">{t("models.deployPick")}</Typography.Paragraph>
        {fleetTags(devices.data).length > 0 && (
          <Select
            data-testid="deploy-group"
            aria-label={t("models.deployGroup")}
            placeholder={t("models.deployGroup")}
            style={{ width: "100%", marginBottom: 12 }}
            value={null}
            options={fleetTags(devices.data).map((tag) => ({ value: tag, label: tag }))}
            onChange={(tag: string) => setSelected([...new Set([...selected, ...(devices.data ?? []).filter((d) => d.tags.includes(tag)).map((d) => d.id)])])}
          />
        )}
        {devices.data && devices.data.length === 0 && <Empty description={t("models.deployNoDevices")} />}
        <Checkbox.Group value={selected} onChange={(values) => setSelected(values as string[])} style={{ width: "100%" }}>
          <Space orientation="vertical" style={{ width: "100%" }}>
            {(devices.data ?? []).map((device) => (
              <Checkbox key={device.id} value={device.id}>
                <Space>
                  {device.name}
                  <DeviceStatusBadge status={device.status} />
                  {device.current_model_version && (
                    <Typography.Text type="secondary">
                      {device.current_model_version.model_name} v{device.current_model_version.version}
                    </Typography.Text>
                  )}
                </Space>
              </Checkbox>
            ))}
          </Space>
        </Checkbox.Group>
      </Modal>
    </>
  );
}

export function DeploymentsCard({ projectId, versionId }: { projectId: string; versionId: string }) {
  const { t } = useTranslation();
  const deployments = useActiveDeployments(projectId);
  const rows = (deployments.data ?? []).filter((d) => d.model_version.id === versionId);
  if (rows.length === 0) return null;
  return (
    <Card size="small" title={t("models.deployments")}>
      <Table<Deployment>
        data-testid="deployments-table"
        rowKey="id"
        size="small"
        pagination={false}
        dataSource={rows}
        columns={[
          {
            title: t("deployments.device"),
            dataIndex: "device_name",
            render: (name: string, d) => <Link to={`/projects/${projectId}/devices/${d.device_id}`}>{name}</Link>,
          },
          {
            title: t("deployments.stateTitle"),
            dataIndex: "state",
            render: (_, d) => <DeploymentStateTag state={d.state} error={d.error} />,
          },
          { title: t("deployments.changed"), dataIndex: "state_changed_at", render: (value: string) => formatDate(value) },
        ]}
      />
    </Card>
  );
}
