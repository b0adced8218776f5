import i18n from "i18next";
import { afterEach, describe, expect, it } from "vitest";

import type { Candidate } from "../../api/queries/compression";
import {
  beyondBudget,
  budgetFloor,
  candidateKind,
  describeCandidate,
  formatMB,
  formatMs,
  formatPoints,
  formatRatio,
  isTextCandidate,
  paretoOption,
  paretoPoints,
  progressPercent,
  progressText,
  sizeRatio,
  speedUp,
  type ParetoTexts,
} from "./candidates";

const t = i18n.t.bind(i18n);

afterEach(async () => {
  await i18n.changeLanguage("en");
});

const fp32: Candidate = {
  key: "fp32", method: "fp32", status: "ready", accuracy: 0.98, evaluated_on: "test", accuracy_drop_pt: 0, within_budget: true,
  size_bytes: 4_000_000, latency: { p50_ms: 10, p99_ms: 14 }, benchmark: { id: "b0", status: "succeeded", error: "" },
};
const int8: Candidate = {
  key: "int8", method: "int8", parent: "fp32", status: "ready", accuracy: 0.975, evaluated_on: "test", accuracy_drop_pt: 0.5, within_budget: true,
  size_bytes: 1_000_000, latency: { p50_ms: 4, p99_ms: 6 }, params: { calibration_method: "minmax", per_channel: true },
};
const res64: Candidate = {
  key: "res64", method: "distilled", parent: "fp32", status: "ready", accuracy: 0.95, evaluated_on: "test", accuracy_drop_pt: 3, within_budget: false,
  size_bytes: 4_000_000, latency: { p50_ms: 5, p99_ms: 7 }, params: { resolution: 64, pruning_ratio: 0 },
};
const pending: Candidate = { ...int8, key: "res64-int8", latency: null, benchmark: { id: "b3", status: "pending", error: "" } };

describe("candidate names", () => {
  it("say what each candidate is in plain words", () => {
    expect(describeCandidate(t, fp32)).toBe("Float reference");
    expect(describeCandidate(t, int8)).toBe("INT8 (8-bit weights and activations)");
    expect(describeCandidate(t, res64)).toBe("Distilled student at 64 px");
    // a text classifier's INT8 is dynamic; "int8-matmul" leaves the embedding tables float
    const textInt8 = { key: "int8", method: "int8", preprocessing: {}, params: { quantization: "dynamic", op_types: ["MatMul", "Gather"] } };
    const textMatMul = { key: "int8-matmul", method: "int8", preprocessing: {}, params: { quantization: "dynamic", op_types: ["MatMul"] } };
    expect(describeCandidate(t, textInt8 as Candidate)).toBe("INT8, dynamic (8-bit tables and weights)");
    expect(describeCandidate(t, textMatMul as Candidate)).toBe("INT8, dynamic, matrix weights only (tables stay float)");
    expect(isTextCandidate(textMatMul as Candidate)).toBe(true);
    expect(isTextCandidate(res64)).toBe(false);
    expect(describeCandidate(t, { key: "pruned50", method: "distilled", params: { resolution: 96, pruning_ratio: 0.5 } })).toBe("Pruned 50 % + distilled");
    expect(describeCandidate(t, { key: "pruned30-res64", method: "distilled", params: { resolution: 64, pruning_ratio: 0.3 } })).toBe(
      "Pruned 30 % + distilled at 64 px",
    );
    expect(describeCandidate(t, { key: "res64-int8", method: "int8", parent: "res64", params: { resolution: 64, pruning_ratio: 0 } })).toBe(
      "Distilled student at 64 px, then INT8",
    );
    expect(describeCandidate(t, { key: "int8-percentile", method: "int8", params: { calibration_method: "percentile" } })).toBe(
      "INT8 (8-bit weights and activations), percentile calibration",
    );
    expect(describeCandidate(t, { key: "fp16", method: "fp16" })).toBe("FP16 (half precision)");
  });

  it("read a skipped student's key, which has no params", () => {
    expect(candidateKind({ key: "pruned30-res64", method: "distilled", status: "skipped" })).toEqual({
      base: "pruned", pruned: 30, resolution: 64, int8: false, percentile: false,
    });
    expect(describeCandidate(t, { key: "res64", method: "distilled", status: "skipped" })).toBe("Distilled student at 64 px");
  });

  it("are in Chinese too", async () => {
    await i18n.changeLanguage("zh-CN");
    expect(describeCandidate(t, fp32)).toBe("浮点参考模型");
    expect(describeCandidate(t, res64)).toBe("64 像素的蒸馏学生模型");
  });
});

