// i18next with the console's two languages. Every user-facing string is a key in
// locales/en.json and locales/zh-CN.json (a test checks both have the same keys; the TypeScript
// types below make an unknown key a build error).
import i18n from "i18next";
import { initReactI18next } from "react-i18next";

import { setRequestLanguage } from "../api/language";

import en from "./locales/en.json";
import zhCN from "./locales/zh-CN.json";

export const LANGUAGES = ["en", "zh-CN"] as const;
export type Language = (typeof LANGUAGES)[number];
export const resources = { en: { translation: en }, "zh-CN": { translation: zhCN } } as const;

const STORAGE_KEY = "sampan.language";

export function initialLanguage(stored: string | null, browser: readonly string[]): Language {
  if (stored && (LANGUAGES as readonly string[]).includes(stored)) return stored as Language;
  return browser.some((lang) => lang.toLowerCase().startsWith("zh")) ? "zh-CN" : "en";
}

function storedLanguage(): string | null {
  try {
    return window.localStorage.getItem(STORAGE_KEY);
  } catch {
    return null;
  }
}

export function setLanguage(language: Language): Promise<unknown> {
  try {
    window.localStorage.setItem(STORAGE_KEY, language);
  } catch {
    // private mode: the choice lasts for this page only
  }
  document.documentElement.lang = language;
  return i18n.changeLanguage(language);
}

void i18n.use(initReactI18next).init({
  resources,
  lng: initialLanguage(storedLanguage(), navigator.languages ?? [navigator.language]),
  fallbackLng: "en",
  interpolation: { escapeValue: false }, // React escapes
  returnNull: false,
});
document.documentElement.lang = i18n.language;
setRequestLanguage(i18n.language);
i18n.on("languageChanged", setRequestLanguage);

export default i18n;
