// A text classifier's report shows texts where an image classifier's shows thumbnails: the
// samples of a confusion-matrix cell, the misclassified ones. Each text is read by id for the
// page shown (api/queries/samples.ts), shown as React text (never HTML), cut to a few lines with
// "Show all", beside its predicted class (with the probability) and, when wrong, its true class.
import { Button, Empty, Pagination, Skeleton, Space, Tag, Typography } from "antd";
import type { TFunction } from "i18next";
import { useState } from "react";
import { useTranslation } from "react-i18next";

import type { Sample } from "../../api/queries/datasets";
import { useSamplesById } from "../../api/queries/samples";
import { cutByServer, cutText } from "../datasets/TextSampleList";
import type { CellSample } from "./confusion";
import { thumbCaption } from "./SampleThumb";

export const TEXTS_PER_PAGE = 20;
/** The API sends a text's first 10,000 characters (`text_length` is the whole text's). */
const SERVED_CHARS = 10_000;

/**
 * What a text report says beyond the figures (workers/ml/text/train.py): `truncated` counts per
 * split the texts longer than the model reads (classified by their start), `skipped_samples` the
 * texts left out of the split's evaluation (empty after normalisation).
 */
export function textReportNotes(report: unknown, split: string): { truncated: number; skipped: number } {
  const raw = report && typeof report === "object" ? (report as { truncated?: unknown; skipped_samples?: unknown }) : {};
  const truncated = raw.truncated && typeof raw.truncated === "object" ? (raw.truncated as Record<string, unknown>)[split] : undefined;
  const skipped = Array.isArray(raw.skipped_samples)
    ? raw.skipped_samples.filter((s: unknown) => s && typeof s === "object" && (s as { split?: unknown }).split === split).length
    : 0;
  return { truncated: typeof truncated === "number" ? truncated : 0, skipped };
}

export function TextSamples(props: { projectId: string; samples: CellSample[]; emptyText?: string }) {
  const { t } = useTranslation();
  const [page, setPage] = useState(1);
  const [expanded, setExpanded] = useState<Set<string>>(new Set());
  const { samples } = props;
  const start = (Math.min(page, Math.max(1, Math.ceil(samples.length / TEXTS_PER_PAGE))) - 1) * TEXTS_PER_PAGE;
  const shown = samples.slice(start, start + TEXTS_PER_PAGE);
  const read = useSamplesById(props.projectId, shown.map((s) => s.sample_id));
  if (samples.length === 0) return <Empty image={Empty.PRESENTED_IMAGE_SIMPLE} description={props.emptyText ?? t("report.cellEmpty")} />;
  const toggle = (id: string) =>
    setExpanded((open) => {
      const next = new Set(open);
      if (next.has(id)) next.delete(id);
      else next.add(id);
      return next;
    });
  return (
    <Space orientation="vertical" style={{ width: "100%" }}>
      <ol style={{ listStyle: "none", margin: 0, padding: 0 }}>
        {shown.map((s) => {
          const correct = s.predicted === s.true;
          const sample = read.samples.get(s.sample_id);
          return (
            <li key={s.sample_id} data-testid="report-text" style={{ padding: "8px 0", borderBottom: "1px solid #f0f0f0" }}>
              <Space size={[8, 4]} wrap style={{ marginBottom: 4 }}>
                <Tag color={correct ? "success" : "error"} style={{ marginInlineEnd: 0, whiteSpace: "normal" }} data-testid="text-predicted">
                  {thumbCaption(t, s.predicted, s.probability)}
                </Tag>
                {!correct && (
                  <Typography.Text type="secondary" style={{ fontSize: 12 }} data-testid="text-true">
                    {t("report.trueLabel", { label: s.true })}
                  </Typography.Text>
                )}
              </Space>
              {sample ? (
                <SampleText sample={sample} expanded={expanded.has(s.sample_id)} onToggle={() => toggle(s.sample_id)} t={t} />
              ) : read.errors.has(s.sample_id) ? (
                <Space size={4}>
                  <Typography.Text type="danger">{t("report.text.textFailed")}</Typography.Text>
                  <Button type="link" size="small" onClick={read.retry}>
                    {t("common.retry")}
                  </Button>
                </Space>
              ) : (
                <Skeleton active title={false} paragraph={{ rows: 1 }} />
              )}
            </li>
          );
        })}
      </ol>
      {samples.length > TEXTS_PER_PAGE && (
        <Pagination size="small" current={page} pageSize={TEXTS_PER_PAGE} total={samples.length} onChange={setPage} showSizeChanger={false} />
      )}
    </Space>
  );
}

/** A text: its first lines with "…" and "Show all", or whole (scrolling past 60 % of the window). */
function SampleText({ sample, expanded, onToggle, t }: { sample: Sample; expanded: boolean; onToggle: () => void; t: TFunction }) {
  const cut = cutText(sample.text);
  const whole = cut === null || expanded;
  return (
    <div>
      <div
        data-testid="text-content"
        style={{
          whiteSpace: "pre-wrap",
          overflowWrap: "anywhere",
          lineHeight: 1.5,
          ...(whole && cut !== null ? { maxHeight: "60vh", overflowY: "auto" } : {}),
        }}
      >
        {whole ? sample.text : cut}
      </div>
      {cut !== null && (
        <Button type="link" size="small" style={{ paddingInline: 0, height: "auto" }} aria-expanded={expanded} onClick={onToggle}>
          {expanded ? t("text.list.showLess") : t("text.list.showAll")}
        </Button>
      )}
      {expanded && cutByServer(sample) && (
        <Typography.Text type="secondary" style={{ marginInlineStart: 8, fontSize: 12 }}>
          {t("text.list.cutByServer", { shown: SERVED_CHARS.toLocaleString(), total: sample.text_length.toLocaleString() })}
        </Typography.Text>
      )}
    </div>
  );
}
