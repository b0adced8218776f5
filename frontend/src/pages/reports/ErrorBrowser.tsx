// The detection report's error browser: the report's errors at the serving threshold (false
// positives, missed objects, wrong classes), filtered by kind and class, worst first; each a
// thumbnail of the image around its box. A click opens the image large with the predicted boxes
// (solid, class and score), the true boxes as the dataset version froze them (dashed; read a page
// at a time from `dataset-versions/{id}/items/`) and the error's box highlighted; arrows move
// between errors, Esc closes.
import type { TFunction } from "i18next";
import { Button, Card, Checkbox, Empty, Modal, Pagination, Segmented, Select, Skeleton, Space, Tag, Typography } from "antd";
import { useCallback, useEffect, useMemo, useState } from "react";
import { useTranslation } from "react-i18next";

import type { DetectionError, DetectionErrorKind, DetectionReport } from "../../api/queries/training";
import { useVersionItems, type VersionItem } from "../../api/queries/versions";
import { ErrorAlert } from "../../components/errors";
import { boxPercent, cropAround, ERROR_KINDS, filterErrors, kindCounts, predictionsBySample, thumbLayout, totalErrors, type KindFilter, type PredictedBox } from "./detection";

/** Thumbnails per page: one request of true boxes per page (the API takes 100 ids at most). */
export const ERRORS_PER_PAGE = 48;
const THUMB = 104;

export const BOX_COLOURS = { predicted: "#1677ff", true: "#52c41a", error: "#fa541c" } as const;
const KIND_TAG: Record<DetectionErrorKind, string> = { false_positive: "volcano", missed: "gold", wrong_class: "magenta" };

const imageUrl = (projectId: string, sampleId: string) => `/api/v1/projects/${projectId}/samples/${sampleId}/image/`;

/** "car · 0.91", "car not found", "dog · 0.80, true cat". */
export function errorCaption(t: TFunction, e: DetectionError): string {
  const score = e.score === null ? "" : e.score.toFixed(2);
  if (e.kind === "missed") return t("report.detection.captionMissed", { label: e.true_label ?? "?" });
  if (e.kind === "wrong_class") return t("report.detection.captionWrong", { label: e.label ?? "?", score, true: e.true_label ?? "?" });
  return t("report.detection.captionFalse", { label: e.label ?? "?", score });
}

function errorSentence(t: TFunction, e: DetectionError, threshold: string): string {
  const score = e.score === null ? "" : e.score.toFixed(2);
  if (e.kind === "missed") return t("report.detection.sentenceMissed", { label: e.true_label ?? "?", threshold });
  if (e.kind === "wrong_class") return t("report.detection.sentenceWrong", { label: e.label ?? "?", score, true: e.true_label ?? "?" });
  return t("report.detection.sentenceFalse", { label: e.label ?? "?", score });
}

