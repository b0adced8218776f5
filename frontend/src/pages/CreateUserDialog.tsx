// Create a user account from the members page: staff, or the project's owner (who creates users
// only into this project). Added to the project in the same request (project_id, role). Without a
// password the server generates a one-time one, shown here once.
import { Alert, Button, Checkbox, Form, Input, Modal, Select, Typography } from "antd";
import { useState } from "react";
import { useTranslation } from "react-i18next";

import type { Schemas } from "../api/client";
import { useCreateUser, type CreatedUser } from "../api/queries/accounts";
import { ROLES, type Role } from "../api/queries/projects";
import { useReportError } from "../components/errors";

type Values = Schemas["UserCreateInputRequest"] & {
  add: boolean;
  role: Role;
};

/**
 * `canAdd`: the user may add members (an owner); then the dialog offers "add to this project" and
 * the account is created in it (`projectId`), with the role chosen. `mustAdd`: the user is not
 * staff, so the account can only be made into this project (the box is checked and fixed).
 * `onCreated` runs once the account exists.
 */
export function CreateUserDialog({
  open,
  onClose,
  projectId,
  canAdd,
  mustAdd = false,
  onCreated,
}: {
  open: boolean;
  onClose: () => void;
  projectId: string;
  canAdd: boolean;
  mustAdd?: boolean;
  onCreated?: (user: CreatedUser, role: Role | null) => void;
}) {
  const { t } = useTranslation();
  const createUser = useCreateUser();
  const reportError = useReportError();
  const [form] = Form.useForm<Values>();
  const [created, setCreated] = useState<CreatedUser | null>(null);

  const close = () => {
    setCreated(null);
    form.resetFields();
    onClose();
  };

  const submit = ({ add, role, ...body }: Values) => {
    const into = canAdd && (add || mustAdd);
    createUser.mutate(
      {
        username: body.username,
        email: body.email ?? "",
        password: body.password ?? "",
        ...(into ? { project_id: projectId, role } : {}),
      },
      {
        onSuccess: (user) => {
          setCreated(user);
          onCreated?.(user, into ? role : null);
        },
        onError: (error) => reportError(error, form),
      },
    );
  };

  return (
    <Modal
      open={open}
      title={t("users.createTitle")}
      onCancel={close}
      destroyOnHidden
      footer={
        created ? (
          <Button onClick={close}>{t("common.close")}</Button>
        ) : (
          <>
            <Button onClick={close}>{t("common.cancel")}</Button>
            <Button type="primary" loading={createUser.isPending} onClick={() => form.submit()}>
              {t("users.create")}
            </Button>
          </>
        )
      }
    >
      {created ? (
        <div data-testid="created-user">
          <Alert type="success" showIcon title={t("users.created", { username: created.username })} style={{ marginBottom: 12 }} />
          {created.generated_password && (
            <>
              <Typography.Paragraph>{t("users.generatedPassword")}</Typography.Paragraph>
              <Typography.Paragraph data-testid="generated-password" copyable={{ text: created.generated_password }} code>
                {created.generated_password}
              </Typography.Paragraph>
            </>
          )}
        </div>
      ) : (
        <Form form={form} name="create-user" layout="vertical" onFinish={submit} initialValues={{ add: canAdd, role: "editor" }} aria-label={t("users.createTitle")}>
          <Form.Item name="username" label={t("auth.username")} rules={[{ required: true, message: t("common.required") }]}>
            <Input autoComplete="off" maxLength={150} />
          </Form.Item>
          <Form.Item name="email" label={t("users.email")}>
            <Input type="email" autoComplete="off" />
          </Form.Item>
          <Form.Item name="password" label={t("auth.password")} extra={t("users.passwordHint")}>
            <Input.Password autoComplete="new-password" />
          </Form.Item>
          {canAdd && (
            <Form.Item label={t("users.addToProject")} style={{ marginBottom: 0 }}>
              <Form.Item name="add" valuePropName="checked" noStyle>
                <Checkbox aria-label={t("users.addToProject")} disabled={mustAdd} />
              </Form.Item>{" "}
              <Form.Item name="role" noStyle>
                <Select<Role> aria-label={t("members.role")} style={{ width: 140, marginLeft: 8 }} options={ROLES.map((role) => ({ value: role, label: t(`members.roles.${role}`) }))} />
              </Form.Item>
            </Form.Item>
          )}
        </Form>
      )}
    </Modal>
  );
}
