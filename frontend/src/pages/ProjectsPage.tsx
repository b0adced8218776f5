import { PlusOutlined } from "@ant-design/icons";
import { App, Button, Empty, Switch, Tag, Form, Input, Modal, Space, Table, Typography } from "antd";
import { useState } from "react";
import { useTranslation } from "react-i18next";
import { Link, useNavigate } from "react-router";

import type { Schemas } from "../api/client";
import { useArchivedProjects, useCreateProject, useProjects } from "../api/queries/projects";
import { ErrorAlert, useReportError } from "../components/errors";
import { formatDate } from "../format";

export function ProjectsPage() {
  const { t } = useTranslation();
  const [showArchived, setShowArchived] = useState(false);
  const active = useProjects();
  const archived = useArchivedProjects(showArchived);
  const projects = showArchived ? archived : active;
  const [creating, setCreating] = useState(false);

  return (
    <Space orientation="vertical" size="middle" style={{ width: "100%" }}>
      <Space style={{ width: "100%", justifyContent: "space-between" }}>
        <Typography.Title level={3} style={{ margin: 0 }}>
          {t("projects.title")}
        </Typography.Title>
        <Space>
          <Switch checked={showArchived} onChange={setShowArchived} aria-label={t("lifecycle.showArchived")} />
          <Typography.Text>{t("lifecycle.showArchived")}</Typography.Text>
        </Space>
        <Button type="primary" icon={<PlusOutlined />} onClick={() => setCreating(true)}>
          {t("projects.create")}
        </Button>
      </Space>
      {projects.isError ? (
        <ErrorAlert error={projects.error} onRetry={() => void projects.refetch()} />
      ) : (
        <Table<Schemas["Project"]>
          rowKey="id"
          loading={projects.isPending}
          dataSource={projects.data}
          pagination={false}
          locale={{ emptyText: <Empty description={t("projects.empty")} /> }}
          columns={[
            {
              title: t("common.name"),
              dataIndex: "name",
              render: (name: string, p) => (
                <Space size="small">
                  <Link to={`/projects/${p.id}/datasets`}>{name}</Link>
                  {p.archived && <Tag color="orange">{t("lifecycle.archivedTag")}</Tag>}
                </Space>
              ),
            },
            { title: t("common.description"), dataIndex: "description" },
            { title: t("common.createdAt"), dataIndex: "created_at", render: formatDate, width: 200 },
          ]}
        />
      )}
      <CreateProjectModal open={creating} onClose={() => setCreating(false)} />
    </Space>
  );
}

function CreateProjectModal({ open, onClose }: { open: boolean; onClose: () => void }) {
  const { t } = useTranslation();
  const { message } = App.useApp();
  const [form] = Form.useForm<Schemas["ProjectInputRequest"]>();
  const create = useCreateProject();
  const reportError = useReportError();
  const navigate = useNavigate();

  const onFinish = (values: Schemas["ProjectInputRequest"]) =>
    create.mutate(values, {
      onSuccess: (project) => {
        void message.success(t("projects.created", { name: project.name }));
        form.resetFields();
        onClose();
        void navigate(`/projects/${project.id}/datasets`);
      },
      onError: (error) => reportError(error, form),
    });

  return (
    <Modal
      open={open}
      title={t("projects.createTitle")}
      okText={t("common.create")}
      cancelText={t("common.cancel")}
      confirmLoading={create.isPending}
      onOk={() => form.submit()}
      onCancel={onClose}
      destroyOnHidden
    >
      <Form form={form} layout="vertical" onFinish={onFinish} preserve={false}>
        <Form.Item name="name" label={t("common.name")} rules={[{ required: true, message: t("common.required") }]}>
          <Input autoFocus maxLength={200} />
        </Form.Item>
        <Form.Item name="description" label={t("common.description")}>
          <Input.TextArea rows={3} />
        </Form.Item>
      </Form>
    </Modal>
  );
}
