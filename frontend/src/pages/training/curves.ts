// The job page's curves as an ECharts option (pure, tested in curves.test.ts): loss and validation
// loss on a log axis of their own (a loss falls from ~2 to ~0.05: on a linear axis shared with
// anything else it is a flat line), the validation figure on 0..100 %, one band per phase (output
// layer on a frozen backbone, then all layers), the kept epoch marked. The validation figure is
// whichever the entries carry: a classifier's accuracy per epoch, or an object detector's
// mAP@0.5 at a training step (its entries have `step` and `val_map50`, no epoch).
import type { EpochRecord } from "../../api/queries/training";
import { familyOf } from "./textJob";

export interface CurveTexts {
  loss: string;
  valLoss: string;
  valAccuracy: string;
  /** an object detector's validation figure */
  valMap50: string;
  epoch: string;
  /** the x axis of a detector's entries */
  step: string;
  kept: string;
  /** the x label of the output-layer phase's one point ("output layer"), in place of its epoch count */
  outputLayer: string;
  /** the tooltip's heading for that point */
  outputLayerTitle: string;
  /** a phase's short name ("head" -> "output layer only"), or a text model family's, for the bands and the tooltip */
  stage: (phase: string | undefined) => string;
  /** the tooltip's heading for an entry ("Epoch 3 · all layers") */
  entryTitle: (entry: EpochRecord) => string;
}

/** The validation figure the entries carry: an object detector's mAP@0.5, else a classifier's accuracy. */
export type ValidationMetric = "val_accuracy" | "val_map50";

export function validationMetric(history: readonly EpochRecord[]): ValidationMetric {
  return history.some((h) => typeof h.val_map50 === "number") ? "val_map50" : "val_accuracy";
}

/** An entry's validation figure (0..1): its mAP@0.5 when it has one, else its accuracy. */
export function validationValue(entry: EpochRecord | undefined): number | undefined {
  if (!entry) return undefined;
  return typeof entry.val_map50 === "number" ? entry.val_map50 : typeof entry.val_accuracy === "number" ? entry.val_accuracy : undefined;
}

const STAGE_COLOURS: Record<string, string> = {
  head: "rgba(22, 119, 255, 0.07)",
  finetune: "rgba(250, 140, 22, 0.07)",
  linear: "rgba(22, 119, 255, 0.07)",
  fasttext: "rgba(114, 46, 209, 0.07)",
};

/**
 * Runs of consecutive entries with the same phase: [phase, first index, last index]. A text
 * job's entries (all in the phase "train") run by model family instead: [family, first, last].
 */
export function phaseRuns(history: EpochRecord[]): [string | undefined, number, number][] {
  const runs: [string | undefined, number, number][] = [];
  history.forEach((h, i) => {
    const last = runs[runs.length - 1];
    const key = familyOf(h) ?? h.phase;
    if (last && last[0] === key) last[2] = i;
    else runs.push([key, i, i]);
  });
  return runs;
}

const isHead = (phase: string | undefined) => phase === "head" || phase === "features";

/**
 * Whether entry i is the output-layer phase as one point: the engine trains the output layer for
 * many quick epochs on cached features and records them as one entry named after the last
 * ("epoch 40"), which beside all layers' 1, 2, 3 reads as a count. Older jobs with one entry per
 * output-layer epoch keep their numbers.
 */
export function isOutputLayerPoint(history: EpochRecord[], i: number): boolean {
  return isHead(history[i]?.phase) && !isHead(history[i - 1]?.phase) && !isHead(history[i + 1]?.phase);
}

/** A loss for a log axis: null where missing or not positive (log 0 is not drawn). */
function positive(x: number | undefined): number | null {
  return typeof x === "number" && Number.isFinite(x) && x > 0 ? x : null;
}

/** At most about this many epoch labels on the x axis. */
const MAX_TICKS = 20;

/**
 * The positions (1..n) that get a tick and a label: every entry when there are few, else every
 * k-th of each phase counting from its first epoch (so each phase's first epoch is labelled).
 */
export function tickPositions(history: EpochRecord[]): number[] {
  const step = Math.max(1, Math.ceil(history.length / MAX_TICKS));
  return phaseRuns(history).flatMap(([, first, last]) =>
    Array.from({ length: last - first + 1 }, (_, k) => first + k + 1).filter((_, k) => k % step === 0),
  );
}

