import { PlusOutlined } from "@ant-design/icons";
import { Alert, App, Breadcrumb, Button, Input, Skeleton, Space, Tabs, Tag, Typography } from "antd";
import { useState } from "react";
import { useTranslation } from "react-i18next";
import { Link, useNavigate, useParams, useSearchParams } from "react-router";

import { useAddClassLabels, useDataset, useDeleteDataset, useUpdateDataset } from "../../api/queries/datasets";
import { useCanEdit } from "../../api/queries/projects";
import { ErrorAlert, useReportError } from "../../components/errors";
import { LifecycleActions } from "../../components/LifecycleActions";
import { EditorOnly } from "../../components/ReadOnly";
import { PrelabelPanel } from "./PrelabelPanel";
import { SampleGallery } from "./SampleGallery";
import { TextSampleList } from "./TextSampleList";
import { UploadPanel } from "./UploadPanel";
import { VersionsPanel } from "./VersionsPanel";

const TABS = ["samples", "upload", "versions"] as const;
type Tab = (typeof TABS)[number];

export function DatasetPage() {
  const { t } = useTranslation();
  const { projectId = "", datasetId = "" } = useParams();
  const [params, setParams] = useSearchParams();
  const dataset = useDataset(projectId, datasetId);
  const update = useUpdateDataset(projectId, datasetId);
  const remove = useDeleteDataset(projectId, datasetId);
  const canEdit = useCanEdit(projectId);
  const navigate = useNavigate();
  const tab: Tab = (TABS as readonly string[]).includes(params.get("tab") ?? "") ? (params.get("tab") as Tab) : "samples";

  if (dataset.isError) return <ErrorAlert error={dataset.error} onRetry={() => void dataset.refetch()} />;
  if (!dataset.data) return <Skeleton active />;
  const d = dataset.data;

  return (
    <Space orientation="vertical" size="small" style={{ width: "100%" }}>
      <Breadcrumb
        items={[{ title: <Link to={`/projects/${projectId}/datasets`}>{t("datasets.title")}</Link> }, { title: d.name }]}
      />
      <Space align="baseline" wrap>
        <Typography.Title level={3} style={{ margin: 0 }}>
          {d.name}
        </Typography.Title>
        <Tag>{t(`datasets.taskTypes.${d.task_type}`)}</Tag>
        <Typography.Text type="secondary">{t("gallery.total", { count: d.sample_count ?? 0 })}</Typography.Text>
        {d.archived && <Tag color="orange">{t("lifecycle.archivedTag")}</Tag>}
        <LifecycleActions
          kind="dataset"
          name={d.name}
          archived={d.archived}
          canManage={canEdit}
          update={(body) => update.mutateAsync(body)}
          remove={() => remove.mutateAsync()}
          onDeleted={() => void navigate(`/projects/${projectId}/datasets`)}
        />
      </Space>
      {d.archived && <Alert type="warning" showIcon title={t("lifecycle.archivedNotice")} />}
      <PrelabelPanel projectId={projectId} dataset={d}>
        <ClassLabels projectId={projectId} datasetId={datasetId} names={d.class_labels.map((c) => c.name)} />
      </PrelabelPanel>
      <Tabs
        activeKey={tab}
        onChange={(key) => setParams((p) => ({ ...Object.fromEntries(p), tab: key }), { replace: true })}
        items={[
          {
            key: "samples",
            label: t("datasets.tabs.samples"),
            // texts are a list to read and label, not a gallery of thumbnails
            children: d.task_type === "text_classification" ? <TextSampleList projectId={projectId} dataset={d} /> : <SampleGallery projectId={projectId} dataset={d} />,
          },
          { key: "upload", label: t("datasets.tabs.upload"), children: <UploadPanel projectId={projectId} datasetId={datasetId} /> },
          { key: "versions", label: t("datasets.tabs.versions"), children: <VersionsPanel projectId={projectId} datasetId={datasetId} /> },
        ]}
      />
    </Space>
  );
}

function ClassLabels({ projectId, datasetId, names }: { projectId: string; datasetId: string; names: string[] }) {
  const { t } = useTranslation();
  const { message } = App.useApp();
  const add = useAddClassLabels(projectId, datasetId);
  const reportError = useReportError();
  const [draft, setDraft] = useState("");
  const canEdit = useCanEdit(projectId);

  const submit = () => {
    const name = draft.trim();
    if (!name) return;
    if (names.includes(name)) {
      void message.info(t("datasets.classExists", { name }));
      return;
    }
    add.mutate([name], { onSuccess: () => setDraft(""), onError: (error) => reportError(error) });
  };

  return (
    <Space wrap size={[4, 4]}>
      <Typography.Text type="secondary">{t("datasets.classes")}:</Typography.Text>
      {names.length === 0 && <Typography.Text type="secondary">{t("datasets.noClasses")}</Typography.Text>}
      {names.map((name) => (
        // a long class name (up to 200 characters) is cut with an ellipsis, whole on hover
        <Tag key={name} color="blue" title={name} style={{ maxWidth: 240, overflow: "hidden", textOverflow: "ellipsis", whiteSpace: "nowrap", verticalAlign: "middle" }}>
          {name}
        </Tag>
      ))}
      <EditorOnly canEdit={canEdit}>
      <Space.Compact size="small">
        <Input
          disabled={!canEdit}
          size="small"
          value={draft}
          onChange={(e) => setDraft(e.target.value)}
          onPressEnter={submit}
          placeholder={t("datasets.addClassPlaceholder")}
          aria-label={t("datasets.addClass")}
          style={{ width: 160 }}
          maxLength={200}
        />
        <Button size="small" icon={<PlusOutlined />} onClick={submit} loading={add.isPending} disabled={!canEdit} aria-label={t("datasets.addClass")} />
      </Space.Compact>
      </EditorOnly>
    </Space>
  );
}
