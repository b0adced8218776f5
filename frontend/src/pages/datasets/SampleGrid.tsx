// The gallery's thumbnail grid, virtualized by rows (@tanstack/react-virtual): however many
// samples are loaded, only the rows in view plus OVERSCAN_ROWS above and below are in the DOM.
// Rows have one fixed height, so the scroll height is exact without measuring any element. When
// the rows in view come within PREFETCH_ROWS of the last loaded one, the next page is asked for.
import { useVirtualizer } from "@tanstack/react-virtual";
import { Checkbox, Spin, Tag, Typography } from "antd";
import { memo, useEffect, useLayoutEffect, useRef, useState } from "react";
import { useTranslation } from "react-i18next";

import type { Sample } from "../../api/queries/datasets";
import { boxCountOf, classLabelOf } from "./labeling";

const CELL_MIN_WIDTH = 104; // px
const GAP = 8; // px, between cells and rows
const THUMB_HEIGHT = 132; // px: 4 padding + 92 image + 4 + 24 tag + 4 padding + 2 x 2 border
export const ROW_HEIGHT = THUMB_HEIGHT + GAP;
const OVERSCAN_ROWS = 3;
const PREFETCH_ROWS = 8;
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

  return (
    <div
      ref={scrollRef}
      data-testid="gallery"
      style={{ height: GRID_HEIGHT, minHeight: GRID_MIN_HEIGHT, overflowY: "auto", overflowAnchor: "none" }}
    >
      <div style={{ height: virtualizer.getTotalSize(), position: "relative" }}>
        {rows.map((row) => (
          <div
            key={row.key}
            data-index={row.index}
            style={{
              position: "absolute",
              top: 0,
              left: 0,
              width: "100%",
              height: THUMB_HEIGHT,
              transform: `translateY(${row.start}px)`,
              display: "grid",
              gridTemplateColumns: `repeat(${columns}, minmax(0, 1fr))`,
              gap: GAP,
            }}
          >
            {row.index >= dataRows ? (
              <Typography.Text type="secondary" style={{ gridColumn: "1 / -1", alignSelf: "center", textAlign: "center" }}>
                <Spin size="small" /> {t("gallery.loadingMore")}
              </Typography.Text>
            ) : (
              props.samples.slice(row.index * columns, (row.index + 1) * columns).map((sample) => (
                <Thumbnail
                  key={sample.id}
                  sample={sample}
                  current={sample.id === props.currentId}
                  checked={props.selected ? props.selected.has(sample.id) : undefined}
                  onClick={props.onClick}
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
}) {
  const { t } = useTranslation();
  const { sample } = props;
  const label = classLabelOf(sample);
  const boxes = boxCountOf(sample);
  return (
    <button
      type="button"
      data-testid="sample"
      title={sample.original_name}
      aria-label={`${sample.original_name}: ${label ?? t("gallery.unlabeledTag")}`}
      aria-pressed={props.checked ?? props.current}
      onClick={() => props.onClick(sample.id)}
      style={{
        position: "relative",
        height: THUMB_HEIGHT,
        minWidth: 0,
        padding: 4,
        background: "#fff",
        cursor: "pointer",
        border: `2px solid ${props.current || props.checked ? "#1677ff" : "#f0f0f0"}`,
        borderRadius: 6,
        textAlign: "center",
        overflow: "hidden",
      }}
    >
      {props.checked !== undefined && (
        <Checkbox checked={props.checked} style={{ position: "absolute", top: 4, left: 6 }} tabIndex={-1} />
      )}
      <img
        src={sample.image_url}
        alt={sample.original_name}
        decoding="async"
        width={92}
        height={92}
        style={{ objectFit: "contain", display: "block", margin: "0 auto", imageRendering: sample.width < 92 ? "pixelated" : "auto" }}
      />
      <div style={{ marginTop: 4, height: 24, whiteSpace: "nowrap", overflow: "hidden", textOverflow: "ellipsis" }}>
        {label !== null ? (
          <Tag color="blue" style={{ marginInlineEnd: 0 }}>{label}</Tag>
        ) : boxes > 0 ? (
          <Tag style={{ marginInlineEnd: 0 }}>{boxes} ▭</Tag>
        ) : (
          <Tag style={{ marginInlineEnd: 0 }}>{t("gallery.unlabeledTag")}</Tag>
        )}
      </div>
    </button>
  );
});
