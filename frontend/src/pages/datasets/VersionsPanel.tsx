// The dataset page's Versions tab: freeze the labeled samples into a version, and the versions.
import { LockOutlined, WarningOutlined } from "@ant-design/icons";
import { App, Button, Card, Empty, Form, Input, InputNumber, Space, Table, Tag, Tooltip, Typography } from "antd";
import { useTranslation } from "react-i18next";
import { Link, useNavigate } from "react-router";

import { useCanEdit } from "../../api/queries/projects";
import { flagsOf, statsOf, useDatasetVersions, useFreezeVersion, type DatasetVersion } from "../../api/queries/versions";
import { ErrorAlert, useReportError } from "../../components/errors";
import { EditorOnly } from "../../components/ReadOnly";
import { formatDate } from "../../format";
import { flagText } from "./flagText";

interface FreezeValues {
  seed: number;
  val_fraction: number;
  test_fraction: number;
  note?: string;
}

/** Defaults of the API (DatasetVersionInputRequest): 70/15/15 train/validation/test, seed 0. */
export const FREEZE_DEFAULTS: FreezeValues = { seed: 0, val_fraction: 0.15, test_fraction: 0.15 };
/** A class with fewer labeled samples stays out of the test split (platform: MIN_SAMPLES_FOR_TEST). */
export const MIN_SAMPLES_FOR_TEST = 10;

export function VersionsPanel({ projectId, datasetId }: { projectId: string; datasetId: string }) {
  const { t } = useTranslation();
  const versions = useDatasetVersions(projectId, datasetId);
  const versionPath = (v: DatasetVersion) => `/projects/${projectId}/datasets/${datasetId}/versions/${v.id}`;

  return (
    <Space orientation="vertical" size="middle" style={{ width: "100%" }}>
      <FreezeForm projectId={projectId} datasetId={datasetId} />
      {versions.isError ? (
        <ErrorAlert error={versions.error} onRetry={() => void versions.refetch()} />
      ) : (
        <Table<DatasetVersion>
          rowKey="id"
          size="small"
          data-testid="versions-table"
          loading={versions.isPending}
          dataSource={versions.data ? [...versions.data].sort((a, b) => b.number - a.number) : undefined}
          pagination={false}
          locale={{ emptyText: <Empty description={t("versions.empty")} /> }}
          columns={[
            {
              title: t("versions.version"),
              dataIndex: "number",
              render: (_, v) => <Link to={versionPath(v)}>{t("versions.name", { number: v.number })}</Link>,
            },
            { title: t("versions.samples"), render: (_, v) => statsOf(v).samples },
            { title: t("versions.classes"), render: (_, v) => v.labels.length },
            {
              title: t("versions.split"),
              render: (_, v) => {
                const s = statsOf(v).splits;
                return t("versions.splitCounts", { train: s.train ?? 0, val: s.val ?? 0, test: s.test ?? 0 });
              },
            },
            {
              title: t("versions.flags"),
              render: (_, v) => {
                const flags = flagsOf(v);
                return flags.length === 0 ? (
                  <Tag color="success">{t("versions.noFlags")}</Tag>
                ) : (
                  <Tooltip
                    title={
                      <ul style={{ margin: 0, paddingInlineStart: 16 }}>
                        {flags.map((f, i) => (
                          <li key={i}>{flagText(t, f, v.labels)}</li>
                        ))}
                      </ul>
                    }
                  >
                    <Tag color="warning" icon={<WarningOutlined />}>
                      {t("versions.flagCount", { count: flags.length })}
                    </Tag>
                  </Tooltip>
                );
              },
            },
            { title: t("versions.note"), dataIndex: "note", ellipsis: true },
            { title: t("common.createdAt"), dataIndex: "created_at", render: (value: string) => formatDate(value) },
          ]}
        />
      )}
    </Space>
  );
}

function FreezeForm({ projectId, datasetId }: { projectId: string; datasetId: string }) {
  const { t } = useTranslation();
  const { message } = App.useApp();
  const [form] = Form.useForm<FreezeValues>();
  const freeze = useFreezeVersion(projectId, datasetId);
  const canEdit = useCanEdit(projectId);
  const reportError = useReportError();
  const navigate = useNavigate();

  const submit = (values: FreezeValues) =>
    freeze.mutate(
      { ...values, note: values.note ?? "" },
      {
        onSuccess: (version) => {
          void message.success(t("versions.frozen", { number: version.number }));
          void navigate(`/projects/${projectId}/datasets/${datasetId}/versions/${version.id}`);
        },
        onError: (error) => reportError(error, form),
      },
    );

  return (
    <Card size="small" title={t("versions.freezeTitle")}>
      <Typography.Paragraph type="secondary" style={{ marginTop: 0 }}>
        {t("versions.freezeHint")}
      </Typography.Paragraph>
      <Typography.Paragraph type="secondary" data-testid="test-split-hint">
        {t("versions.testSplitHint", { min: MIN_SAMPLES_FOR_TEST })}
      </Typography.Paragraph>
      <Form<FreezeValues> form={form} layout="inline" initialValues={FREEZE_DEFAULTS} onFinish={submit} disabled={!canEdit}>
        <Form.Item name="val_fraction" label={t("versions.valFraction")} tooltip={t("versions.valFractionHint")}>
          <InputNumber min={0} max={0.9} step={0.05} style={{ width: 90 }} />
        </Form.Item>
        <Form.Item name="test_fraction" label={t("versions.testFraction")}>
          <InputNumber min={0} max={0.9} step={0.05} style={{ width: 90 }} />
        </Form.Item>
        <Form.Item name="seed" label={t("versions.seed")} tooltip={t("versions.seedHint")}>
          <InputNumber min={0} precision={0} style={{ width: 100 }} />
        </Form.Item>
        <Form.Item name="note" label={t("versions.note")}>
          <Input maxLength={500} style={{ width: 200 }} />
        </Form.Item>
        <Form.Item>
          <EditorOnly canEdit={canEdit}>
            <Button type="primary" htmlType="submit" icon={<LockOutlined />} loading={freeze.isPending}>
              {t("versions.freeze")}
            </Button>
          </EditorOnly>
        </Form.Item>
      </Form>
    </Card>
  );
}
