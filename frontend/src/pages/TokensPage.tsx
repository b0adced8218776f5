// The signed-in user's personal API tokens (user menu > API tokens): list with their last use,
// create one (its secret is shown once, with a copy button), revoke after a confirmation.
import { KeyOutlined } from "@ant-design/icons";
import { Alert, App, Button, Form, Input, InputNumber, Modal, Popconfirm, Space, Table, Tag, Typography } from "antd";
import { useState } from "react";
import { useTranslation } from "react-i18next";

import type { Schemas } from "../api/client";
import { useCreateToken, useRevokeToken, useTokens, type ApiTokenRow, type IssuedToken } from "../api/queries/accounts";
import { ErrorAlert, useReportError } from "../components/errors";
import { formatDate } from "../format";

/** The longest life and the default life of a token, days (services.MAX_TOKEN_DAYS / DEFAULT_TOKEN_DAYS). */
const MAX_DAYS = 365;
const DEFAULT_DAYS = 90;

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
    </Space>
  );
}
