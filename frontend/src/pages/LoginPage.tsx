import { Button, Card, Form, Input, Typography } from "antd";
import { useTranslation } from "react-i18next";
import { useNavigate, useSearchParams } from "react-router";

import type { Schemas } from "../api/client";
import { useLogin } from "../api/queries/auth";
import { useReportError } from "../components/errors";
import { LanguageSwitch } from "../components/LanguageSwitch";

/** Only same-site paths: `?next=https://elsewhere` must not become an open redirect. */
export function safeNext(next: string | null): string {
  return next && next.startsWith("/") && !next.startsWith("//") ? next : "/projects";
}

export function LoginPage() {
  const { t } = useTranslation();
  const [form] = Form.useForm<Schemas["LoginInputRequest"]>();
  const login = useLogin();
  const reportError = useReportError();
  const navigate = useNavigate();
  const [params] = useSearchParams();

  const onFinish = (values: Schemas["LoginInputRequest"]) =>
    login.mutate(values, {
      onSuccess: () => void navigate(safeNext(params.get("next")), { replace: true }),
      onError: (error) => reportError(error, form),
    });

  return (
    <div style={{ minHeight: "100vh", display: "grid", placeItems: "center", background: "#f5f5f5" }}>
      <div style={{ position: "absolute", top: 12, right: 24 }}>
        <LanguageSwitch />
      </div>
      <Card style={{ width: 360 }}>
        <Typography.Title level={3} style={{ marginTop: 0 }}>
          {t("auth.signInTitle")}
        </Typography.Title>
        <Typography.Paragraph type="secondary">{t("app.tagline")}</Typography.Paragraph>
        <Form form={form} layout="vertical" onFinish={onFinish} requiredMark={false}>
          <Form.Item name="username" label={t("auth.username")} rules={[{ required: true, message: t("common.required") }]}>
            <Input autoFocus autoComplete="username" />
          </Form.Item>
          <Form.Item name="password" label={t("auth.password")} rules={[{ required: true, message: t("common.required") }]}>
            <Input.Password autoComplete="current-password" />
          </Form.Item>
          <Button type="primary" htmlType="submit" block loading={login.isPending}>
            {t("auth.signIn")}
          </Button>
        </Form>
      </Card>
    </div>
  );
}
