// The gallery's thumbnail grid, virtualized by rows (@tanstack/react-virtual): however many
// samples are loaded, only the rows in view plus OVERSCAN_ROWS above and below are in the DOM.
// Rows have one fixed height, so the scroll height is exact without measuring any element. When
// the rows in view come within PREFETCH_ROWS of the last loaded one, the next page is asked for.
import { useVirtualizer } from "@tanstack/react-virtual";
import { Checkbox, Spin } from "antd";
import { memo, useCallback, useEffect, useLayoutEffect, useRef, useState } from "react";
import { useTranslation } from "react-i18next";

import type { Sample } from "../../api/queries/datasets";
import { boxCountOf, classLabelOf } from "./labeling";
import styles from "./SampleGrid.module.css";
import { classSuggestionOf, percent } from "./suggestions";

// px; GAP and THUMB_HEIGHT are also in SampleGrid.module.css
const CELL_MIN_WIDTH = 104;
const GAP = 8; // between cells and rows
const THUMB_HEIGHT = 132; // 2 x 2 border + 2 x 4 padding + 92 image + 4 + 22 tag, and room
export const ROW_HEIGHT = THUMB_HEIGHT + GAP;
const OVERSCAN_ROWS = 3;
// ~4,000 px ahead: at a fast flick (~6,000 px/s) on two busy cores the next page arrived before
// the grid ran out with 30 rows, not with 8 (tests/e2e/test_gallery_scale.py, "waiting" frames)
const PREFETCH_ROWS = 30;
// Fits the console at 1280x720 below the dataset header, tabs and the filter bar
// (measured: the grid starts ~300 px from the top of the window).
const GRID_HEIGHT = "calc(100vh - 320px)";
const GRID_MIN_HEIGHT = 300; // px: two rows and more on small windows

/** Cells per row for a grid `width` px wide: as many cells of at least CELL_MIN_WIDTH as fit. */
export function columnsFor(width: number): number {
  return Math.max(1, Math.floor((width + GAP) / (CELL_MIN_WIDTH + GAP)));
}

export function SampleGrid(props: {
  samples: Sample[];
  currentId: string | null;
  /** with a selection: which samples are checked; undefined outside selection mode */
  selected: Set<string> | undefined;
  onClick: (sampleId: string) => void;
  hasMore: boolean;
  loadingMore: boolean;
  onLoadMore: () => void;
  /** changes when the filter changes: the grid scrolls back to the top */
  resetKey: string;
  /** the colour of a class's boxes on the thumbnails (as in the detection drawer) */
  colourOfClass?: (classLabelId: string) => string;
}) {
  const { t } = useTranslation();
  const scrollRef = useRef<HTMLDivElement>(null);
  const width = useClientWidth(scrollRef);
  const columns = columnsFor(width);
  const dataRows = Math.ceil(props.samples.length / columns);
  const rowCount = dataRows + (props.hasMore ? 1 : 0); // the last row says "loading more"

  const virtualizer = useVirtualizer({
    count: rowCount,
    getScrollElement: () => scrollRef.current,
    estimateSize: () => ROW_HEIGHT,
    overscan: OVERSCAN_ROWS,
  });
  const rows = virtualizer.getVirtualItems();
  const lastRow = rows.at(-1)?.index ?? -1;

  const { hasMore, loadingMore, onLoadMore } = props;
  useEffect(() => {
    if (hasMore && !loadingMore && lastRow >= dataRows - PREFETCH_ROWS) onLoadMore();
  }, [hasMore, loadingMore, lastRow, dataRows, onLoadMore]);

  useEffect(() => {
    virtualizer.scrollToOffset(0);
  }, [props.resetKey, virtualizer]);

  // Labeling moves the current sample (possibly to one whose row is not rendered): bring it into view.
  const samplesRef = useRef(props.samples);
  samplesRef.current = props.samples;
  useEffect(() => {
    const index = samplesRef.current.findIndex((s) => s.id === props.currentId);
    if (index >= 0) virtualizer.scrollToIndex(Math.floor(index / columns), { align: "auto" });
  }, [props.currentId, columns, virtualizer]);

  const unlabeledText = t("gallery.unlabeledTag");
  const noObjectsText = t("gallery.noObjectsTag");
  const suggestedText = useCallback((label: string, score: number) => t("gallery.suggestedTag", { label, percent: percent(score) }), [t]);
  const boxesText = useCallback((count: number) => t("detection.boxes", { count }), [t]);
  return (
    <div
      ref={scrollRef}
      data-testid="gallery"
      className={styles.grid}
      style={{ height: GRID_HEIGHT, minHeight: GRID_MIN_HEIGHT }}
    >
      <div className={styles.rows} style={{ height: virtualizer.getTotalSize(), ["--columns" as string]: columns }}>
        {rows.map((row) => (
          <div key={row.key} className={styles.row} style={{ transform: `translateY(${row.start}px)` }}>
            {row.index >= dataRows ? (
              <div className={styles.loading} data-testid="gallery-loading">
                <Spin size="small" /> {t("gallery.loadingMore")}
              </div>
            ) : (
              props.samples.slice(row.index * columns, (row.index + 1) * columns).map((sample) => (
                <Thumbnail
                  key={sample.id}
                  sample={sample}
                  current={sample.id === props.currentId}
                  checked={props.selected ? props.selected.has(sample.id) : undefined}
                  onClick={props.onClick}
                  unlabeledText={unlabeledText}
                  noObjectsText={noObjectsText}
                  suggestedText={suggestedText}
                  boxesText={boxesText}
                  colourOfClass={props.colourOfClass}
                />
              ))
            )}
          </div>
        ))}
      </div>
    </div>
  );
}