export function ErrorBrowser(props: { projectId: string; versionId: string | undefined; report: DetectionReport; labels: string[] }) {
  const { t } = useTranslation();
  const { projectId, report, labels } = props;
  const [kind, setKind] = useState<KindFilter>("all");
  const [label, setLabel] = useState<string | null>(null);
  const [page, setPage] = useState(1);
  const [open, setOpen] = useState<number | null>(null);
  const [show, setShow] = useState({ predicted: true, truth: true });

  const errors = useMemo(() => filterErrors(report.errors, kind, label), [report.errors, kind, label]);
  const counts = useMemo(() => kindCounts(report.errors, label), [report.errors, label]);
  const predictions = useMemo(() => predictionsBySample(report), [report]);
  const pages = Math.max(1, Math.ceil(errors.length / ERRORS_PER_PAGE));
  const current = Math.min(page, pages);
  const start = (current - 1) * ERRORS_PER_PAGE;
  const shown = errors.slice(start, start + ERRORS_PER_PAGE);
  // the page's true boxes: the thumbnails' crops and the large view (which keeps the page in step)
  const items = useVersionItems(projectId, props.versionId, shown.map((e) => e.sample_id));

  const total = totalErrors(report);
  const classes = useMemo(() => report.per_class.map((r) => r.label), [report.per_class]);
  const choose = (next: { kind?: KindFilter; label?: string | null }) => {
    if (next.kind !== undefined) setKind(next.kind);
    if (next.label !== undefined) setLabel(next.label);
    setPage(1);
    setOpen(null);
  };
  const openAt = useCallback(
    (index: number) => {
      if (index < 0 || index >= errors.length) return;
      setOpen(index);
      setPage(Math.floor(index / ERRORS_PER_PAGE) + 1);
    },
    [errors.length],
  );
  const close = useCallback(() => setOpen(null), []);
  const all = counts.false_positive + counts.missed + counts.wrong_class;
  const opened = open === null ? undefined : errors[open];

  return (
    <Card size="small" title={t("report.detection.errorsTitle")} data-testid="error-browser">
      <Space orientation="vertical" style={{ width: "100%" }}>
        <Space wrap>
          <Segmented<KindFilter>
            data-testid="error-kind"
            value={kind}
            onChange={(value) => choose({ kind: value })}
            options={[
              { value: "all", label: t("report.detection.kindAll", { n: all }) },
              ...ERROR_KINDS.map((k) => ({ value: k, label: t(`report.detection.kinds.${k}`, { n: counts[k] }) })),
            ]}
          />
          <Select<string>
            data-testid="error-class"
            allowClear
            showSearch
            style={{ minWidth: 180 }}
            placeholder={t("report.detection.allClasses")}
            value={label ?? undefined}
            onChange={(value) => choose({ label: value ?? null })}
            options={classes.map((c) => ({ value: c, label: c }))}
            aria-label={t("report.class")}
          />
        </Space>
        {total > report.errors.length && (
          <Typography.Text type="secondary" data-testid="errors-truncated">
            {t("report.detection.truncated", { listed: report.errors.length, total })}
          </Typography.Text>
        )}
        {items.isError && <ErrorAlert error={items.error} onRetry={() => void items.refetch()} />}
        {errors.length === 0 ? (
          <Empty image={Empty.PRESENTED_IMAGE_SIMPLE} description={t(report.errors.length === 0 ? "report.detection.noErrors" : "report.detection.noneOfKind")} />
        ) : (
          <div style={{ display: "flex", flexWrap: "wrap", gap: 8 }}>
            {shown.map((e, i) => (
              <ErrorThumb
                key={start + i}
                projectId={projectId}
                error={e}
                item={items.data?.get(e.sample_id)}
                loading={items.isPending && items.fetchStatus !== "idle"}
                caption={errorCaption(t, e)}
                kindName={t(`report.detection.kind.${e.kind}`)}
                onOpen={() => openAt(start + i)}
              />
            ))}
          </div>
        )}
        {errors.length > ERRORS_PER_PAGE && (
          <Pagination size="small" current={current} pageSize={ERRORS_PER_PAGE} total={errors.length} onChange={setPage} showSizeChanger={false} />
        )}
      </Space>
      {opened && open !== null && (
        <ErrorLightbox
          projectId={projectId}
          error={opened}
          index={open}
          count={errors.length}
          item={items.data?.get(opened.sample_id)}
          truthState={items.isError ? "failed" : items.data ? "ready" : "loading"}
          predicted={predictions.get(opened.sample_id) ?? []}
          labels={labels}
          threshold={report.score_threshold.toFixed(2)}
          show={show}
          onShow={setShow}
          onMove={(delta) => openAt(open + delta)}
          onClose={close}
        />
      )}
    </Card>
  );
}

