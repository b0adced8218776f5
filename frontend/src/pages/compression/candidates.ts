// What the compression job page says and draws about its candidates: plain-language names,
// figures against the float reference (size ratio, speed-up, accuracy drop), the progress line,
// and the Pareto chart (device latency vs accuracy) as an ECharts option. Pure (t passed in),
// tested in candidates.test.ts.
import type { TFunction } from "i18next";

import { COMPRESSION_PHASES, type Candidate, type CompressionPhase, type CompressionProgress } from "../../api/queries/compression";

export const REFERENCE_KEY = "fp32";

export function referenceOf(candidates: readonly Candidate[]): Candidate | undefined {
  return candidates.find((c) => c.key === REFERENCE_KEY);
}

const num = (x: unknown): number | null => (typeof x === "number" && Number.isFinite(x) ? x : null);

/** The device's p50 of a candidate in ms, or null when it was not measured. */
export function p50Of(c: Candidate | undefined): number | null {
  const p50 = num(c?.latency?.p50_ms);
  return p50 !== null && p50 > 0 ? p50 : null;
}

/** How many times faster than the float reference on the device (reference p50 / candidate p50). */
export function speedUp(c: Candidate, reference: Candidate | undefined): number | null {
  const mine = p50Of(c);
  const theirs = p50Of(reference);
  return mine !== null && theirs !== null ? theirs / mine : null;
}

/** How many times smaller than the float reference's file. */
export function sizeRatio(c: Candidate, reference: Candidate | undefined): number | null {
  const mine = num(c.size_bytes);
  const theirs = num(reference?.size_bytes);
  return mine !== null && mine > 0 && theirs !== null && theirs > 0 ? theirs / mine : null;
}

/** Bytes as MB (1024²), two decimals under 10 MB: "0.08 MB", "3.46 MB", "13.6 MB". */
export function formatMB(bytes: number): string {
  const mb = bytes / (1024 * 1024);
  return `${mb < 10 ? mb.toFixed(2) : mb.toFixed(1)} MB`;
}

/** Milliseconds with the precision that matters at that size: "0.42", "12.3", "245". */
export function formatMs(ms: number): string {
  return ms < 10 ? ms.toFixed(2) : ms < 100 ? ms.toFixed(1) : ms.toFixed(0);
}

/** A ratio: "3.9×". */
export function formatRatio(ratio: number): string {
  return `${ratio.toFixed(1)}×`;
}

/** 0..1 as a percentage: "97.3%". */
export function formatAccuracy(x: number): string {
  return `${(100 * x).toFixed(1)}%`;
}

/** Points lost against fp32, signed when better: "0.4", "−0.2" (a true minus sign), "0.0". */
export function formatPoints(points: number): string {
  const rounded = Math.round(points * 10) / 10;
  if (rounded === 0) return "0.0";
  return rounded < 0 ? `−${(-rounded).toFixed(1)}` : rounded.toFixed(1);
}

/** Whether a candidate lost more than the budget allows (the reference never does). */
export function beyondBudget(c: Candidate, budgetPt: number): boolean {
  if (c.key === REFERENCE_KEY || c.status !== "ready") return false;
  if (typeof c.within_budget === "boolean") return !c.within_budget;
  const drop = num(c.accuracy_drop_pt);
  return drop !== null && drop > budgetPt;
}

/** The lowest accuracy (in %) a candidate may have: the reference's minus the budget. */
export function budgetFloor(reference: Candidate | undefined, budgetPt: number): number | null {
  const accuracy = num(reference?.accuracy);
  return accuracy === null ? null : 100 * accuracy - budgetPt;
}

// ---- names -------------------------------------------------------------------------------------

/** What a candidate is, read from its method, params and key (a skipped student has no params). */
export interface CandidateKind {
  base: "reference" | "int8" | "fp16" | "student" | "pruned" | "other";
  /** px of a student trained at a lower resolution */
  resolution?: number;
  /** % of channels pruned */
  pruned?: number;
  /** an INT8 quantization of `base` (for base "int8": of the float reference) */
  int8: boolean;
  /** INT8 calibrated on percentiles rather than min/max */
  percentile: boolean;
}

