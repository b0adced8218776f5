// The Models section: every model of the project with its versions; a version opens its page.
import { Card, Empty, Skeleton, Space, Table, Tag, Typography } from "antd";
import { useTranslation } from "react-i18next";
import { Link, useParams } from "react-router";

import { useModels, useModelVersions, type Model } from "../../api/queries/models";
import type { ModelVersion } from "../../api/queries/training";
import { ErrorAlert } from "../../components/errors";
import { NotEvaluatedTag } from "../../components/NotEvaluatedTag";
import { formatBytes, formatDate } from "../../format";
import { headlineMetric, metricNames, percent } from "./headlineMetric";

function ModelVersionsTable({ projectId, model }: { projectId: string; model: Model }) {
  const { t } = useTranslation();
  const versions = useModelVersions(projectId, model.id);
  // a model has one task: its columns name that task's figures (accuracy, or a detector's mAP)
  const names = metricNames(model.task_type);
  if (versions.isError) return <ErrorAlert error={versions.error} onRetry={() => void versions.refetch()} />;
  const rows = [...(versions.data ?? [])].sort((a, b) => b.version - a.version);
  return (
    <Table<ModelVersion>
      rowKey="id"
      size="small"
      loading={versions.isLoading}
      pagination={false}
      dataSource={rows}
      columns={[
        {
          title: t("models.version"),
          dataIndex: "version",
          render: (version: number, v) => (
            <Link to={`/projects/${projectId}/models/versions/${v.id}`}>{t("models.versionLabel", { version })}</Link>
          ),
        },
        // the figures of the split the report used (test unless the version had none), named
        {
          title: t(names.nameKey),
          key: "acc",
          render: (_, v) => {
            const headline = headlineMetric(v);
            if (!headline) return "—";
            return (
              <span data-testid="version-accuracy" title={t(headline.labelKey)}>
                {percent(headline.value)}{" "}
                <Typography.Text type="secondary" style={{ fontSize: 12 }}>
                  {t(`training.splitShort.${headline.split}`)}
                </Typography.Text>
                <NotEvaluatedTag headline={headline} />
              </span>
            );
          },
        },
        { title: t(names.secondaryKey), key: "f1", render: (_, v) => percent(headlineMetric(v)?.secondary ?? null) },
        {
          title: t("models.pretrained"),
          dataIndex: "pretrained",
          render: (pretrained: boolean) =>
            pretrained ? <Tag color="blue">{t("models.pretrainedYes")}</Tag> : <Tag color="warning">{t("models.fromScratch")}</Tag>,
        },
        { title: t("models.size"), dataIndex: "model_size", render: (size: number) => formatBytes(size) },
        { title: t("common.createdAt"), dataIndex: "created_at", render: (value: string) => formatDate(value) },
      ]}
    />
  );
}

export function ModelsPage() {
  const { t } = useTranslation();
  const { projectId = "" } = useParams();
  const models = useModels(projectId);
  if (models.isError) return <ErrorAlert error={models.error} onRetry={() => void models.refetch()} />;
  if (!models.data) return <Skeleton active />;
  return (
    <Space orientation="vertical" size="middle" style={{ width: "100%" }}>
      <Typography.Title level={3} style={{ margin: 0 }}>
        {t("nav.models")}
      </Typography.Title>
      {models.data.length === 0 && <Empty description={t("models.empty")} />}
      {models.data.map((model) => (
        <Card
          key={model.id}
          size="small"
          data-testid="model-card"
          title={
            <Space>
              {model.name}
              <Tag>{t(`datasets.taskTypes.${model.task_type as "image_classification"}`, { defaultValue: model.task_type })}</Tag>
              <Typography.Text type="secondary">{t("models.versionCount", { count: model.version_count })}</Typography.Text>
            </Space>
          }
        >
          {model.description && <Typography.Paragraph type="secondary">{model.description}</Typography.Paragraph>}
          <ModelVersionsTable projectId={projectId} model={model} />
        </Card>
      ))}
    </Space>
  );
}
