// A version flag in the reader's language: known codes are translated with their class's name
// (the API names the class by `class_index` into the version's labels); others show the API's
// message, prefixed with the class's name when the flag is about one class.
import type { TFunction } from "i18next";

import type { VersionFlag } from "../../api/queries/versions";

export function flagText(t: TFunction, flag: VersionFlag, labels: string[]): string {
  const name = flag.class ?? (typeof flag.class_index === "number" ? labels[flag.class_index] : undefined);
  switch (flag.code) {
    case "class_too_small":
      if (name) return t("versions.flagTooSmall", { name });
      break;
    case "no_test_split_for_class":
      if (name) return t("versions.flagNoTestForClass", { name });
      break;
    case "no_test_split":
      return t("versions.flagNoTestSplit");
    case "class_imbalance":
      if (typeof flag.ratio === "number") return t("versions.flagImbalance", { ratio: flag.ratio.toFixed(1) });
      break;
    default:
      break;
  }
  return name ? t("versions.flagClass", { name, message: flag.message }) : flag.message;
}