export function candidateKind(c: Candidate): CandidateKind {
  const key = c.key;
  const percentile = c.params?.calibration_method === "percentile" || /-percentile$/.test(key);
  if (key === REFERENCE_KEY || c.method === "fp32") return { base: "reference", int8: false, percentile: false };
  if (c.method === "fp16" || key === "fp16") return { base: "fp16", int8: false, percentile: false };
  const isInt8 = c.method === "int8" || /(^|-)int8(-|$)/.test(key);
  // "res64-int8-percentile" is an INT8 of "res64"; plain "int8" is one of the reference
  const studentKey = isInt8 ? key.replace(/(^|-)int8(-\w+)?$/, "") : key;
  if (isInt8 && (studentKey === "" || studentKey === REFERENCE_KEY)) return { base: "int8", int8: true, percentile };
  const resolutionParam = num(c.params?.resolution);
  const ratioParam = num(c.params?.pruning_ratio);
  const resMatch = /(?:^|-)res(\d+)(?:-|$)/.exec(studentKey);
  const pruneMatch = /(?:^|-)pruned(\d+)(?:-|$)/.exec(studentKey);
  // params of an INT8 child are its parent's plus the calibration: the resolution is the student's
  const resolution = resMatch ? Number(resMatch[1]) : undefined;
  const pruned = pruneMatch ? Number(pruneMatch[1]) : ratioParam !== null && ratioParam > 0 ? Math.round(ratioParam * 100) : undefined;
  if (pruned !== undefined) {
    return { base: "pruned", pruned, ...(resolution !== undefined ? { resolution } : {}), int8: isInt8, percentile };
  }
  if (resolution !== undefined || c.method === "distilled") {
    const px = resolution ?? resolutionParam ?? num(c.preprocessing?.size?.[0]) ?? undefined;
    return { base: "student", ...(px !== undefined ? { resolution: px } : {}), int8: isInt8, percentile };
  }
  return { base: "other", int8: isInt8, percentile };
}

/** A text classifier's candidate (workers/ml/compression/text.py): its preprocessing is empty (an
 * evaluated image candidate's names its input size); its accuracy was measured on texts. */
export function isTextCandidate(c: Candidate): boolean {
  const preprocessing: unknown = c.preprocessing;
  return typeof preprocessing === "object" && preprocessing !== null && Object.keys(preprocessing).length === 0;
}

/** "INT8 (quantized, 4x smaller)", "Distilled student at 64 px", "Pruned 50 % + distilled", "Float reference". */
export function describeCandidate(t: TFunction, c: Candidate): string {
  const kind = candidateKind(c);
  let text: string;
  switch (kind.base) {
    case "reference":
      return t("compression.kinds.reference");
    case "fp16":
      return t("compression.kinds.fp16");
    case "int8":
      // a text model's INT8 is dynamic: its tables and weights int8, activations at run time;
      // "int8-matmul" keeps the embedding tables float
      if (c.params?.quantization === "dynamic") {
        const ops = Array.isArray(c.params.op_types) ? (c.params.op_types as unknown[]) : [];
        return t(ops.length === 1 && ops[0] === "MatMul" ? "compression.kinds.int8MatMul" : "compression.kinds.int8Dynamic");
      }
      text = t("compression.kinds.int8");
      break;
    case "student":
      text = kind.resolution !== undefined ? t("compression.kinds.student", { px: kind.resolution }) : t("compression.kinds.studentPlain");
      break;
    case "pruned":
      text =
        kind.resolution !== undefined
          ? t("compression.kinds.prunedAt", { percent: kind.pruned, px: kind.resolution })
          : t("compression.kinds.pruned", { percent: kind.pruned });
      break;
    default:
      text = c.method ? c.method : c.key;
  }
  if (kind.int8 && kind.base !== "int8") text = t("compression.kinds.thenInt8", { name: text });
  if (kind.percentile) text = t("compression.kinds.percentile", { name: text });
  return text;
}

