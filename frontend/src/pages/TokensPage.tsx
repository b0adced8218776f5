// The signed-in user's personal API tokens (user menu > API tokens): list with their last use,
// create one (its secret is shown once, with a copy button), revoke after a confirmation; and the
// account's recent activity (tokens created and revoked, sign-ins and failed tries of the password).
import { KeyOutlined } from "@ant-design/icons";
import { Alert, App, Button, Form, Input, InputNumber, Modal, Popconfirm, Space, Table, Tag, Typography } from "antd";
import { useState } from "react";
import { useTranslation } from "react-i18next";

import type { Schemas } from "../api/client";
import { useCreateToken, useMyActivity, useRevokeToken, useTokens, type ApiTokenRow, type AuditEvent, type IssuedToken } from "../api/queries/accounts";
import { ErrorAlert, useReportError } from "../components/errors";
import { formatDate } from "../format";

/** The longest life and the default life of a token, days (services.MAX_TOKEN_DAYS / DEFAULT_TOKEN_DAYS). */
const MAX_DAYS = 365;
const DEFAULT_DAYS = 90;

/** The actions recorded for an account, outside any project (AuditEventOutput.action), and their locale keys. */
export const ACTIVITY_ACTIONS = {
  "token.create": "token_create",
  "token.revoke": "token_revoke",
  "login.succeeded": "login_succeeded",
  "login.failed": "login_failed",
  "user.create": "user_create",
  "project.delete": "project_delete",
} as const;
type ActivityAction = keyof typeof ACTIVITY_ACTIONS;

const ACTIVITY_PAGE_SIZE = 10;

/** A string field of an event's details, or "". */
function detail(event: AuditEvent, key: string): string {
  const details = event.details as Record<string, unknown> | null;
  const value = details && typeof details === "object" ? details[key] : undefined;
  return typeof value === "string" || typeof value === "number" ? String(value) : "";
}

/** The account's own events of no project, newest first, a page at a time. */
function RecentActivity() {
  const { t } = useTranslation();
  const [page, setPage] = useState(1);
  const activity = useMyActivity(page, ACTIVITY_PAGE_SIZE);

  // an action the console does not know yet (a newer server) is shown as the server names it
  const actionLabel = (value: string) =>
    value in ACTIVITY_ACTIONS ? t(`tokens.activity.actions.${ACTIVITY_ACTIONS[value as ActivityAction]}`) : value;

  const object = (event: AuditEvent) => {
    if (event.action.startsWith("token.")) {
      return (
        <Space size="small">
          <Typography.Text>{detail(event, "name")}</Typography.Text>
          {detail(event, "prefix") && <Typography.Text code>{detail(event, "prefix")}…</Typography.Text>}
        </Space>
      );
    }
    if (event.action.startsWith("login.")) return t("tokens.activity.fromAddress", { address: detail(event, "address") });
    if (event.action === "user.create") return t("tokens.activity.accountBy", { username: detail(event, "username"), actor: event.actor || t("audit.system") });
    if (event.action === "project.delete") return detail(event, "name");
    return [event.target_type, event.target_id].filter(Boolean).join(" ");
  };

  return (
    <>
      <Typography.Title level={4} style={{ margin: 0 }}>
        {t("tokens.activity.title")}
      </Typography.Title>
      {activity.isError ? (
        <ErrorAlert error={activity.error} onRetry={() => void activity.refetch()} />
      ) : (
        <Table<AuditEvent>
          data-testid="activity"
          rowKey="id"
          size="small"
          loading={activity.isPending}
          dataSource={activity.data?.results}
          locale={{ emptyText: t("tokens.activity.none") }}
          pagination={{ current: page, pageSize: ACTIVITY_PAGE_SIZE, total: activity.data?.count ?? 0, onChange: setPage, showSizeChanger: false, hideOnSinglePage: true }}
          columns={[
            { title: t("audit.time"), dataIndex: "created_at", width: 200, render: (value: string) => formatDate(value) },
            {
              title: t("audit.action"),
              dataIndex: "action",
              width: 240,
              render: (value: string) => (value === "login.failed" ? <Tag color="orange">{actionLabel(value)}</Tag> : actionLabel(value)),
            },
            { title: t("audit.object"), key: "object", render: (_: unknown, event) => object(event) },
          ]}
        />
      )}
    </>
  );
}

