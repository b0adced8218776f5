// One model version: metrics, lineage (dataset version, training job), files and the package.
// Also "Try it" (one image through the version), deploying it to devices with their live state,
// and compressing it for a device (or, for a compressed version, where it came from).
import { DownloadOutlined } from "@ant-design/icons";
import { Breadcrumb, Button, Descriptions, Skeleton, Space, Statistic, Table, Tag, Typography } from "antd";
import { useTranslation } from "react-i18next";
import { Link, useParams } from "react-router";

import { useModelVersion } from "../../api/queries/training";
import { wonOnValidationText } from "../training/jobText";
import { isTextTask } from "../training/textJob";
import { DatasetVersionLink } from "../../components/DatasetVersionLink";
import { ErrorAlert } from "../../components/errors";
import { NotEvaluatedTag } from "../../components/NotEvaluatedTag";
import { formatBytes, formatDate } from "../../format";
import { CompressCard, CompressedFrom } from "./CompressPanel";
import { DeployButton, DeploymentsCard } from "./DeployPanel";
import { defaultScoreThreshold } from "./detections";
import { headlineMetric, metricNames, percent } from "./headlineMetric";
import { OfflineBundleButton } from "./OfflineBundle";
import { TryItCard, textMaxChars } from "./TryItCard";

interface FileRow {
  name: string;
  size?: number;
  sha256?: string;
}

export function ModelVersionPage() {
  const { t } = useTranslation();
  const { projectId = "", versionId = "" } = useParams();
  const version = useModelVersion(projectId, versionId);
  if (version.isError) return <ErrorAlert error={version.error} onRetry={() => void version.refetch()} />;
  if (!version.data) return <Skeleton active />;
  const v = version.data;
  const files: FileRow[] = Object.entries(v.files).map(([name, info]) => ({
    name,
    ...(info && typeof info === "object" ? (info as Omit<FileRow, "name">) : {}),
  }));
  // the figures of the split the report was computed on: test when the version had one (never
  // used to choose the model), else validation; the split is named beside them, and the classes
  // it held no image of. A classifier's accuracy and macro-F1, a detector's mAP@0.5 and
  // mAP@0.5:0.95.
  const headline = headlineMetric(v);
  const names = metricNames(v.task_type);
  const split = t(`training.splitShort.${headline?.split ?? "val"}`);
  // a text model: which family won on validation (the metrics mirror the job's candidates)
  const won = isTextTask(v.task_type) ? wonOnValidationText(t, undefined, v.metrics) : null;
  // "from scratch" warns that no pretrained weights were found; the n-gram text models never
  // have any (only the sentence encoder starts pretrained), so it would warn about nothing
  const scratchWarning = !v.pretrained && !isTextTask(v.task_type);

  return (
    <Space orientation="vertical" size="middle" style={{ width: "100%" }}>
      <Breadcrumb items={[{ title: <Link to={`/projects/${projectId}/models`}>{t("nav.models")}</Link> }, { title: `${v.model_name} v${v.version}` }]} />
      <Space style={{ width: "100%", justifyContent: "space-between" }} wrap>
        <Space align="baseline">
          <Typography.Title level={3} style={{ margin: 0 }}>
            {t("models.versionTitle", { name: v.model_name, version: v.version })}
          </Typography.Title>
          <Tag>{t(`datasets.taskTypes.${v.task_type as "image_classification"}`, { defaultValue: v.task_type })}</Tag>
          {scratchWarning && <Tag color="warning">{t("models.fromScratch")}</Tag>}
        </Space>
        <Space>
          <DeployButton projectId={projectId} version={v} />
          <Button icon={<DownloadOutlined />} href={`/api/v1/projects/${projectId}/model-versions/${v.id}/package/`}>
            {t("models.download")}
          </Button>
          <OfflineBundleButton projectId={projectId} version={v} />
        </Space>
      </Space>
      <Space size="large" wrap>
        {headline && (
          <Statistic title={`${t(names.nameKey)} (${split})`} value={percent(headline.value)} data-testid="headline-metric" />
        )}
        {headline && headline.secondary !== null && (
          <Statistic title={`${t(names.secondaryKey)} (${split})`} value={percent(headline.secondary)} data-testid="secondary-metric" />
        )}
        {headline && <NotEvaluatedTag headline={headline} />}
        {won && <Statistic title={t("training.text.family")} value={won} data-testid="text-winner" />}
        <Statistic title={t("models.size")} value={formatBytes(v.model_size)} />
        <Statistic title={t("versions.classes")} value={v.labels.length} />
      </Space>
      <CompressedFrom projectId={projectId} version={v} />
      <TryItCard
        projectId={projectId}
        versionId={v.id}
        task={v.task_type}
        scoreThreshold={defaultScoreThreshold(v.manifest)}
        maxChars={textMaxChars(v.manifest)}
      />
      <DeploymentsCard projectId={projectId} versionId={v.id} />
      <CompressCard projectId={projectId} version={v} />
      <Descriptions
        size="small"
        bordered
        column={1}
        items={[
          {
            key: "job",
            label: t("models.trainingJob"),
            children: v.training_job_id ? (
              <Space>
                <Link to={`/projects/${projectId}/training/${v.training_job_id}`}>{v.training_job_id.slice(0, 8)}</Link>
                <Link to={`/projects/${projectId}/training/${v.training_job_id}/report`}>{t("training.openReport")}</Link>
              </Space>
            ) : (
              "—"
            ),
          },
          {
            key: "dataset",
            label: t("training.version"),
            children: <DatasetVersionLink projectId={projectId} version={v.dataset_version} />,
          },
          { key: "labels", label: t("versions.classes"), children: v.labels.join(", ") },
          { key: "sha", label: "SHA-256", children: <Typography.Text code copyable>{v.model_sha256}</Typography.Text> },
          { key: "created", label: t("common.createdAt"), children: formatDate(v.created_at) },
        ]}
      />
      <Table<FileRow>
        rowKey="name"
        size="small"
        pagination={false}
        dataSource={files}
        columns={[
          {
            title: t("models.file"),
            dataIndex: "name",
            render: (name: string) => <a href={`/api/v1/projects/${projectId}/model-versions/${v.id}/files/${name}`}>{name}</a>,
          },
          { title: t("models.size"), dataIndex: "size", render: (size?: number) => (typeof size === "number" ? formatBytes(size) : "") },
          { title: "SHA-256", dataIndex: "sha256", ellipsis: true },
        ]}
      />
    </Space>
  );
}
