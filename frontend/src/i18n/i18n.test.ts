import { describe, expect, it } from "vitest";

import { initialLanguage } from ".";
import en from "./locales/en.json";
import zhCN from "./locales/zh-CN.json";

const PLURAL_SUFFIX = /_(zero|one|two|few|many|other)$/;

/** Every key path, with plural forms folded into their base key (Chinese has only `_other`). */
function keys(tree: object, prefix = ""): Set<string> {
  const out = new Set<string>();
  for (const [key, value] of Object.entries(tree)) {
    const path = prefix + key;
    if (value !== null && typeof value === "object") {
      for (const sub of keys(value, `${path}.`)) out.add(sub);
    } else {
      out.add(path.replace(PLURAL_SUFFIX, ""));
    }
  }
  return out;
}

function leaves(tree: object): string[] {
  return Object.values(tree).flatMap((v) => (v !== null && typeof v === "object" ? leaves(v) : [v]));
}

describe("translations", () => {
  it("zh-CN has every key of en", () => {
    const missing = [...keys(en)].filter((k) => !keys(zhCN).has(k));
    expect(missing).toEqual([]);
  });

  it("en has every key of zh-CN", () => {
    const missing = [...keys(zhCN)].filter((k) => !keys(en).has(k));
    expect(missing).toEqual([]);
  });

  it("has no empty strings", () => {
    expect(leaves(en).filter((v) => typeof v !== "string" || v.trim() === "")).toEqual([]);
    expect(leaves(zhCN).filter((v) => typeof v !== "string" || v.trim() === "")).toEqual([]);
  });

  it("uses the same {{placeholders}} in both languages", () => {
    const placeholders = (tree: object, prefix = ""): Record<string, string> =>
      Object.entries(tree).reduce<Record<string, string>>((acc, [key, value]) => {
        const path = (prefix + key).replace(PLURAL_SUFFIX, "");
        if (value !== null && typeof value === "object") return { ...acc, ...placeholders(value, `${prefix}${key}.`) };
        acc[path] = [...String(value).matchAll(/\{\{(\w+)\}\}/g)].map((m) => m[1]).sort().join(",");
        return acc;
      }, {});
    expect(placeholders(zhCN)).toEqual(placeholders(en));
  });
});

describe("initialLanguage", () => {
  it("prefers the stored choice, then a Chinese browser, then English", () => {
    expect(initialLanguage("en", ["zh-CN"])).toBe("en");
    expect(initialLanguage(null, ["zh-TW", "en"])).toBe("zh-CN");
    expect(initialLanguage("fr", ["fr-FR"])).toBe("en");
  });
});
