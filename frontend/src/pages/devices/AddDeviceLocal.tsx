// "Use this machine as a device", in the Add device dialog: where the server runs agents for its
// projects (`make run`), one click enrolls and starts an edge agent on the computer that runs
// Sampan (platform/sampan/fleet/local.py), for trying deployments without other hardware. Shown
// only when the server says it can; elsewhere the dialog has the commands for another machine only.
import { DesktopOutlined } from "@ant-design/icons";
import { Alert, Button, Divider, Space, Spin, Typography } from "antd";
import { useTranslation } from "react-i18next";
import { Link } from "react-router";

import { useLocalDevice, useRequestLocalDevice } from "../../api/queries/fleet";
import { useCanEdit } from "../../api/queries/projects";
import { useReportError } from "../../components/errors";
import { EditorOnly } from "../../components/ReadOnly";

/** The dialog's part for this machine, followed by a divider before the commands for another one; nothing when unavailable. */
export function LocalDeviceSection({ projectId }: { projectId: string }) {
  const { t } = useTranslation();
  const reportError = useReportError();
  const canEdit = useCanEdit(projectId);
  const local = useLocalDevice(projectId);
  const request = useRequestLocalDevice(projectId);
  const status = local.data;
  // not available, not known yet, or not readable (an older server): the commands alone
  if (!status?.available) return null;

  let body;
  if (status.state === "requested") {
    body = (
      <Space data-testid="local-device-starting">
        <Spin size="small" />
        <Typography.Text>{t("devices.local.starting")}</Typography.Text>
      </Space>
    );
  } else if (status.state === "enrolled" && status.device_id) {
    body = (
      <Alert
        data-testid="local-device-enrolled"
        type="success"
        showIcon
        title={t("devices.local.enrolled")}
        description={<Link to={`/projects/${projectId}/devices/${status.device_id}`}>{t("devices.local.open")}</Link>}
      />
    );
  } else {
    body = (
      <>
        <Typography.Paragraph type="secondary" style={{ marginBottom: 0 }}>
          {t("devices.local.explain")}
        </Typography.Paragraph>
        {status.state === "failed" && (
          <Alert data-testid="local-device-failed" type="error" showIcon title={t("devices.local.failed")} description={status.error} />
        )}
        {status.state === "stopped" && (
          <Alert
            data-testid="local-device-stopped"
            type="warning"
            showIcon
            title={t("devices.local.stopped")}
            description={
              <Space orientation="vertical" size={0}>
                {status.error}
                {status.device_id && <Link to={`/projects/${projectId}/devices/${status.device_id}`}>{t("devices.local.open")}</Link>}
              </Space>
            }
          />
        )}
        <EditorOnly canEdit={canEdit}>
          <Button
            type="primary"
            icon={<DesktopOutlined />}
            loading={request.isPending}
            disabled={!canEdit}
            onClick={() => request.mutate(undefined, { onError: (error) => reportError(error) })}
          >
            {t("devices.local.use")}
          </Button>
        </EditorOnly>
      </>
    );
  }

  return (
    <div data-testid="local-device">
      <Space orientation="vertical" style={{ width: "100%" }}>
        <Typography.Text strong>{t("devices.local.title")}</Typography.Text>
        {body}
      </Space>
      <Divider titlePlacement="start" plain>
        {t("devices.local.otherMachine")}
      </Divider>
    </div>
  );
}
