import { PlusOutlined } from "@ant-design/icons";
import { App, Button, Empty, Switch, Tag, Form, Input, Modal, Select, Space, Table, Typography } from "antd";
import { useState } from "react";
import { useTranslation } from "react-i18next";
import { Link, useNavigate, useParams } from "react-router";

import type { Schemas } from "../../api/client";
import { TASK_TYPES, useArchivedDatasets, useCreateDataset, useDatasets, type Dataset, type TaskType } from "../../api/queries/datasets";
import { ErrorAlert, useReportError } from "../../components/errors";
import { formatDate } from "../../format";

export function DatasetListPage() {
  const { t } = useTranslation();
  const { projectId = "" } = useParams();
  const [showArchived, setShowArchived] = useState(false);
  const active = useDatasets(projectId);
  const archived = useArchivedDatasets(projectId, showArchived);
  const datasets = showArchived ? archived : active;
  const [creating, setCreating] = useState(false);

  return (
    <Space orientation="vertical" size="middle" style={{ width: "100%" }}>
      <Space style={{ width: "100%", justifyContent: "space-between" }}>
        <Typography.Title level={3} style={{ margin: 0 }}>
          {t("datasets.title")}
        </Typography.Title>
        <Space>
          <Switch checked={showArchived} onChange={setShowArchived} aria-label={t("lifecycle.showArchived")} />
          <Typography.Text>{t("lifecycle.showArchived")}</Typography.Text>
        </Space>
        <Button type="primary" icon={<PlusOutlined />} onClick={() => setCreating(true)}>
          {t("datasets.create")}
        </Button>
      </Space>
      {datasets.isError ? (
        <ErrorAlert error={datasets.error} onRetry={() => void datasets.refetch()} />
      ) : (
        <Table<Dataset>
          rowKey="id"
          loading={datasets.isPending}
          dataSource={datasets.data}
          pagination={false}
          locale={{ emptyText: <Empty description={t("datasets.empty")} /> }}
          columns={[
            {
              title: t("common.name"),
              dataIndex: "name",
              render: (name: string, d) => (
                <Space size="small">
                  <Link to={`/projects/${projectId}/datasets/${d.id}`}>{name}</Link>
                  {d.archived && <Tag color="orange">{t("lifecycle.archivedTag")}</Tag>}
                </Space>
              ),
            },
            { title: t("datasets.taskType"), dataIndex: "task_type", render: (type: TaskType) => t(`datasets.taskTypes.${type}`) },
            { title: t("datasets.samples"), dataIndex: "sample_count", align: "right", width: 120 },
            { title: t("datasets.classes"), key: "classes", align: "right", width: 120, render: (_, d) => d.class_labels.length },
            { title: t("common.createdAt"), dataIndex: "created_at", render: formatDate, width: 200 },
          ]}
        />
      )}
      <CreateDatasetModal projectId={projectId} open={creating} onClose={() => setCreating(false)} />
    </Space>
  );
}

function CreateDatasetModal({ projectId, open, onClose }: { projectId: string; open: boolean; onClose: () => void }) {
  const { t } = useTranslation();
  const { message } = App.useApp();
  const [form] = Form.useForm<Schemas["DatasetInputRequest"]>();
  const create = useCreateDataset(projectId);
  const reportError = useReportError();
  const navigate = useNavigate();

  const onFinish = (values: Schemas["DatasetInputRequest"]) =>
    create.mutate(values, {
      onSuccess: (dataset) => {
        void message.success(t("datasets.created", { name: dataset.name }));
        onClose();
        void navigate(`/projects/${projectId}/datasets/${dataset.id}?tab=upload`);
      },
      onError: (error) => reportError(error, form),
    });

  return (
    <Modal
      open={open}
      title={t("datasets.createTitle")}
      okText={t("common.create")}
      cancelText={t("common.cancel")}
      confirmLoading={create.isPending}
      onOk={() => form.submit()}
      onCancel={onClose}
      destroyOnHidden
    >
      <Form
        form={form}
        layout="vertical"
        onFinish={onFinish}
        preserve={false}
        initialValues={{ task_type: "image_classification", labels: [] }}
      >
        <Form.Item name="name" label={t("common.name")} rules={[{ required: true, message: t("common.required") }]}>
          <Input autoFocus maxLength={200} />
        </Form.Item>
        <Form.Item name="task_type" label={t("datasets.taskType")}>
          <Select options={TASK_TYPES.map((type) => ({ value: type, label: t(`datasets.taskTypes.${type}`) }))} />
        </Form.Item>
        <Form.Item name="labels" label={t("datasets.classes")} extra={t("datasets.classesHint")}>
          <Select mode="tags" open={false} tokenSeparators={[","]} />
        </Form.Item>
        <Form.Item name="description" label={t("common.description")}>
          <Input.TextArea rows={2} />
        </Form.Item>
      </Form>
    </Modal>
  );
}
