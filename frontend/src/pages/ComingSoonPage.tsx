import { Result } from "antd";
import { useTranslation } from "react-i18next";

/** Sections whose pages come in later sessions (Training, Models, Devices). */
export function ComingSoonPage({ section }: { section: "training" | "models" | "devices" }) {
  const { t } = useTranslation();
  return <Result status="info" title={t(`nav.${section}`)} subTitle={t("common.comingSoon")} />;
}