/** The image around the error's box (its kind's colour), cropped so that a small object shows. */
function ErrorThumb(props: {
  projectId: string;
  error: DetectionError;
  item: VersionItem | undefined;
  loading: boolean;
  caption: string;
  kindName: string;
  onOpen: () => void;
}) {
  const { error: e, item } = props;
  const src = imageUrl(props.projectId, e.sample_id);
  let picture;
  if (item) {
    const layout = thumbLayout(cropAround(e.box, item.width, item.height), item.width, item.height, THUMB);
    picture = (
      <>
        <img src={src} alt="" loading="lazy" decoding="async" style={{ position: "absolute", maxWidth: "none", ...layout.image }} />
        <span
          data-testid="thumb-error-box"
          style={{ position: "absolute", boxSizing: "border-box", ...layout.box(e.box), border: `2px ${e.kind === "missed" ? "dashed" : "solid"} ${BOX_COLOURS.error}` }}
        />
      </>
    );
  } else if (props.loading) {
    picture = <Skeleton.Image active style={{ width: THUMB, height: THUMB }} />;
  } else {
    picture = <img src={src} alt="" loading="lazy" decoding="async" width={THUMB} height={THUMB} style={{ objectFit: "contain", display: "block" }} />;
  }
  return (
    <button
      type="button"
      data-testid="error-thumb"
      title={props.caption}
      aria-label={`${props.kindName}: ${props.caption}`}
      onClick={props.onOpen}
      style={{ margin: 0, padding: 4, width: THUMB + 10, border: "1px solid #f0f0f0", borderRadius: 6, background: "#fff", cursor: "pointer", textAlign: "center" }}
    >
      <span style={{ display: "block", position: "relative", width: THUMB, height: THUMB, overflow: "hidden", background: "#fafafa" }}>{picture}</span>
      <Tag color={KIND_TAG[e.kind]} style={{ marginInlineEnd: 0, marginTop: 4, whiteSpace: "normal" }}>
        {props.kindName}
      </Tag>
      <span style={{ display: "block", fontSize: 12, lineHeight: 1.4, wordBreak: "break-word" }}>{props.caption}</span>
    </button>
  );
}

/** One frame over the large image, placed in % of the image so it scales with it. */
function Frame(props: { box: readonly number[]; width: number; height: number; colour: string; dashed: boolean; thick?: boolean; text?: string; textBelow?: boolean; testId: string }) {
  return (
    <div
      data-testid={props.testId}
      style={{
        position: "absolute",
        boxSizing: "border-box",
        ...boxPercent(props.box, props.width, props.height),
        border: `${props.thick ? 3 : 2}px ${props.dashed ? "dashed" : "solid"} ${props.colour}`,
        // the error's box: everything around it dimmed
        boxShadow: props.thick ? "0 0 0 9999px rgba(0, 0, 0, 0.28)" : undefined,
        pointerEvents: "none",
      }}
    >
      {props.text && (
        <span
          style={{
            position: "absolute",
            // inside the box (outside it would be cut at the image's edge): predicted at the
            // top, true at the bottom, so both read where a predicted box lies on a true one
            left: 0,
            ...(props.textBelow ? { bottom: 0 } : { top: 0 }),
            background: props.colour,
            color: "#fff",
            fontSize: 12,
            lineHeight: "16px",
            padding: "0 4px",
            whiteSpace: "nowrap",
          }}
        >
          {props.text}
        </span>
      )}
    </div>
  );
}

