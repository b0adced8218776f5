import { PlusOutlined, UserAddOutlined } from "@ant-design/icons";
import { Alert, App, Button, Form, Input, Popconfirm, Select, Space, Table, Typography } from "antd";
import { useState } from "react";
import { useTranslation } from "react-i18next";
import { useNavigate, useParams } from "react-router";

import type { Schemas } from "../api/client";
import { useMe } from "../api/queries/auth";
import {
  ROLES,
  useDeleteProject,
  useMembers,
  useProject,
  useRemoveMember,
  useSetMember,
  useUpdateProject,
  type Membership,
  type Role,
} from "../api/queries/projects";
import { ErrorAlert, useReportError } from "../components/errors";
import { LifecycleActions } from "../components/LifecycleActions";
import { CreateUserDialog } from "./CreateUserDialog";

/** How the owner names the person to invite; the field the server names in an error is the same. */
type InviteBy = "username" | "email";
interface InviteValues {
  by: InviteBy;
  username?: string;
  email?: string;
  role: Role;
}

export function MembersPage() {
  const { t } = useTranslation();
  const { projectId = "" } = useParams();
  const { message } = App.useApp();
  const me = useMe();
  const members = useMembers(projectId);
  const setMember = useSetMember(projectId);
  const removeMember = useRemoveMember(projectId);
  const reportError = useReportError();
  const [form] = Form.useForm<InviteValues>();
  const by = Form.useWatch("by", form) ?? "username";
  const [creating, setCreating] = useState(false);

  const isOwner = members.data?.some((m) => m.username === me.data?.username && m.role === "owner") ?? false;
  const roleOptions = ROLES.map((role) => ({ value: role, label: t(`members.roles.${role}`) }));

  const changeRole = (member: Membership, role: Role) =>
    setMember.mutate(
      { username: member.username, role },
      {
        onSuccess: (m) => void message.success(t("members.roleChanged", { username: m.username, role: t(`members.roles.${m.role}`) })),
        onError: (error) => reportError(error),
      },
    );

  const add = (body: Schemas["MembershipInputRequest"], onDone?: () => void) =>
    setMember.mutate(body, {
      onSuccess: (m) => {
        void message.success(t("members.invited", { username: m.username, role: t(`members.roles.${m.role}`) }));
        onDone?.();
      },
      onError: (error) => reportError(error, form),
    });

  const invite = ({ by: how, username, email, role }: InviteValues) =>
    add(how === "email" ? { email: email ?? "", role } : { username: username ?? "", role }, () => form.resetFields());

  return (
    <Space orientation="vertical" size="middle" style={{ width: "100%" }}>
      <ProjectLifecycle projectId={projectId} />
      <Typography.Title level={3} style={{ margin: 0 }}>
        {t("members.title")}
      </Typography.Title>
      {members.isError ? (
        <ErrorAlert error={members.error} onRetry={() => void members.refetch()} />
      ) : (
        <>
          {isOwner ? (
            <Form form={form} layout="inline" onFinish={invite} initialValues={{ by: "username", role: "editor" }} aria-label={t("members.inviteTitle")}>
              <Form.Item name="by">
                <Select<InviteBy>
                  aria-label={t("members.inviteBy")}
                  style={{ width: 130 }}
                  options={[
                    { value: "username", label: t("members.byUsername") },
                    { value: "email", label: t("members.byEmail") },
                  ]}
                />
              </Form.Item>
              {by === "email" ? (
                <Form.Item name="email" rules={[{ required: true, message: t("common.required") }]}>
                  <Input type="email" placeholder={t("members.email")} aria-label={t("members.email")} style={{ width: 220 }} />
                </Form.Item>
              ) : (
                <Form.Item name="username" rules={[{ required: true, message: t("common.required") }]}>
                  <Input placeholder={t("members.username")} aria-label={t("members.username")} style={{ width: 220 }} />
                </Form.Item>
              )}
              <Form.Item name="role">
                <Select options={roleOptions} aria-label={t("members.role")} style={{ width: 140 }} />
              </Form.Item>
              <Button type="primary" htmlType="submit" icon={<UserAddOutlined />} loading={setMember.isPending}>
                {t("members.invite")}
              </Button>
            </Form>
          ) : (
            members.data && <Alert type="info" showIcon title={t("members.ownerOnly")} />
          )}
          {/* once the members are known: whether the dialog may also add the user is decided
              when it opens (its form's initial values) */}
          {(me.data?.is_staff || isOwner) && members.data && (
            <div>
              <Button icon={<PlusOutlined />} onClick={() => setCreating(true)}>
                {t("users.create")}
              </Button>
              <CreateUserDialog
                open={creating}
                onClose={() => setCreating(false)}
                projectId={projectId}
                canAdd={isOwner}
                mustAdd={!me.data?.is_staff}
                onCreated={(user, role) => {
                  if (role) void message.success(t("members.invited", { username: user.username, role: t(`members.roles.${role}`) }));
                }}
              />
            </div>
          )}
          <Table<Membership>
            rowKey="id"
            loading={members.isPending}
            dataSource={members.data}
            pagination={false}
            columns={[
              { title: t("members.username"), dataIndex: "username" },
              {
                title: t("members.role"),
                dataIndex: "role",
                width: 200,
                render: (role: Role, member) =>
                  isOwner ? (
                    <Select<Role>
                      value={role}
                      options={roleOptions}
                      onChange={(value) => changeRole(member, value)}
                      aria-label={`${t("members.role")} ${member.username}`}
                      style={{ width: 140 }}
                    />
                  ) : (
                    t(`members.roles.${role}`)
                  ),
              },
              ...(isOwner
                ? [
                    {
                      title: t("common.actions"),
                      key: "actions",
                      width: 120,
                      render: (_: unknown, member: Membership) => (
                        <Popconfirm
                          title={t("members.removeConfirm", { username: member.username })}
                          okText={t("common.remove")}
                          cancelText={t("common.cancel")}
                          onConfirm={() =>
                            removeMember.mutate(member.id, {
                              onSuccess: () => void message.success(t("members.removed", { username: member.username })),
                              onError: (error) => reportError(error),
                            })
                          }
                        >
                          <Button type="link" danger disabled={member.username === me.data?.username}>
                            {t("common.remove")}
                          </Button>
                        </Popconfirm>
                      ),
                    },
                  ]
                : []),
            ]}
          />
        </>
      )}
    </Space>
  );
}

/** The project's name with Rename, Archive / Unarchive and Delete (owners only). */
function ProjectLifecycle({ projectId }: { projectId: string }) {
  const { t } = useTranslation();
  const project = useProject(projectId);
  const update = useUpdateProject(projectId);
  const remove = useDeleteProject(projectId);
  const navigate = useNavigate();
  if (!project.data) return null;
  const p = project.data;
  return (
    <Space orientation="vertical" style={{ width: "100%" }}>
      <Space wrap align="baseline">
        <Typography.Title level={3} style={{ margin: 0 }}>
          {p.name}
        </Typography.Title>
        <LifecycleActions
          kind="project"
          name={p.name}
          archived={p.archived}
          canManage={p.role === "owner"}
          update={(body) => update.mutateAsync(body)}
          remove={() => remove.mutateAsync()}
          onDeleted={() => void navigate("/projects")}
        />
      </Space>
      {p.archived && <Alert type="warning" showIcon title={t("lifecycle.archivedNotice")} />}
    </Space>
  );
}
