// A project's audit log (owners only): who did what, when, to which object; newest first, a page
// at a time, filterable by action.
import { Select, Space, Table, Typography } from "antd";
import { useState } from "react";
import { useTranslation } from "react-i18next";
import { useParams } from "react-router";

import { useAuditLog, type AuditEvent } from "../api/queries/accounts";
import { useProjectRole } from "../api/queries/projects";
import { ErrorAlert } from "../components/errors";
import { formatDate } from "../format";

/** The actions the platform records in a project (AuditEventOutput.action) and their locale keys. */
export const AUDIT_ACTIONS = {
  "project.create": "project_create",
  "member.set": "member_set",
  "member.remove": "member_remove",
  "project.update": "project_update",
  "project.archive": "project_archive",
  "project.unarchive": "project_unarchive",
  "dataset.update": "dataset_update",
  "dataset.archive": "dataset_archive",
  "dataset.unarchive": "dataset_unarchive",
  "dataset.delete": "dataset_delete",
  "training.create": "training_create",
  "model_version.register": "model_version_register",
  "compression.create": "compression_create",
  "deployment.create": "deployment_create",
  "rollout.create": "rollout_create",
  "rollout.rollback": "rollout_rollback",
  "device.update": "device_update",
  "device.re_enroll": "device_re_enroll",
  "enrollment_token.create": "enrollment_token_create",
  "alert_rule.delete": "alert_rule_delete",
} as const;
type KnownAction = keyof typeof AUDIT_ACTIONS;

const PAGE_SIZE = 20;

/** What changed, from the event's details: "username: carol, role: viewer". */
function detailsText(details: unknown): string {
  if (typeof details !== "object" || details === null) return "";
  return Object.entries(details as Record<string, unknown>)
    .filter(([, value]) => value !== null && value !== "")
    .map(([key, value]) => `${key}: ${typeof value === "object" ? JSON.stringify(value) : String(value)}`)
    .join(", ");
}

export function AuditPage() {
  const { t } = useTranslation();
  const { projectId = "" } = useParams();
  const role = useProjectRole(projectId);
  const [page, setPage] = useState(1);
  const [action, setAction] = useState<string | undefined>(undefined);
  const log = useAuditLog(projectId, page, PAGE_SIZE, action);

  // an action the console does not know yet (a newer server) is shown as the server names it
  const actionLabel = (value: string) =>
    value in AUDIT_ACTIONS ? t(`audit.actions.${AUDIT_ACTIONS[value as KnownAction]}`) : value;

  return (
    <Space orientation="vertical" size="middle" style={{ width: "100%" }}>
      <Typography.Title level={3} style={{ margin: 0 }}>
        {t("audit.title")}
      </Typography.Title>
      {role !== undefined && role !== "owner" ? (
        <Typography.Paragraph type="secondary">{t("audit.ownerOnly")}</Typography.Paragraph>
      ) : log.isError ? (
        <ErrorAlert error={log.error} onRetry={() => void log.refetch()} />
      ) : (
        <>
          <Select
            allowClear
            aria-label={t("audit.filter")}
            placeholder={t("audit.allActions")}
            style={{ width: 280 }}
            value={action}
            onChange={(value?: string) => {
              setAction(value);
              setPage(1);
            }}
            options={Object.keys(AUDIT_ACTIONS).map((value) => ({ value, label: actionLabel(value) }))}
          />
          <Table<AuditEvent>
            data-testid="audit-log"
            rowKey="id"
            loading={log.isPending}
            dataSource={log.data?.results}
            locale={{ emptyText: t("audit.none") }}
            pagination={{ current: page, pageSize: PAGE_SIZE, total: log.data?.count ?? 0, onChange: setPage, showSizeChanger: false, hideOnSinglePage: true }}
            columns={[
              { title: t("audit.time"), dataIndex: "created_at", width: 200, render: (value: string) => formatDate(value) },
              { title: t("audit.actor"), dataIndex: "actor", width: 160, render: (actor: string) => actor || <Typography.Text type="secondary">{t("audit.system")}</Typography.Text> },
              { title: t("audit.action"), dataIndex: "action", width: 220, render: (value: string) => actionLabel(value) },
              {
                title: t("audit.object"),
                key: "object",
                render: (_: unknown, event) => (
                  <Space orientation="vertical" size={0}>
                    <Typography.Text>{[event.target_type, event.target_id].filter(Boolean).join(" ")}</Typography.Text>
                    <Typography.Text type="secondary">{detailsText(event.details)}</Typography.Text>
                  </Space>
                ),
              },
            ]}
          />
        </>
      )}
    </Space>
  );
}
