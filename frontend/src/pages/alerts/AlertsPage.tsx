// Alerts: the project's rules (add, delete) and what fired, newest first (refreshed every 30 s).
import { DeleteOutlined, PlusOutlined } from "@ant-design/icons";
import { Button, Card, Form, Input, InputNumber, Popconfirm, Select, Space, Table, Tag, Typography } from "antd";
import { useTranslation } from "react-i18next";
import { useParams } from "react-router";

import { ALERT_KINDS, useAlertRules, useAlerts, useCreateAlertRule, useDeleteAlertRule, type AlertRule, type AlertRuleInput, type FiredAlert } from "../../api/queries/alerts";
import { useCanEdit } from "../../api/queries/projects";
import { ErrorAlert, useReportError } from "../../components/errors";
import { EditorOnly } from "../../components/ReadOnly";
import { formatDate } from "../../format";

const UNIT: Record<(typeof ALERT_KINDS)[number], string> = { device_offline: "min", error_rate: "", p95_latency_ms: "ms", low_confidence: "" };

function threshold(rule: AlertRule): string {
  if (rule.kind === "error_rate") return `${(rule.threshold * 100).toFixed(1)}%`;
  if (rule.kind === "low_confidence") return `< ${rule.threshold}`;
  return `${rule.threshold} ${UNIT[rule.kind]}`;
}

function NewRuleForm({ projectId }: { projectId: string }) {
  const { t } = useTranslation();
  const reportError = useReportError();
  const create = useCreateAlertRule(projectId);
  const [form] = Form.useForm<AlertRuleInput>();
  const kind = Form.useWatch("kind", form);
  return (
    <Form
      form={form}
      layout="inline"
      initialValues={{ kind: "device_offline", threshold: 10, window_minutes: 5 }}
      onFinish={(values) =>
        create.mutate(
          { ...values, tag: values.tag ?? "", webhook_url: values.webhook_url ?? "", emails: values.emails ?? [] },
          { onSuccess: () => form.resetFields(), onError: (error) => reportError(error, form) },
        )
      }
      style={{ rowGap: 8 }}
    >
      <Form.Item name="name" label={t("common.name")} rules={[{ required: true }]}>
        <Input style={{ width: 160 }} />
      </Form.Item>
      <Form.Item name="kind" label={t("alerts.kind")}>
        <Select style={{ width: 190 }} options={ALERT_KINDS.map((k) => ({ value: k, label: t(`alerts.kinds.${k}`) }))} />
      </Form.Item>
      <Form.Item name="threshold" label={t(`alerts.threshold.${kind ?? "device_offline"}`)} rules={[{ required: true }]}>
        <InputNumber min={0} max={kind === "error_rate" || kind === "low_confidence" ? 1 : undefined} step={kind === "error_rate" || kind === "low_confidence" ? 0.05 : 1} />
      </Form.Item>
      {kind === "error_rate" && (
        <Form.Item name="window_minutes" label={t("alerts.window")}>
          <InputNumber min={1} max={1440} />
        </Form.Item>
      )}
      <Form.Item name="tag" label={t("devices.tags")}>
        <Input style={{ width: 120 }} placeholder={t("alerts.allDevices")} />
      </Form.Item>
      <Form.Item name="webhook_url" label={t("alerts.webhook")}>
        <Input style={{ width: 220 }} placeholder="https://" />
      </Form.Item>
      <Form.Item name="emails" label={t("alerts.emails")}>
        <Select mode="tags" style={{ width: 220 }} tokenSeparators={[",", " "]} open={false} />
      </Form.Item>
      <Form.Item>
        <Button type="primary" htmlType="submit" icon={<PlusOutlined />} loading={create.isPending}>
          {t("alerts.add")}
        </Button>
      </Form.Item>
    </Form>
  );
}

export function AlertsPage() {
  const { t } = useTranslation();
  const { projectId = "" } = useParams();
  const reportError = useReportError();
  const canEdit = useCanEdit(projectId);
  const rules = useAlertRules(projectId);
  const alerts = useAlerts(projectId);
  const remove = useDeleteAlertRule(projectId);
  if (rules.isError) return <ErrorAlert error={rules.error} onRetry={() => void rules.refetch()} />;
  return (
    <Space orientation="vertical" size="middle" style={{ width: "100%" }}>
      <Typography.Title level={3} style={{ margin: 0 }}>
        {t("nav.alerts")}
      </Typography.Title>
      <Card title={t("alerts.rules")} size="small">
        <Space orientation="vertical" style={{ width: "100%" }}>
          <Typography.Text type="secondary">{t("alerts.intro")}</Typography.Text>
          <EditorOnly canEdit={canEdit}>
            <NewRuleForm projectId={projectId} />
          </EditorOnly>
          <Table<AlertRule>
            data-testid="alert-rules"
            rowKey="id"
            size="small"
            pagination={false}
            loading={rules.isLoading}
            dataSource={rules.data ?? []}
            locale={{ emptyText: t("alerts.noRules") }}
            columns={[
              { title: t("common.name"), dataIndex: "name" },
              { title: t("alerts.kind"), dataIndex: "kind", render: (kind: AlertRule["kind"]) => t(`alerts.kinds.${kind}`) },
              { title: t("alerts.when"), key: "threshold", render: (_, rule) => threshold(rule) },
              { title: t("devices.tags"), dataIndex: "tag", render: (tag: string) => (tag ? <Tag>{tag}</Tag> : t("alerts.allDevices")) },
              {
                title: t("alerts.notify"),
                key: "notify",
                render: (_, rule) => [rule.webhook_url && t("alerts.webhook"), ...rule.emails].filter(Boolean).join(", ") || "—",
              },
              {
                key: "delete",
                render: (_, rule) =>
                  canEdit && (
                    <Popconfirm title={t("alerts.deleteConfirm", { name: rule.name })} onConfirm={() => remove.mutate(rule.id, { onError: (error) => reportError(error) })}>
                      <Button size="small" danger icon={<DeleteOutlined />} aria-label={t("alerts.delete", { name: rule.name })} />
                    </Popconfirm>
                  ),
              },
            ]}
          />
        </Space>
      </Card>
      <Card title={t("alerts.history")} size="small">
        <Table<FiredAlert>
          data-testid="alerts"
          rowKey="id"
          size="small"
          pagination={{ pageSize: 20, hideOnSinglePage: true }}
          loading={alerts.isLoading}
          dataSource={alerts.data ?? []}
          locale={{ emptyText: t("alerts.none") }}
          columns={[
            { title: t("alerts.state"), dataIndex: "state", render: (state: FiredAlert["state"]) => <Tag color={state === "firing" ? "red" : "green"}>{t(`alerts.states.${state}`)}</Tag> },
            { title: t("alerts.message"), dataIndex: "message" },
            { title: t("alerts.rule"), dataIndex: "rule_name" },
            { title: t("alerts.started"), dataIndex: "started_at", render: (value: string) => formatDate(value) },
            { title: t("alerts.resolved"), dataIndex: "resolved_at", render: (value: string | null) => (value ? formatDate(value) : "—") },
          ]}
        />
      </Card>
    </Space>
  );
}