function ErrorLightbox(props: {
  projectId: string;
  error: DetectionError;
  index: number;
  count: number;
  item: VersionItem | undefined;
  truthState: "loading" | "ready" | "failed";
  predicted: PredictedBox[];
  labels: string[];
  threshold: string;
  show: { predicted: boolean; truth: boolean };
  onShow: (show: { predicted: boolean; truth: boolean }) => void;
  onMove: (delta: number) => void;
  onClose: () => void;
}) {
  const { t } = useTranslation();
  const { error: e, item, onMove, onClose } = props;
  const [natural, setNatural] = useState<{ sample: string; width: number; height: number } | null>(null);
  const size = item ? { width: item.width, height: item.height } : natural?.sample === e.sample_id ? natural : null;

  useEffect(() => {
    const onKey = (event: KeyboardEvent) => {
      if (event.key === "ArrowRight" || event.key === "ArrowDown") onMove(1);
      else if (event.key === "ArrowLeft" || event.key === "ArrowUp") onMove(-1);
      else if (event.key === "Escape") onClose();
      else return;
      event.preventDefault();
      event.stopPropagation();
    };
    window.addEventListener("keydown", onKey, true);
    return () => window.removeEventListener("keydown", onKey, true);
  }, [onMove, onClose]);

  const label = (index: number) => props.labels[index] ?? String(index);
  const ratio = size ? size.width / Math.max(1, size.height) : null;
  return (
    <Modal
      open
      centered
      keyboard={false}
      footer={null}
      onCancel={onClose}
      width="min(1200px, calc(100vw - 48px))"
      title={
        <span data-testid="lightbox-title">
          <Tag color={KIND_TAG[e.kind]}>{t(`report.detection.kind.${e.kind}`)}</Tag>
          {errorCaption(t, e)}
          <Typography.Text type="secondary" style={{ marginInlineStart: 12, fontWeight: "normal" }}>
            {t("report.detection.position", { index: props.index + 1, count: props.count })}
          </Typography.Text>
        </span>
      }
    >
      <Space orientation="vertical" style={{ width: "100%" }}>
        <div
          data-testid="lightbox-image"
          style={{
            position: "relative",
            margin: "0 auto",
            overflow: "hidden",
            width: ratio ? `min(100%, calc((100vh - 320px) * ${ratio.toFixed(4)}))` : undefined,
            maxWidth: "100%",
          }}
        >
          <img
            key={e.sample_id}
            src={imageUrl(props.projectId, e.sample_id)}
            alt={errorCaption(t, e)}
            onLoad={(event) => setNatural({ sample: e.sample_id, width: event.currentTarget.naturalWidth, height: event.currentTarget.naturalHeight })}
            style={{ display: "block", width: ratio ? "100%" : undefined, maxWidth: "100%", maxHeight: ratio ? undefined : "calc(100vh - 320px)", height: "auto" }}
          />
          {size && (
            <div style={{ position: "absolute", inset: 0 }}>
              {props.show.truth &&
                (item?.boxes ?? []).map((b, i) => (
                  <Frame key={`t${i}`} testId="true-box" box={b} width={size.width} height={size.height} colour={BOX_COLOURS.true} dashed text={label(b[4] ?? -1)} textBelow />
                ))}
              {props.show.predicted &&
                props.predicted.map((p, i) => (
                  <Frame
                    key={`p${i}`}
                    testId="predicted-box"
                    box={p.box}
                    width={size.width}
                    height={size.height}
                    colour={BOX_COLOURS.predicted}
                    dashed={false}
                    text={`${label(p.classIndex)} ${p.score.toFixed(2)}`}
                  />
                ))}
              <Frame testId="error-box" box={e.box} width={size.width} height={size.height} colour={BOX_COLOURS.error} dashed={e.kind === "missed"} thick />
            </div>
          )}
        </div>
        <Typography.Text data-testid="lightbox-sentence">{errorSentence(t, e, props.threshold)}</Typography.Text>
        {props.truthState === "loading" && <Typography.Text type="secondary">{t("report.detection.truthLoading")}</Typography.Text>}
        {props.truthState === "failed" && <Typography.Text type="danger">{t("report.detection.truthFailed")}</Typography.Text>}
        <Space wrap style={{ width: "100%", justifyContent: "space-between" }}>
          <Space wrap>
            <Checkbox checked={props.show.predicted} onChange={(ev) => props.onShow({ ...props.show, predicted: ev.target.checked })}>
              <LegendSwatch colour={BOX_COLOURS.predicted} dashed={false} /> {t("report.detection.legendPredicted")}
            </Checkbox>
            <Checkbox checked={props.show.truth} onChange={(ev) => props.onShow({ ...props.show, truth: ev.target.checked })}>
              <LegendSwatch colour={BOX_COLOURS.true} dashed /> {t("report.detection.legendTrue")}
            </Checkbox>
            <span>
              <LegendSwatch colour={BOX_COLOURS.error} dashed={false} /> {t("report.detection.legendError")}
            </span>
          </Space>
          <Space wrap>
            <Typography.Text type="secondary">{t("report.detection.keys")}</Typography.Text>
            <Button onClick={() => onMove(-1)} disabled={props.index === 0} data-testid="lightbox-previous">
              {t("report.detection.previous")}
            </Button>
            <Button onClick={() => onMove(1)} disabled={props.index >= props.count - 1} data-testid="lightbox-next">
              {t("report.detection.next")}
            </Button>
          </Space>
        </Space>
      </Space>
    </Modal>
  );
}

function LegendSwatch({ colour, dashed }: { colour: string; dashed: boolean }) {
  return <span aria-hidden style={{ display: "inline-block", width: 18, height: 12, verticalAlign: "middle", border: `2px ${dashed ? "dashed" : "solid"} ${colour}` }} />;
}
