// One dataset version: its numbers (train, validation and test counts), its class balance per
// split as a bar chart, its flags (class imbalance, no test split, ...) in words, and a download
// of it as a zip in the formats its task has (COCO, Pascal VOC, YOLO; folders per class).
import type { TFunction } from "i18next";
import { DownloadOutlined, ExperimentOutlined } from "@ant-design/icons";
import { Alert, Breadcrumb, Button, Card, Descriptions, Dropdown, Skeleton, Space, Statistic, Tag, Typography } from "antd";
import { useMemo } from "react";
import { useTranslation } from "react-i18next";
import { Link, useNavigate, useParams } from "react-router";

import { useDataset } from "../../api/queries/datasets";
import { flagsOf, statsOf, useDatasetVersion } from "../../api/queries/versions";
import { Chart } from "../../components/charts/Chart";
import { ErrorAlert } from "../../components/errors";
import { formatDate } from "../../format";
import { exportFormatsFor, exportUrl } from "./detectionReport";
import { flagText } from "./flagText";
import { classBalance } from "./versionChart";

export const SPLIT_COLOURS = { train: "#1677ff", val: "#fa8c16", test: "#52c41a" } as const;

function fractionsText(value: unknown, t: TFunction): string {
  const f = (value && typeof value === "object" ? value : {}) as { val?: number; test?: number };
  const pct = (x: number | undefined) => `${Math.round(100 * (x ?? 0))}%`;
  return t("versions.fractionsValue", { val: pct(f.val), test: pct(f.test) });
}

export function DatasetVersionPage() {
  const { t } = useTranslation();
  const navigate = useNavigate();
  const { projectId = "", datasetId = "", versionId = "" } = useParams();
  const dataset = useDataset(projectId, datasetId);
  const version = useDatasetVersion(projectId, versionId);

  const v = version.data;
  const stats = useMemo(() => (v ? statsOf(v) : null), [v]);
  const option = useMemo(() => {
    if (!v || !stats) return null;
    const { classes, series } = classBalance(stats, v.labels);
    return {
      tooltip: { trigger: "axis", axisPointer: { type: "shadow" } },
      legend: { top: 0 },
      grid: { left: 48, right: 16, top: 36, bottom: 64 },
      xAxis: { type: "category", data: classes, axisLabel: { interval: 0, rotate: classes.length > 12 ? 45 : 0 } },
      yAxis: { type: "value", name: t("versions.samples"), minInterval: 1 },
      series: series.map((s) => ({
        name: t(`versions.splits.${s.split}`),
        type: "bar",
        stack: "samples",
        data: s.counts,
        itemStyle: { color: SPLIT_COLOURS[s.split] },
      })),
    };
  }, [v, stats, t]);

  if (version.isError) return <ErrorAlert error={version.error} onRetry={() => void version.refetch()} />;
  if (!v || !stats || !option) return <Skeleton active />;
  const flags = flagsOf(v);

  return (
    <Space orientation="vertical" size="middle" style={{ width: "100%" }}>
      <Breadcrumb
        items={[
          { title: <Link to={`/projects/${projectId}/datasets`}>{t("datasets.title")}</Link> },
          {
            title: (
              <Link to={`/projects/${projectId}/datasets/${datasetId}?tab=versions`}>{dataset.data?.name ?? "…"}</Link>
            ),
          },
          { title: t("versions.name", { number: v.number }) },
        ]}
      />
      <Space style={{ width: "100%", justifyContent: "space-between" }} wrap>
        <Space align="baseline">
          <Typography.Title level={3} style={{ margin: 0 }}>
            {t("versions.title", { name: dataset.data?.name ?? "", number: v.number })}
          </Typography.Title>
          <Tag>{t(`datasets.taskTypes.${v.task_type as "image_classification"}`, { defaultValue: v.task_type })}</Tag>
        </Space>
        <Space>
          <ExportMenu projectId={projectId} versionId={v.id} taskType={v.task_type} />
          <Button
            type="primary"
            icon={<ExperimentOutlined />}
            onClick={() => void navigate(`/projects/${projectId}/training?version=${v.id}`)}
          >
            {t("versions.train")}
          </Button>
        </Space>
      </Space>
      {flags.length > 0 && (
        <Alert
          type="warning"
          showIcon
          data-testid="version-flags"
          title={t("versions.flagsTitle", { count: flags.length })}
          description={
            <ul style={{ margin: 0, paddingInlineStart: 20 }}>
              {flags.map((f, i) => (
                <li key={i} data-code={f.code}>
                  {flagText(t, f, v.labels)}
                </li>
              ))}
            </ul>
          }
        />
      )}
      <Space size="large" wrap>
        <Statistic title={t("versions.samples")} value={stats.samples} />
        <Statistic title={t("versions.classes")} value={v.labels.length} />
        <Statistic title={t("versions.splits.train")} value={stats.splits.train ?? 0} />
        <Statistic title={t("versions.splits.val")} value={stats.splits.val ?? 0} />
        {/* always shown: with no test split the report is computed on validation, which chose the model */}
        <Statistic
          title={t("versions.splits.test")}
          value={stats.splits.test ?? 0}
          suffix={(stats.splits.test ?? 0) === 0 ? <Typography.Text type="secondary" style={{ fontSize: 14 }}>{t("versions.noTestSplit")}</Typography.Text> : undefined}
        />
      </Space>
      <Card size="small" title={t("versions.balance")}>
        <Chart option={option} height={320} ariaLabel={t("versions.balance")} />
      </Card>
      <Descriptions
        size="small"
        bordered
        column={2}
        items={[
          { key: "seed", label: t("versions.seed"), children: v.seed },
          {
            key: "fractions",
            label: t("versions.fractions"),
            children: fractionsText(v.split_fractions, t),
          },
          { key: "digest", label: t("versions.digest"), children: <Typography.Text code copyable>{v.digest}</Typography.Text> },
          { key: "created", label: t("common.createdAt"), children: formatDate(v.created_at) },
          ...(v.note ? [{ key: "note", label: t("versions.note"), children: v.note }] : []),
        ]}
      />
    </Space>
  );
}

/** Download the version as a zip: one menu entry per format its task can be written in. The
 * browser follows the link itself (session cookie), so a large zip streams to disk. */
export function ExportMenu({ projectId, versionId, taskType }: { projectId: string; versionId: string; taskType: string }) {
  const { t } = useTranslation();
  const items = exportFormatsFor(taskType).map((format) => ({
    key: format,
    label: (
      <a href={exportUrl(projectId, versionId, format)} download data-format={format}>
        {t(`versions.exportFormats.${format}`)}
      </a>
    ),
  }));
  return (
    <Dropdown menu={{ items }} trigger={["click"]}>
      <Button icon={<DownloadOutlined />} data-testid="version-export">
        {t("versions.export")}
      </Button>
    </Dropdown>
  );
}
