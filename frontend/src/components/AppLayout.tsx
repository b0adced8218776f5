// The console's frame: a sider with the project picker and the project's sections, a header with
// the language switch and the user menu. Sized for 1280x720 and up; the sider collapses.
import { AlertOutlined, AppstoreOutlined, AuditOutlined, DatabaseOutlined, DeploymentUnitOutlined, ExperimentOutlined, KeyOutlined, LogoutOutlined, RocketOutlined, TeamOutlined, UserOutlined } from "@ant-design/icons";
import { Button, Dropdown, Layout, Menu, Select, Space, Typography } from "antd";
import { useState } from "react";
import { useTranslation } from "react-i18next";
import { Outlet, useLocation, useNavigate, useParams } from "react-router";

import { useLogout, useMe } from "../api/queries/auth";
import { useProjectRole, useProjects } from "../api/queries/projects";
import { useReportError } from "./errors";
import { LanguageSwitch } from "./LanguageSwitch";
import { ReadOnlyTag } from "./ReadOnly";

const SECTIONS = ["datasets", "training", "models", "devices", "rollouts", "alerts", "members", "audit"] as const;
/** Sections only a project's owners see in the menu (the server refuses the others anyway). */
const OWNER_SECTIONS: ReadonlySet<string> = new Set(["audit"]);
const ICONS = {
  datasets: <DatabaseOutlined />,
  training: <ExperimentOutlined />,
  models: <AppstoreOutlined />,
  devices: <DeploymentUnitOutlined />,
  rollouts: <RocketOutlined />,
  alerts: <AlertOutlined />,
  members: <TeamOutlined />,
  audit: <AuditOutlined />,
};

export function AppLayout() {
  const { t } = useTranslation();
  const { projectId } = useParams();
  const location = useLocation();
  const navigate = useNavigate();
  const [collapsed, setCollapsed] = useState(false);
  const projects = useProjects();
  const me = useMe();
  const logout = useLogout();
  const reportError = useReportError();
  const role = useProjectRole(projectId ?? "");

  const section = SECTIONS.find((s) => location.pathname.split("/")[3] === s);

  return (
    <Layout style={{ minHeight: "100vh" }}>
      <Layout.Sider
        collapsible
        collapsed={collapsed}
        onCollapse={setCollapsed}
        width={232}
        theme="light"
        style={{ position: "sticky", top: 0, height: "100vh", overflow: "auto" }}
      >
        <div style={{ padding: "16px 16px 8px" }}>
          <Typography.Title level={4} style={{ margin: 0, whiteSpace: "nowrap", overflow: "hidden" }}>
            <a onClick={() => void navigate("/projects")}>{collapsed ? "S" : t("app.name")}</a>
          </Typography.Title>
        </div>
        {!collapsed && (
          <div style={{ padding: "0 12px 12px" }}>
            <Select
              aria-label={t("nav.project")}
              style={{ width: "100%" }}
              placeholder={t("nav.pickProject")}
              loading={projects.isPending}
              value={projectId}
              showSearch={{ optionFilterProp: "label" }}
              options={(projects.data ?? []).map((p) => ({ value: p.id, label: p.name }))}
              onChange={(id: string) => void navigate(`/projects/${id}/${section ?? "datasets"}`)}
              popupRender={(menu) => (
                <>
                  {menu}
                  <Button type="link" block onClick={() => void navigate("/projects")}>
                    {t("nav.allProjects")}
                  </Button>
                </>
              )}
            />
          </div>
        )}
        <Menu
          mode="inline"
          selectedKeys={section ? [section] : []}
          disabled={!projectId}
          items={SECTIONS.filter((key) => !OWNER_SECTIONS.has(key) || role === "owner").map((key) => ({
            key,
            icon: ICONS[key],
            label: t(`nav.${key}`),
            onClick: () => void navigate(`/projects/${projectId}/${key}`),
          }))}
        />
      </Layout.Sider>
      <Layout>
        <Layout.Header
          style={{ background: "#fff", padding: "0 24px", display: "flex", justifyContent: "flex-end", height: 56, lineHeight: "56px" }}
        >
          <Space size="middle">
            {projectId && role === "viewer" && <ReadOnlyTag long />}
            <LanguageSwitch />
            <Dropdown
              menu={{
                items: [
                  { key: "who", label: t("auth.signedInAs", { username: me.data?.username ?? "" }), disabled: true },
                  { type: "divider" },
                  { key: "tokens", icon: <KeyOutlined />, label: t("tokens.title") },
                  { key: "logout", icon: <LogoutOutlined />, label: t("auth.signOut") },
                ],
                onClick: ({ key }) => {
                  if (key === "tokens") void navigate("/tokens");
                  if (key === "logout") {
                    logout.mutate(undefined, {
                      onSuccess: () => void navigate("/login"),
                      onError: (error) => reportError(error),
                    });
                  }
                },
              }}
            >
              <Button type="text" icon={<UserOutlined />} aria-label={t("auth.userMenu")}>
                {me.data?.username}
              </Button>
            </Dropdown>
          </Space>
        </Layout.Header>
        <Layout.Content style={{ padding: 24, minWidth: 0 }}>
          <Outlet />
        </Layout.Content>
      </Layout>
    </Layout>
  );
}
