// Beside a headline accuracy: the classes the evaluated split holds no image of. A one-class test
// split of a two-class model scores 100 % by answering that class every time, so a figure without
// this tag would overstate.
import { Tag, Tooltip } from "antd";
import { useTranslation } from "react-i18next";

import type { Headline } from "../api/queries/training";

export function NotEvaluatedTag({ headline }: { headline: Pick<Headline, "split" | "notEvaluated"> }) {
  const { t } = useTranslation();
  const missing = headline.notEvaluated;
  if (missing.length === 0) return null;
  const split = t(`training.splitShort.${headline.split}`);
  return (
    <Tooltip
      title={t(headline.split === "test" ? "report.missingClassesTest" : "report.missingClassesVal", {
        count: missing.length,
        classes: missing.join(", "),
      })}
    >
      <Tag color="warning" data-testid="not-evaluated" style={{ marginInlineStart: 4 }}>
        {t("report.notEvaluatedTag", { count: missing.length, split })}
      </Tag>
    </Tooltip>
  );
}
