// An object detector's evaluation report as the report page uses it (pure, tested in
// detection.test.ts): the precision-recall chart's option, the error browser's filter and order,
// and where a box lies in a thumbnail. Boxes are xyxy px of the upright image
// (workers/ml/detection/evaluation.py).
import type { DetectionError, DetectionErrorKind, DetectionReport } from "../../api/queries/training";

/** The error browser's kinds, in the order of its filter. */
export const ERROR_KINDS: readonly DetectionErrorKind[] = ["false_positive", "missed", "wrong_class"];
export type KindFilter = DetectionErrorKind | "all";

/** ECharts' default palette, named so that a class's curve and its operating point share a colour. */
export const PALETTE = ["#5470c6", "#91cc75", "#fac858", "#ee6666", "#73c0de", "#3ba272", "#fc8452", "#9a60b4", "#ea7ccc"];

const area = (b: readonly number[]) => Math.max(0, (b[2] ?? 0) - (b[0] ?? 0)) * Math.max(0, (b[3] ?? 0) - (b[1] ?? 0));

/**
 * Worst first: wrong detections (false positives and wrong classes) by score, highest first (a
 * confident mistake is what a person sees on the device), then missed objects, largest first (a
 * large object missed is worse than a small one). Ties keep the report's order.
 */
export function worstFirst(errors: readonly DetectionError[]): DetectionError[] {
  const rank = (e: DetectionError) => (e.kind === "missed" ? [1, -area(e.box)] : [0, -(e.score ?? 0)]);
  return errors
    .map((e, i) => ({ e, i, r: rank(e) }))
    .sort((a, b) => a.r[0]! - b.r[0]! || a.r[1]! - b.r[1]! || a.i - b.i)
    .map(({ e }) => e);
}

/** Whether an error concerns class `label` (as predicted or as true); null: any class. */
export function errorOfClass(error: DetectionError, label: string | null): boolean {
  return label === null || error.label === label || error.true_label === label;
}

/** The errors of `kind` ("all": every kind) concerning class `label` (null: any), worst first. */
export function filterErrors(errors: readonly DetectionError[], kind: KindFilter, label: string | null): DetectionError[] {
  return worstFirst(errors.filter((e) => (kind === "all" || e.kind === kind) && errorOfClass(e, label)));
}

/** Listed errors per kind concerning class `label` (null: any). */
export function kindCounts(errors: readonly DetectionError[], label: string | null): Record<DetectionErrorKind, number> {
  const counts: Record<DetectionErrorKind, number> = { false_positive: 0, missed: 0, wrong_class: 0 };
  for (const e of errors) if (errorOfClass(e, label) && e.kind in counts) counts[e.kind] += 1;
  return counts;
}

/** Errors of every kind the evaluation found (the report lists at most 500 of them). */
export function totalErrors(report: Pick<DetectionReport, "error_counts" | "errors">): number {
  const counted = ERROR_KINDS.reduce((sum, kind) => sum + (report.error_counts[kind] ?? 0), 0);
  return Math.max(counted, report.errors.length);
}

export interface PredictedBox {
  box: [number, number, number, number];
  classIndex: number;
  score: number;
}

/** Sample id -> its predicted boxes at the serving threshold. */
export function predictionsBySample(report: Pick<DetectionReport, "predictions">): Map<string, PredictedBox[]> {
  return new Map(
    report.predictions.map((p) => [
      p.sample_id,
      p.boxes
        .filter((b) => b.length >= 6)
        .map((b) => ({ box: [b[0]!, b[1]!, b[2]!, b[3]!] as [number, number, number, number], classIndex: b[4]!, score: b[5]! })),
    ]),
  );
}

/** A rectangle in px of the image: x, y of its top-left corner, width, height. */
export interface Rect {
  x: number;
  y: number;
  w: number;
  h: number;
}

/**
 * The square of the image a thumbnail shows around a box: twice the box's longer side, at least
 * a quarter of the image's shorter side (a small box keeps some of its surroundings) and 16 px,
 * at most the image's longer side; moved to lie inside the image where it fits, centred where
 * the image is narrower than the square.
 */
