import { Select } from "antd";
import { useTranslation } from "react-i18next";

import { LANGUAGES, setLanguage, type Language } from "../i18n";

export function LanguageSwitch() {
  const { t, i18n } = useTranslation();
  return (
    <Select<Language>
      aria-label={t("language.label")}
      value={i18n.language as Language}
      onChange={(value) => void setLanguage(value)}
      options={LANGUAGES.map((lang) => ({ value: lang, label: t(`language.${lang}`) }))}
      style={{ width: 120 }}
      variant="borderless"
    />
  );
}
