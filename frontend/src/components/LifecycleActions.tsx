// Rename, Archive / Unarchive and Delete of a project or a dataset. Delete asks for the name to be
// typed (as GitHub does) and shows the server's refusal (409 delete_blocked: what to stop first).
import { DeleteOutlined, EditOutlined, InboxOutlined, UndoOutlined } from "@ant-design/icons";
import { Alert, App, Button, Form, Input, Modal, Space, Typography } from "antd";
import { useState } from "react";
import { useTranslation } from "react-i18next";

import { useErrorText, useReportError } from "./errors";

export type LifecycleKind = "project" | "dataset";

/**
 * The delete confirmation: the Delete button stays disabled until `name` is typed exactly; a
 * refusal from the server (`onConfirm` rejects) is shown in the dialog, which stays open.
 */
export function DeleteConfirmDialog({
  open,
  kind,
  name,
  onConfirm,
  onClose,
}: {
  open: boolean;
  kind: LifecycleKind;
  name: string;
  onConfirm: () => Promise<unknown>;
  onClose: () => void;
}) {
  const { t } = useTranslation();
  const errorText = useErrorText();
  const [typed, setTyped] = useState("");
  const [error, setError] = useState<unknown>(null);
  const [pending, setPending] = useState(false);

  const close = () => {
    setTyped("");
    setError(null);
    onClose();
  };
  const confirm = async () => {
    setPending(true);
    setError(null);
    try {
      await onConfirm();
      setTyped("");
    } catch (failure) {
      setError(failure);
    } finally {
      setPending(false);
    }
  };

  return (
    <Modal
      open={open}
      title={t(`lifecycle.${kind}.deleteTitle`, { name })}
      okText={t("lifecycle.delete")}
      okButtonProps={{ danger: true, disabled: typed !== name }}
      cancelText={t("common.cancel")}
      confirmLoading={pending}
      onOk={() => void confirm()}
      onCancel={close}
      destroyOnHidden
    >
      <Space orientation="vertical" style={{ width: "100%" }}>
        <Typography.Paragraph>{t(`lifecycle.${kind}.deleteWarning`)}</Typography.Paragraph>
        <Typography.Text>
          {t("lifecycle.typeToConfirm")} <Typography.Text code>{name}</Typography.Text>
        </Typography.Text>
        <Input
          aria-label={t("lifecycle.confirmName")}
          value={typed}
          onChange={(e) => setTyped(e.target.value)}
          autoComplete="off"
        />
        {error !== null && <Alert type="error" showIcon role="alert" title={t("lifecycle.refused")} description={errorText(error)} />}
      </Space>
    </Modal>
  );
}

/** The buttons of a project's or a dataset's page; `canManage` false hides them. */
export function LifecycleActions({
  kind,
  name,
  archived,
  canManage,
  update,
  remove,
  onDeleted,
}: {
  kind: LifecycleKind;
  name: string;
  archived: boolean;
  canManage: boolean;
  update: (body: { name?: string; archived?: boolean }) => Promise<unknown>;
  remove: () => Promise<unknown>;
  onDeleted: () => void;
}) {
  const { t } = useTranslation();
  const { message } = App.useApp();
  const reportError = useReportError();
  const [renaming, setRenaming] = useState(false);
  const [deleting, setDeleting] = useState(false);
  const [form] = Form.useForm<{ name: string }>();
  if (!canManage) return null;

  const rename = async (values: { name: string }) => {
    try {
      await update({ name: values.name });
      void message.success(t("lifecycle.renamed", { name: values.name.trim() }));
      setRenaming(false);
    } catch (error) {
      reportError(error, form);
    }
  };
  const toggleArchive = async () => {
    try {
      await update({ archived: !archived });
      void message.success(t(archived ? "lifecycle.unarchived" : "lifecycle.archived", { name }));
    } catch (error) {
      reportError(error);
    }
  };

  return (
    <Space wrap>
      <Button icon={<EditOutlined />} onClick={() => setRenaming(true)}>
        {t("lifecycle.rename")}
      </Button>
      <Button icon={archived ? <UndoOutlined /> : <InboxOutlined />} onClick={() => void toggleArchive()}>
        {t(archived ? "lifecycle.unarchive" : "lifecycle.archive")}
      </Button>
      <Button danger icon={<DeleteOutlined />} onClick={() => setDeleting(true)}>
        {t("lifecycle.delete")}
      </Button>
      <Modal
        open={renaming}
        title={t("lifecycle.renameTitle")}
        okText={t("lifecycle.rename")}
        cancelText={t("common.cancel")}
        onOk={() => form.submit()}
        onCancel={() => setRenaming(false)}
        destroyOnHidden
      >
        <Form form={form} layout="vertical" initialValues={{ name }} onFinish={(v) => void rename(v)} preserve={false}>
          <Form.Item name="name" label={t("common.name")} rules={[{ required: true, message: t("common.required") }]}>
            <Input autoFocus maxLength={200} />
          </Form.Item>
        </Form>
      </Modal>
      <DeleteConfirmDialog
        open={deleting}
        kind={kind}
        name={name}
        onClose={() => setDeleting(false)}
        onConfirm={async () => {
          await remove();
          setDeleting(false);
          void message.success(t("lifecycle.deleted", { name }));
          onDeleted();
        }}
      />
    </Space>
  );
}
