import { UserAddOutlined } from "@ant-design/icons";
import { Alert, App, Button, Form, Input, Popconfirm, Select, Space, Table, Typography } from "antd";
import { useTranslation } from "react-i18next";
import { useParams } from "react-router";

import type { Schemas } from "../api/client";
import { useMe } from "../api/queries/auth";
import { ROLES, useMembers, useRemoveMember, useSetMember, type Membership, type Role } from "../api/queries/projects";
import { ErrorAlert, useReportError } from "../components/errors";

export function MembersPage() {
  const { t } = useTranslation();
  const { projectId = "" } = useParams();
  const { message } = App.useApp();
  const me = useMe();
  const members = useMembers(projectId);
  const setMember = useSetMember(projectId);
  const removeMember = useRemoveMember(projectId);
  const reportError = useReportError();
  const [form] = Form.useForm<Schemas["MembershipInputRequest"]>();

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

  const invite = (values: Schemas["MembershipInputRequest"]) =>
    setMember.mutate(values, {
      onSuccess: (m) => {
        void message.success(t("members.invited", { username: m.username, role: t(`members.roles.${m.role}`) }));
        form.resetFields();
      },
      onError: (error) => reportError(error, form),
    });

  return (
    <Space orientation="vertical" size="middle" style={{ width: "100%" }}>
      <Typography.Title level={3} style={{ margin: 0 }}>
        {t("members.title")}
      </Typography.Title>
      {members.isError ? (
        <ErrorAlert error={members.error} onRetry={() => void members.refetch()} />
      ) : (
        <>
          {isOwner ? (
            <Form form={form} layout="inline" onFinish={invite} initialValues={{ role: "editor" }} aria-label={t("members.inviteTitle")}>
              <Form.Item name="username" rules={[{ required: true, message: t("common.required") }]}>
                <Input placeholder={t("members.username")} aria-label={t("members.username")} style={{ width: 220 }} />
              </Form.Item>
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