describe("figures against the float reference", () => {
  it("speed-up is the reference's p50 over the candidate's; size ratio likewise", () => {
    expect(speedUp(int8, fp32)).toBe(2.5);
    expect(speedUp(pending, fp32)).toBeNull();
    expect(speedUp(int8, undefined)).toBeNull();
    expect(sizeRatio(int8, fp32)).toBe(4);
    expect(sizeRatio({ key: "x" }, fp32)).toBeNull();
  });

  it("formats sizes, times, ratios and points", () => {
    expect(formatMB(1_048_576 * 3.456)).toBe("3.46 MB");
    expect(formatMB(80_000)).toBe("0.08 MB");
    expect(formatMB(1_048_576 * 13.62)).toBe("13.6 MB");
    expect(formatMs(0.4213)).toBe("0.42");
    expect(formatMs(12.34)).toBe("12.3");
    expect(formatMs(245.4)).toBe("245");
    expect(formatRatio(3.94)).toBe("3.9×");
    expect(formatPoints(0.44)).toBe("0.4");
    expect(formatPoints(-0.26)).toBe("−0.3");
    expect(formatPoints(-0.01)).toBe("0.0");
  });

  it("beyond the budget: as the server judged it, never the reference", () => {
    expect(beyondBudget(res64, 1)).toBe(true);
    expect(beyondBudget(int8, 1)).toBe(false);
    expect(beyondBudget({ ...fp32, within_budget: false }, 1)).toBe(false);
    expect(beyondBudget({ key: "res64", status: "ready", accuracy_drop_pt: 2 }, 1)).toBe(true);
    expect(budgetFloor(fp32, 1)).toBeCloseTo(97);
    expect(budgetFloor(undefined, 1)).toBeNull();
  });
});

describe("progress", () => {
  it("says the phase, the candidate and the student's epoch", () => {
    expect(progressText(t, {}, "QUEUED", "")).toBe("Waiting for a compression worker…");
    expect(progressText(t, { phase: "student", candidate: "res64", epoch: 5, epochs: 20 }, "RUNNING", "cam")).toBe("Training student res64 — epoch 5/20");
    expect(progressText(t, { phase: "student", candidate: "res64", epoch: 0 }, "RUNNING", "cam")).toBe("Training student res64");
    expect(progressText(t, { phase: "int8", candidate: "res64-int8" }, "RUNNING", "cam")).toBe("Quantizing res64-int8 to INT8");
    expect(progressText(t, { phase: "measure" }, "RUNNING", "camera-1")).toBe("Measuring the candidates on camera-1");
    expect(progressText(t, { phase: "measure" }, "RUNNING", "")).toBe("Measuring the candidates on the compression worker");
  });

  it("keeps the bar under 90 % until the measuring, which never moves it back", () => {
    expect(progressPercent({ phase: "student", fraction: 0.5 }, "RUNNING")).toBe(45);
    expect(progressPercent({ phase: "student", fraction: 1 }, "RUNNING")).toBe(90);
    expect(progressPercent({ phase: "measure", fraction: 0.9 }, "RUNNING")).toBe(90);
    expect(progressPercent({ phase: "done", fraction: 1 }, "RUNNING")).toBe(100);
    expect(progressPercent({}, "SUCCEEDED")).toBe(100);
    expect(progressPercent({}, "QUEUED")).toBe(0);
  });
});

describe("the Pareto chart", () => {
  const skipped: Candidate = { key: "pruned50", method: "distilled", status: "skipped", reason: "not enough time left in the budget" };
  const failed: Candidate = { ...int8, key: "int8-percentile", status: "failed", latency: { p50_ms: 3 } };

  it("plots the measured, ready candidates only, coloured by budget, the pick marked", () => {
    const points = paretoPoints([fp32, int8, res64, pending, skipped, failed], "int8", 1);
    expect(points.map((p) => [p.key, p.category, p.picked])).toEqual([
      ["fp32", "reference", false],
      ["int8", "within", true],
      ["res64", "beyond", false],
    ]);
    const [ref, small] = points;
    expect(ref).toMatchObject({ x: 10, y: 98, p99: 14 });
    expect(small?.speedUp).toBe(2.5);
    // area ~ size: a file 4x smaller has half the diameter's share
    expect(ref?.symbolSize).toBe(36);
    expect(small?.symbolSize).toBe(22);
  });

  it("draws a series per category, the floor line and tooltips", () => {
    const texts: ParetoTexts = {
      x: "p50 (ms)", y: "Accuracy (%)", picked: "Picked", floor: "budget floor 97.0%",
      series: { reference: "Float reference", within: "Within budget", beyond: "Beyond budget" },
      tooltip: (p) => [p.key, `${p.y}`],
    };
    const option = paretoOption(paretoPoints([fp32, int8, res64], "int8", 1), 97, texts) as {
      series: { name: string; data: { name: string; label: { formatter: string } }[]; markLine?: { data: { yAxis: number }[] } }[];
      tooltip: { formatter: (params: unknown) => string };
      yAxis: { min: number; max: number };
      xAxis: { min: number; max: number };
    };
    expect(option.series.map((s) => [s.name, s.data.map((d) => d.name)])).toEqual([
      ["Float reference", ["fp32"]],
      ["Within budget", ["int8"]],
      ["Beyond budget", ["res64"]],
    ]);
    expect(option.series[0]?.markLine?.data).toEqual([{ yAxis: 97 }]);
    expect(option.series[1]?.data[0]?.label.formatter).toBe("int8 ★ Picked");
    expect(option.tooltip.formatter({ data: { tooltipLines: ["a<b", "c"] } })).toBe("a&lt;b<br/>c");
    expect(option.yAxis.min).toBeLessThanOrEqual(95);
    expect(option.yAxis.max).toBeGreaterThanOrEqual(98);
    // p50 from 4 to 10 ms: no point on an axis
    expect(option.xAxis).toMatchObject({ min: 3.4, max: 11 });
  });
});
