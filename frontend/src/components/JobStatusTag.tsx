import { Tag } from "antd";
import { useTranslation } from "react-i18next";

export const STATUS_COLOURS: Record<string, string> = {
  PENDING: "default",
  QUEUED: "default",
  RUNNING: "processing",
  SUCCEEDED: "success",
  FAILED: "error",
  CANCELLED: "warning",
};

type StatusKey = keyof typeof import("../i18n/locales/en.json")["imports"]["status"];

/** A job's state (the same states for import and training jobs: platform/sampan/core/jobs.py). */
export function JobStatusTag({ status }: { status: string }) {
  const { t } = useTranslation();
  return (
    <Tag color={STATUS_COLOURS[status]} data-testid="job-status">
      {t(`imports.status.${status as StatusKey}`, { defaultValue: status })}
    </Tag>
  );
}