export function TokensPage() {
  const { t } = useTranslation();
  const { message } = App.useApp();
  const tokens = useTokens();
  const createToken = useCreateToken();
  const revokeToken = useRevokeToken();
  const reportError = useReportError();
  const [form] = Form.useForm<Schemas["TokenInputRequest"]>();
  const [issued, setIssued] = useState<IssuedToken | null>(null);

  const create = (values: Schemas["TokenInputRequest"]) =>
    createToken.mutate(
      { name: values.name, expires_in_days: values.expires_in_days ?? null },
      {
        onSuccess: (token) => {
          setIssued(token);
          form.resetFields();
        },
        onError: (error) => reportError(error, form),
      },
    );

  const expired = (token: ApiTokenRow) => token.expires_at !== null && new Date(token.expires_at) <= new Date();

  return (
    <Space orientation="vertical" size="middle" style={{ width: "100%" }}>
      <Typography.Title level={3} style={{ margin: 0 }}>
        {t("tokens.title")}
      </Typography.Title>
      <Typography.Paragraph type="secondary" style={{ margin: 0 }}>
        {t("tokens.intro")}
      </Typography.Paragraph>
      <Form form={form} layout="inline" onFinish={create} initialValues={{ expires_in_days: DEFAULT_DAYS }} aria-label={t("tokens.create")}>
        <Form.Item name="name" rules={[{ required: true, message: t("common.required") }]}>
          <Input placeholder={t("tokens.name")} aria-label={t("tokens.name")} style={{ width: 220 }} maxLength={100} />
        </Form.Item>
        <Form.Item name="expires_in_days" label={t("tokens.expiresInDays")} extra={t("tokens.neverHint", { max: MAX_DAYS })}>
          <InputNumber min={1} max={MAX_DAYS} precision={0} aria-label={t("tokens.expiresInDays")} style={{ width: 110 }} />
        </Form.Item>
        <Button type="primary" htmlType="submit" icon={<KeyOutlined />} loading={createToken.isPending}>
          {t("tokens.create")}
        </Button>
      </Form>
      {tokens.isError ? (
        <ErrorAlert error={tokens.error} onRetry={() => void tokens.refetch()} />
      ) : (
        <Table<ApiTokenRow>
          data-testid="tokens"
          rowKey="id"
          loading={tokens.isPending}
          dataSource={tokens.data}
          pagination={false}
          locale={{ emptyText: t("tokens.none") }}
          columns={[
            { title: t("tokens.name"), dataIndex: "name" },
            { title: t("tokens.prefix"), dataIndex: "prefix", render: (prefix: string) => <Typography.Text code>{prefix}…</Typography.Text> },
            { title: t("common.createdAt"), dataIndex: "created_at", render: (value: string) => formatDate(value) },
            {
              title: t("tokens.expires"),
              dataIndex: "expires_at",
              render: (value: string | null, token) =>
                value === null ? t("tokens.never") : expired(token) ? <Tag color="red">{t("tokens.expiredAt", { when: formatDate(value) })}</Tag> : formatDate(value),
            },
            { title: t("tokens.lastUsed"), dataIndex: "last_used_at", render: (value: string | null) => (value ? formatDate(value) : t("tokens.neverUsed")) },
            {
              title: t("common.actions"),
              key: "actions",
              width: 120,
              render: (_: unknown, token) => (
                <Popconfirm
                  title={t("tokens.revokeConfirm", { name: token.name })}
                  okText={t("tokens.revoke")}
                  cancelText={t("common.cancel")}
                  onConfirm={() =>
                    revokeToken.mutate(token.id, {
                      onSuccess: () => void message.success(t("tokens.revoked", { name: token.name })),
                      onError: (error) => reportError(error),
                    })
                  }
                >
                  <Button type="link" danger>
                    {t("tokens.revoke")}
                  </Button>
                </Popconfirm>
              ),
            },
          ]}
        />
      )}
      <Modal
        open={issued !== null}
        title={t("tokens.createdTitle", { name: issued?.name ?? "" })}
        onCancel={() => setIssued(null)}
        destroyOnHidden
        footer={<Button onClick={() => setIssued(null)}>{t("common.close")}</Button>}
      >
        <Alert type="warning" showIcon title={t("tokens.shownOnce")} style={{ marginBottom: 12 }} />
        <Typography.Paragraph data-testid="token-secret" copyable={{ text: issued?.token ?? "" }} code style={{ wordBreak: "break-all" }}>
          {issued?.token}
        </Typography.Paragraph>
        <Typography.Paragraph type="secondary" style={{ marginBottom: 0 }}>
          {t("tokens.usage")}
        </Typography.Paragraph>
      </Modal>
      <RecentActivity />
    </Space>
  );
}
