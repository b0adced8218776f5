import { Button, Result } from "antd";
import { useTranslation } from "react-i18next";
import { useNavigate } from "react-router";

export function NotFoundPage() {
  const { t } = useTranslation();
  const navigate = useNavigate();
  return (
    <Result
      status="404"
      title="404"
      subTitle={t("errors.notFound")}
      extra={<Button onClick={() => void navigate("/projects")}>{t("errors.backHome")}</Button>}
    />
  );
}