/** The element's clientWidth (px, without its scroll bar), kept up to date as it resizes. */
function useClientWidth(ref: React.RefObject<HTMLElement | null>): number {
  const [width, setWidth] = useState(0);
  useLayoutEffect(() => {
    const element = ref.current;
    if (!element) return;
    setWidth(element.clientWidth);
    const observer = new ResizeObserver(() => setWidth(element.clientWidth));
    observer.observe(element);
    return () => observer.disconnect();
  }, [ref]);
  return width;
}

const Thumbnail = memo(function Thumbnail(props: {
  sample: Sample;
  current: boolean;
  checked: boolean | undefined;
  onClick: (sampleId: string) => void;
  unlabeledText: string;
  noObjectsText: string;
  suggestedText: (label: string, score: number) => string;
  boxesText: (count: number) => string;
  colourOfClass: ((classLabelId: string) => string) | undefined;
}) {
  const { sample } = props;
  const image = useRef<HTMLImageElement>(null);
  const url = sample.image_url ?? ""; // null only for a text sample, never in this grid
  useEffect(() => {
    const img = image.current;
    // StrictMode (npm run dev) runs the cleanup and this again on a mounted thumbnail
    if (img && !img.getAttribute("src")) img.src = url;
    // A thumbnail that scrolls out before its image arrived drops its request: Chromium aborts
    // the load when the src goes. Otherwise a fast scroll through 10,000 samples leaves 10,000
    // requests queued, and the thumbnails where the scroll stops stay blank for minutes
    // (measured: < 1 s instead of > 2 min, tests/e2e/test_gallery_scale.py).
    return () => {
      if (img && !img.complete) img.removeAttribute("src");
    };
  }, [url]);
  const label = classLabelOf(sample);
  const boxes = boxCountOf(sample);
  // a model's class suggestion of an unlabeled sample: "cat? 87%", dashed (not a label)
  const suggestion = label === null ? classSuggestionOf(sample) : null;
  const suggestedBoxes = sample.suggestions.some((s) => s.kind === "box");
  // a detection sample with boxes is labeled: "street.png: 2 boxes"; so is one checked "no
  // objects" (a background image)
  const text =
    label ??
    (boxes > 0
      ? props.boxesText(boxes)
      : sample.no_objects
        ? props.noObjectsText
        : suggestion
          ? props.suggestedText(suggestion.class_label, suggestion.score)
          : props.unlabeledText);
  const tagClass = label !== null || sample.no_objects ? `${styles.tag} ${styles.label}` : suggestion ? `${styles.tag} ${styles.suggested}` : styles.tag;
  return (
    <button
      type="button"
      data-testid="sample"
      className={styles.thumb}
      title={sample.original_name}
      aria-label={`${sample.original_name}: ${text}`}
      aria-pressed={props.checked ?? props.current}
      onClick={() => props.onClick(sample.id)}
    >
      {props.checked !== undefined && <Checkbox checked={props.checked} className={styles.check} tabIndex={-1} />}
      <img
        ref={image}
        src={url}
        alt={sample.original_name}
        decoding="async"
        width={92}
        height={92}
        className={sample.width < 92 ? `${styles.image} ${styles.pixelated}` : styles.image}
      />
      {(boxes > 0 || suggestedBoxes) && <ThumbnailBoxes sample={sample} colourOfClass={props.colourOfClass} />}
      <span className={tagClass}>
        {text}
      </span>
    </button>
  );
});

/** Boxes drawn on a thumbnail beyond this many are left out (the count is in the tag). */
const MAX_THUMBNAIL_BOXES = 50;

/**
 * A detection sample's boxes over its thumbnail: one SVG whose viewBox is the image in px, laid
 * exactly over the 92 x 92 image; "meet" places the viewBox as `object-fit: contain` places the
 * image, so the boxes land where they are on the image. Strokes stay 1.5 CSS px at any scale. A
 * model's suggested boxes (not labels) are drawn dashed.
 */
function ThumbnailBoxes({ sample, colourOfClass }: { sample: Sample; colourOfClass: ((classLabelId: string) => string) | undefined }) {
  const rects = [];
  for (const [a, suggested] of [
    ...sample.annotations.map((a) => [a, false] as const),
    ...sample.suggestions.map((s) => [s, true] as const),
  ]) {
    if (rects.length >= MAX_THUMBNAIL_BOXES) break;
    if (a.kind !== "box" || a.x1 == null || a.y1 == null || a.x2 == null || a.y2 == null) continue;
    rects.push(
      <rect
        key={a.id}
        x={a.x1}
        y={a.y1}
        width={a.x2 - a.x1}
        height={a.y2 - a.y1}
        stroke={colourOfClass?.(a.class_label_id) ?? "#1677ff"}
        className={suggested ? styles.suggested : undefined}
        data-suggested={suggested || undefined}
      />,
    );
  }
  return (
    <svg className={styles.boxes} viewBox={`0 0 ${sample.width} ${sample.height}`} preserveAspectRatio="xMidYMid meet" aria-hidden data-testid="thumbnail-boxes">
      {rects}
    </svg>
  );
}