/**
 * x is the entry's position (1..n) on a value axis, labelled with the entry's own epoch number
 * (each phase counts from 1), so the phases' bands can start and end between two epochs. The
 * ticks are placed on the entries themselves (ECharts would start them at the axis' min, 0.5).
 */
export function curvesOption(history: EpochRecord[], kept: number, texts: CurveTexts) {
  const xy = (pick: (h: EpochRecord) => number | null) => history.map((h, i) => [i + 1, pick(h)] as [number, number | null]);
  // a detector: mAP@0.5 at training steps, one phase (no bands)
  const metric = validationMetric(history);
  const bySteps = metric === "val_map50";
  const valName = bySteps ? texts.valMap50 : texts.valAccuracy;
  const runs = bySteps ? [] : phaseRuns(history);
  const ticks = tickPositions(history);
  const labelOf = (value: number) => {
    const entry = Number.isInteger(value) ? history[value - 1] : undefined;
    if (!entry) return "";
    if (bySteps) return String(entry.step ?? "");
    return isOutputLayerPoint(history, value - 1) ? texts.outputLayer : String(entry.epoch ?? "");
  };
  const twoDecimals = (x: number) => (x >= 0.01 ? x.toFixed(3) : x.toExponential(1));
  return {
    animation: false,
    tooltip: {
      trigger: "axis",
      formatter: (params: { dataIndex: number; marker: string; seriesName: string; value: [number, number | null] }[]) => {
        const list = Array.isArray(params) ? params : [params];
        const index = list[0]?.dataIndex ?? -1;
        const entry = history[index];
        const lines = list
          .filter((p) => p.value[1] !== null)
          .map((p) => {
            const v = p.value[1] as number;
            const text = p.seriesName === valName ? `${v.toFixed(1)}%` : twoDecimals(v);
            return `${p.marker}${p.seriesName}: ${text}`;
          });
        const title = !entry ? "" : !bySteps && isOutputLayerPoint(history, index) ? texts.outputLayerTitle : texts.entryTitle(entry);
        return [title, ...lines].join("<br/>");
      },
    },
    legend: { top: 0 },
    grid: { left: 64, right: 56, top: 40, bottom: 40 },
    xAxis: {
      type: "value",
      name: bySteps ? texts.step : texts.epoch,
      nameLocation: "middle",
      nameGap: 26,
      min: 0.5,
      max: history.length + 0.5,
      splitLine: { show: false },
      axisTick: { customValues: ticks },
      axisLabel: { formatter: labelOf, customValues: ticks },
      axisPointer: { label: { formatter: ({ value }: { value: number }) => labelOf(Math.round(value)) } },
    },
    yAxis: [
      { type: "log", logBase: 10, name: texts.loss, axisLabel: { formatter: (v: number) => String(Number(v.toPrecision(2))) } },
      { type: "value", name: valName, min: 0, max: 100, interval: 25, axisLabel: { formatter: "{value}%" }, splitLine: { show: false } },
    ],
    series: [
      {
        name: texts.loss,
        type: "line",
        yAxisIndex: 0,
        data: xy((h) => positive(h.loss)),
        showSymbol: true,
        connectNulls: true,
        // the phases as bands behind the lines, named at the top
        markArea: {
          silent: true,
          label: { position: "insideTop", color: "#8c8c8c" },
          data: runs.map(
            ([phase, first, last]): [{ name: string; xAxis: number; itemStyle: { color: string } }, { xAxis: number }] => [
              { name: texts.stage(phase), xAxis: first + 0.5, itemStyle: { color: STAGE_COLOURS[phase ?? ""] ?? "rgba(0, 0, 0, 0.03)" } },
              { xAxis: last + 1.5 },
            ],
          ),
        },
      },
      { name: texts.valLoss, type: "line", yAxisIndex: 0, data: xy((h) => positive(h.val_loss)), showSymbol: true, connectNulls: true, lineStyle: { type: "dashed" } },
      {
        name: valName,
        type: "line",
        yAxisIndex: 1,
        data: xy((h) => {
          const v = h[metric];
          return typeof v === "number" ? Math.round(1000 * v) / 10 : null;
        }),
        showSymbol: true,
        connectNulls: true,
        ...(kept >= 0 &&
          kept < history.length && {
            markLine: { symbol: "none", silent: true, label: { formatter: texts.kept }, data: [{ xAxis: kept + 1 }] },
          }),
      },
    ],
  };
}
