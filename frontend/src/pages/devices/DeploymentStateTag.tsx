// A deployment's state as a tag; the states on their way spin, a failure shows its reason.
import { CheckCircleOutlined, CloseCircleOutlined, SyncOutlined } from "@ant-design/icons";
import { Space, Tag, Typography } from "antd";
import { useTranslation } from "react-i18next";

import { SETTLED_DEPLOYMENT_STATES, type DeploymentState } from "../../api/queries/fleet";

const COLORS: Record<DeploymentState, string> = {
  pending: "default",
  downloading: "processing",
  verifying: "processing",
  running: "success",
  failed: "error",
  superseded: "default",
};

export function DeploymentStateTag({ state, error }: { state: DeploymentState; error?: string }) {
  const { t } = useTranslation();
  const icon =
    state === "running" ? <CheckCircleOutlined /> : state === "failed" ? <CloseCircleOutlined /> : !SETTLED_DEPLOYMENT_STATES.has(state) ? <SyncOutlined spin /> : undefined;
  return (
    <Space size={4} wrap>
      <Tag color={COLORS[state]} icon={icon}>
        {t(`deployments.state.${state}`)}
      </Tag>
      {state === "failed" && error && <Typography.Text type="danger">{error}</Typography.Text>}
    </Space>
  );
}

/** online/offline as a badge. */
export function DeviceStatusBadge({ status }: { status: "online" | "offline" }) {
  const { t } = useTranslation();
  return <Tag color={status === "online" ? "success" : "default"}>{t(`devices.${status}`)}</Tag>;
}