// ---- progress ----------------------------------------------------------------------------------

function isPhase(phase: string | undefined): phase is CompressionPhase {
  return (COMPRESSION_PHASES as readonly string[]).includes(phase ?? "");
}

/** "Training student res64 — epoch 5/20", "Measuring 4 candidates on camera-1", ... */
export function progressText(t: TFunction, progress: CompressionProgress, status: string, deviceName: string): string {
  if (status === "PENDING" || status === "QUEUED") return t("compression.progress.waiting");
  const phase = progress.phase;
  const candidate = progress.candidate ?? "";
  switch (isPhase(phase) ? phase : undefined) {
    case "decode":
      return t("compression.progress.decode");
    case "reference":
      return t("compression.progress.reference");
    case "int8":
      return t("compression.progress.int8", { candidate });
    case "student":
      return typeof progress.epoch === "number" && progress.epoch > 0
        ? typeof progress.epochs === "number"
          ? t("compression.progress.studentEpoch", { candidate, epoch: progress.epoch, epochs: progress.epochs })
          : t("compression.progress.studentEpochOnly", { candidate, epoch: progress.epoch })
        : t("compression.progress.student", { candidate });
    case "measure":
      return deviceName ? t("compression.progress.measureOn", { device: deviceName }) : t("compression.progress.measureHere");
    case "done":
      return t("compression.progress.done");
    default:
      return phase ? phase : t("compression.progress.starting");
  }
}

/**
 * The bar, 0..100, never past 90 before measuring: the engine's fraction is of its own share of
 * the budget (it reaches 1 before the measuring starts, which reports 0.9).
 */
export function progressPercent(progress: CompressionProgress, status: string): number {
  if (status === "SUCCEEDED" || progress.phase === "done") return 100;
  const fraction = Math.min(1, Math.max(0, num(progress.fraction) ?? 0));
  if (progress.phase === "measure") return Math.round(100 * Math.max(0.9, fraction));
  return Math.round(90 * fraction);
}

// ---- the Pareto chart --------------------------------------------------------------------------

export type PointCategory = "reference" | "within" | "beyond";

export interface ParetoPoint {
  key: string;
  /** device p50, ms */
  x: number;
  /** accuracy, % */
  y: number;
  sizeBytes: number | null;
  /** px, ~ the square root of the file size (area ~ size) */
  symbolSize: number;
  category: PointCategory;
  picked: boolean;
  p99: number | null;
  speedUp: number | null;
  drop: number | null;
  evaluatedOn: string;
}

const MIN_SYMBOL = 8;
const MAX_SYMBOL = 36;

/** The measured, ready candidates as chart points; the others are not plotted. */
export function paretoPoints(candidates: readonly Candidate[], picked: string, budgetPt: number): ParetoPoint[] {
  const reference = referenceOf(candidates);
  const measured = candidates.filter((c) => c.status === "ready" && p50Of(c) !== null && num(c.accuracy) !== null);
  const largest = Math.max(0, ...measured.map((c) => num(c.size_bytes) ?? 0));
  return measured.map((c) => {
    const size = num(c.size_bytes);
    const share = size !== null && largest > 0 ? Math.sqrt(size / largest) : 0.5;
    return {
      key: c.key,
      x: p50Of(c) as number,
      y: 100 * (c.accuracy as number),
      sizeBytes: size,
      symbolSize: Math.round(MIN_SYMBOL + (MAX_SYMBOL - MIN_SYMBOL) * share),
      category: c.key === REFERENCE_KEY ? "reference" : beyondBudget(c, budgetPt) ? "beyond" : "within",
      picked: Boolean(picked) && c.key === picked,
      p99: num(c.latency?.p99_ms),
      speedUp: speedUp(c, reference),
      drop: num(c.accuracy_drop_pt),
      evaluatedOn: c.evaluated_on ?? "",
    };
  });
}