export function cropAround(box: readonly number[], width: number, height: number): Rect {
  const [x1 = 0, y1 = 0, x2 = 0, y2 = 0] = box;
  const side = Math.min(Math.max(width, height), Math.max(2 * Math.max(x2 - x1, y2 - y1), Math.min(width, height) / 4, 16));
  const place = (centre: number, extent: number) =>
    side >= extent ? (extent - side) / 2 : Math.min(Math.max(0, centre - side / 2), extent - side);
  return { x: place((x1 + x2) / 2, width), y: place((y1 + y2) / 2, height), w: side, h: side };
}

/**
 * Where things lie in a `size` x `size` px thumbnail that shows `crop` of a `width` x `height`
 * image: the image's own rectangle (scaled, offset) and a box's rectangle, in CSS px.
 */
export function thumbLayout(crop: Rect, width: number, height: number, size: number) {
  const scale = size / Math.max(crop.w, crop.h);
  const at = (x: number, y: number) => ({ left: (x - crop.x) * scale, top: (y - crop.y) * scale });
  return {
    image: { ...at(0, 0), width: width * scale, height: height * scale },
    box: (b: readonly number[]) => ({ ...at(b[0] ?? 0, b[1] ?? 0), width: ((b[2] ?? 0) - (b[0] ?? 0)) * scale, height: ((b[3] ?? 0) - (b[1] ?? 0)) * scale }),
  };
}

/** A box as CSS percentages of its image (an overlay that scales with the image). */
export function boxPercent(b: readonly number[], width: number, height: number) {
  const pct = (x: number, of: number) => `${(100 * x) / Math.max(1, of)}%`;
  const [x1 = 0, y1 = 0, x2 = 0, y2 = 0] = b;
  return { left: pct(x1, width), top: pct(y1, height), width: pct(x2 - x1, width), height: pct(y2 - y1, height) };
}

export interface PrTexts {
  recall: string;
  precision: string;
  /** the tooltip's heading: "Recall 0.50" */
  atRecall: (recall: string) => string;
}

/**
 * The precision-recall curves (IoU 0.5) as an ECharts option: one line per class with true boxes
 * (COCO's interpolated precision at 101 recall points; a gap where the class never reaches that
 * recall), and a diamond of the same colour and name (one legend entry toggles both) at the
 * class's precision and recall at the serving threshold.
 */
export function prCurvesOption(report: Pick<DetectionReport, "pr_curves" | "per_class">, texts: PrTexts) {
  const rows = new Map(report.per_class.map((r) => [r.index, r]));
  const series = report.pr_curves.flatMap((curve, k) => {
    const colour = PALETTE[k % PALETTE.length]!;
    const row = rows.get(curve.index);
    const line = {
      name: curve.label,
      type: "line",
      color: colour,
      showSymbol: false,
      connectNulls: false,
      emphasis: { focus: "series" },
      data: curve.recall.map((r, i) => [r, curve.precision[i] ?? null] as [number, number | null]),
    };
    const point =
      row && row.support > 0
        ? [{ name: curve.label, type: "scatter", color: colour, symbol: "diamond", symbolSize: 11, z: 3, data: [[row.recall, row.precision]] }]
        : [];
    return [line, ...point];
  });
  const two = (x: number) => x.toFixed(2);
  return {
    animation: false,
    tooltip: {
      trigger: "axis",
      formatter: (params: { seriesType?: string; seriesName: string; marker: string; value: [number, number | null] }[]) => {
        const list = (Array.isArray(params) ? params : [params]).filter((p) => p.seriesType === "line" && p.value[1] !== null);
        if (list.length === 0) return "";
        const lines = [...list]
          .sort((a, b) => (b.value[1] ?? 0) - (a.value[1] ?? 0))
          .slice(0, 12)
          .map((p) => `${p.marker}${p.seriesName}: ${texts.precision} ${two(p.value[1] ?? 0)}`);
        return [texts.atRecall(two(list[0]!.value[0])), ...lines].join("<br/>");
      },
    },
    legend: { type: "scroll", top: 0 },
    grid: { left: 56, right: 24, top: 40, bottom: 48 },
    xAxis: { type: "value", name: texts.recall, nameLocation: "middle", nameGap: 28, min: 0, max: 1 },
    yAxis: { type: "value", name: texts.precision, min: 0, max: 1 },
    series,
  };
}
