// An offline bundle of a model version: the agent, its dependencies and this signed model in one
// tar, for a device that never reaches this server (platform/sampan/registry/offline.py). A
// dialog to pick the device's platform and Python among the wheelhouses this server has, a plain
// link to download it, and the commands to run on the device.
import { CloudDownloadOutlined, DownloadOutlined } from "@ant-design/icons";
import { Alert, Button, Modal, Select, Skeleton, Space, Typography } from "antd";
import { useState } from "react";
import { useTranslation } from "react-i18next";

import { useAgentWheelhouses, type Wheelhouse } from "../../api/queries/models";
import type { ModelVersion } from "../../api/queries/training";
import { ErrorAlert } from "../../components/errors";
import { formatBytes } from "../../format";

/** What an administrator runs once on the server to prepare a target (it needs PyPI). */
export const WHEELHOUSE_COMMAND = "python platform/manage.py sampan_wheelhouse --target linux-x86_64 --python 3.11";
/** Where install.sh puts the agent (its default SAMPAN_AGENT_PREFIX) and how it is served. */
export const OFFLINE_RUN_COMMAND = "~/.local/share/sampan-agent/bin/sampan-agent run --host 0.0.0.0 --port 8700 --api-key-file ~/agent.key";

/** The server's `_slug`: runs outside [A-Za-z0-9._-] become "_", then "." and "_" are trimmed. */
export function offlineSlug(name: string): string {
  return name.replace(/[^A-Za-z0-9._-]+/gu, "_").replace(/^[._]+|[._]+$/g, "") || "model";
}

/** The archive's top folder, as the server names it: `digits-v3-offline-linux-x86_64-py3.11`. */
export function offlineFolder(modelName: string, version: number, target: string, python: string): string {
  return `${offlineSlug(modelName)}-v${version}-offline-${target}-py${python}`;
}

/**
 * The command that unpacks the download. The server names the file after the model as it is
 * (`<name>-v3-offline-<target>-py<python>.tar`, any Unicode); only when that name is the slug
 * itself is it the folder's name plus `.tar`. Otherwise (spaces, Chinese, ...) the browser's
 * name is not safe to spell in a shell, and curl saves under an ASCII fallback: a pattern on the
 * part every one of them ends with matches whichever it is.
 */
export function offlineTarCommand(modelName: string, version: number, target: string, python: string): string {
  if (offlineSlug(modelName) === modelName) return `tar xf ${offlineFolder(modelName, version, target, python)}.tar`;
  return `tar xf *-v${version}-offline-${target}-py${python}.tar`;
}

/** `/api/v1/.../offline-bundle/?target=...&python=...`: downloaded by the browser, not by fetch. */
export function offlineBundleUrl(projectId: string, versionId: string, house: Pick<Wheelhouse, "target" | "python">): string {
  const query = new URLSearchParams({ target: house.target, python: house.python });
  return `/api/v1/projects/${projectId}/model-versions/${versionId}/offline-bundle/?${query.toString()}`;
}

const key = (house: Pick<Wheelhouse, "target" | "python">) => `${house.target}/${house.python}`;

/** "linux-x86_64" -> "Linux x86_64". */
function platformName(target: string): string {
  const [os = "", ...machine] = target.split("-");
  return `${os.charAt(0).toUpperCase()}${os.slice(1)} ${machine.join("-")}`.trim();
}

function Command({ testId, command }: { testId: string; command: string }) {
  return (
    <Typography.Paragraph data-testid={testId} copyable={{ text: command }} code style={{ whiteSpace: "pre-wrap", wordBreak: "break-all", marginBottom: 0 }}>
      {command}
    </Typography.Paragraph>
  );
}

export function OfflineBundleButton({ projectId, version }: { projectId: string; version: ModelVersion }) {
  const { t } = useTranslation();
  const [open, setOpen] = useState(false);
  return (
    <>
      <Button icon={<CloudDownloadOutlined />} onClick={() => setOpen(true)}>
        {t("models.offlineBundle")}
      </Button>
      <Modal
        open={open}
        title={t("models.offlineTitle")}
        onCancel={() => setOpen(false)}
        footer={<Button onClick={() => setOpen(false)}>{t("common.close")}</Button>}
        width={720}
      >
        {open && <OfflineBundleContent projectId={projectId} version={version} />}
      </Modal>
    </>
  );
}

function OfflineBundleContent({ projectId, version }: { projectId: string; version: ModelVersion }) {
  const { t } = useTranslation();
  const houses = useAgentWheelhouses(projectId);
  const [choice, setChoice] = useState<string | null>(null);

  const intro = <Typography.Paragraph>{t("models.offlineIntro", { name: version.model_name, version: version.version })}</Typography.Paragraph>;
  if (houses.isError) {
    return (
      <>
        {intro}
        <ErrorAlert error={houses.error} onRetry={() => void houses.refetch()} />
      </>
    );
  }
  if (!houses.data) {
    return (
      <>
        {intro}
        <Skeleton active />
      </>
    );
  }
  const house = houses.data.find((h) => key(h) === choice) ?? houses.data[0];
  if (!house) {
    return (
      <>
        {intro}
        <Alert
          data-testid="offline-none"
          type="info"
          showIcon
          title={t("models.offlineNoTargets")}
          description={
            <>
              <Typography.Paragraph>{t("models.offlineNoTargetsHint")}</Typography.Paragraph>
              <Command testId="offline-admin-command" command={WHEELHOUSE_COMMAND} />
            </>
          }
        />
      </>
    );
  }

  const folder = offlineFolder(version.model_name, version.version, house.target, house.python);
  const install = `sh ${folder}/install.sh`;
  return (
    <Space orientation="vertical" style={{ width: "100%" }}>
      {intro}
      <Typography.Text strong>{t("models.offlineTarget")}</Typography.Text>
      <Select
        data-testid="offline-target"
        aria-label={t("models.offlineTarget")}
        style={{ width: "100%" }}
        value={key(house)}
        onChange={(value: string) => setChoice(value)}
        options={houses.data.map((h) => ({
          value: key(h),
          label: t("models.offlineTargetOption", {
            platform: platformName(h.target),
            python: h.python,
            count: h.wheels,
            size: formatBytes(h.bytes),
          }),
        }))}
      />
      <Button type="primary" icon={<DownloadOutlined />} href={offlineBundleUrl(projectId, version.id, house)}>
        {t("models.offlineDownload")}
      </Button>
      <Typography.Text strong>{t("models.offlineStepUnpack")}</Typography.Text>
      <Command testId="offline-tar" command={offlineTarCommand(version.model_name, version.version, house.target, house.python)} />
      <Typography.Text strong>{t("models.offlineStepInstall")}</Typography.Text>
      <Command testId="offline-install" command={install} />
      <Typography.Text type="secondary">{t("models.offlineOtherPython", { python: house.python })}</Typography.Text>
      <Command testId="offline-install-python" command={`PYTHON=python${house.python} ${install}`} />
      <Typography.Text strong>{t("models.offlineStepRun")}</Typography.Text>
      <Command testId="offline-run" command={OFFLINE_RUN_COMMAND} />
    </Space>
  );
}