export interface ParetoTexts {
  x: string;
  y: string;
  series: Record<PointCategory, string>;
  picked: string;
  floor: string;
  /** the tooltip of one point, plain text lines */
  tooltip: (point: ParetoPoint) => string[];
}

export const CATEGORY_COLOURS: Record<PointCategory, string> = { reference: "#1677ff", within: "#52c41a", beyond: "#ff4d4f" };

function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (ch) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" })[ch] as string);
}

/** An axis bound rounded to two significant digits, away from the points (1.83 -> 1.8 down, 11.05 -> 12 up). */
function roundAxis(value: number, direction: "up" | "down"): number {
  if (value <= 0) return 0;
  const step = 10 ** Math.floor(Math.log10(value)) / 10;
  const rounded = (direction === "up" ? Math.ceil(value / step) : Math.floor(value / step)) * step;
  return Math.round(rounded * 1e6) / 1e6;
}

/** The ECharts option: one scatter series per category, the pick outlined and labelled, the budget floor as a dashed line. */
export function paretoOption(points: readonly ParetoPoint[], floor: number | null, texts: ParetoTexts): Record<string, unknown> {
  const categories: PointCategory[] = ["reference", "within", "beyond"];
  const ys = points.map((p) => p.y).concat(floor !== null ? [floor] : []);
  const low = ys.length ? Math.min(...ys) : 0;
  const high = ys.length ? Math.max(...ys) : 100;
  const pad = Math.max(0.5, (high - low) * 0.15);
  const xs = points.map((p) => p.x);
  const xMin = xs.length ? Math.min(...xs) : 0;
  const xMax = xs.length ? Math.max(...xs) : 1;
  const xPad = Math.max((xMax - xMin) * 0.1, xMax * 0.05);
  const xLow = roundAxis(Math.max(0, xMin - xPad), "down");
  const xHigh = roundAxis(xMax + xPad, "up");
  const series = categories.map((category, index) => ({
    name: texts.series[category],
    type: "scatter",
    symbol: category === "reference" ? "diamond" : "circle",
    itemStyle: { color: CATEGORY_COLOURS[category], opacity: 0.85 },
    data: points
      .filter((p) => p.category === category)
      .map((p) => ({
        name: p.key,
        value: [p.x, p.y],
        symbolSize: p.symbolSize,
        tooltipLines: texts.tooltip(p),
        label: { show: true, position: "right", formatter: p.picked ? `${p.key} ★ ${texts.picked}` : p.key, fontWeight: p.picked ? "bold" : "normal" },
        ...(p.picked ? { itemStyle: { borderColor: "#000", borderWidth: 3, opacity: 1 } } : {}),
      })),
    // the floor once, on the first series
    ...(index === 0 && floor !== null
      ? {
          markLine: {
            silent: true,
            symbol: "none",
            lineStyle: { type: "dashed", color: "#fa8c16" },
            label: { formatter: texts.floor, position: "insideEndTop" },
            data: [{ yAxis: Math.round(floor * 100) / 100 }],
          },
        }
      : {}),
  }));
  return {
    animation: false,
    grid: { left: 56, right: 120, top: 40, bottom: 48 },
    legend: { top: 0, data: categories.map((c) => texts.series[c]) },
    tooltip: {
      trigger: "item",
      formatter: (params: { data?: { tooltipLines?: string[] } }) => (params.data?.tooltipLines ?? []).map(escapeHtml).join("<br/>"),
    },
    // padded so that no point sits on an axis (the fastest one is often at the left edge)
    xAxis: { type: "value", name: texts.x, nameLocation: "middle", nameGap: 28, min: xLow, max: xHigh },
    yAxis: {
      type: "value",
      name: texts.y,
      min: Math.max(0, Math.floor((low - pad) * 10) / 10),
      max: Math.min(100, Math.ceil((high + pad) * 10) / 10),
    },
    series,
  };
}
