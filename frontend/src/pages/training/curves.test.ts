import { describe, expect, it } from "vitest";

import { curvesOption, isOutputLayerPoint, phaseRuns, tickPositions, validationMetric, type CurveTexts } from "./curves";

const texts: CurveTexts = {
  loss: "Loss",
  valLoss: "Validation loss",
  valAccuracy: "Validation accuracy",
  valMap50: "Validation mAP@0.5",
  epoch: "Epoch",
  step: "Step",
  kept: "kept",
  outputLayer: "output layer",
  outputLayerTitle: "Output layer (backbone frozen)",
  stage: (phase) => (phase === "head" ? "output layer only" : "all layers"),
  entryTitle: (h) => `Epoch ${h.epoch}`,
};

const history = [
  { phase: "head", epoch: 1, loss: 2.3, val_loss: 1.9, val_accuracy: 0.42 },
  { phase: "head", epoch: 2, loss: 1.1, val_loss: 0.9, val_accuracy: 0.8 },
  { phase: "finetune", epoch: 1, loss: 0.4, val_loss: 0.5, val_accuracy: 0.1 },
  { phase: "finetune", epoch: 2, loss: 0.04, val_loss: 0, val_accuracy: 0.965 },
];

describe("curvesOption", () => {
  const option = curvesOption(history, 1, texts);

  it("puts both losses on a log axis of their own and accuracy on 0..100 %", () => {
    expect(option.yAxis[0]).toMatchObject({ type: "log", name: "Loss" });
    expect(option.yAxis[1]).toMatchObject({ type: "value", min: 0, max: 100 });
    const [loss, valLoss, accuracy] = option.series;
    expect([loss!.yAxisIndex, valLoss!.yAxisIndex, accuracy!.yAxisIndex]).toEqual([0, 0, 1]);
    expect(loss!.data.map((p) => p[1])).toEqual([2.3, 1.1, 0.4, 0.04]);
    expect(valLoss!.data.map((p) => p[1])).toEqual([1.9, 0.9, 0.5, null]); // log 0: not drawn
    expect(accuracy!.data.map((p) => p[1])).toEqual([42, 80, 10, 96.5]);
  });

  it("marks the kept epoch and shades each phase, named without 'probe'", () => {
    expect(option.series[2]).toMatchObject({ markLine: { data: [{ xAxis: 2 }], label: { formatter: "kept" } } });
    const areas = option.series[0]!.markArea!.data;
    expect(areas.map(([from, to]) => [from.name, from.xAxis, to.xAxis])).toEqual([
      ["output layer only", 0.5, 2.5],
      ["all layers", 2.5, 4.5],
    ]);
    expect(JSON.stringify(option)).not.toMatch(/probe/i);
    // ticks are each phase's own epoch numbers
    const label = option.xAxis.axisLabel.formatter;
    expect([1, 2, 3, 4, 2.5].map(label)).toEqual(["1", "2", "1", "2", ""]);
    // on the entries themselves, not from the axis' min (0.5) on
    expect(option.xAxis.axisLabel.customValues).toEqual([1, 2, 3, 4]);
    expect(option.xAxis.axisTick.customValues).toEqual([1, 2, 3, 4]);
  });

  it("has no kept mark while the kept epoch is unknown", () => {
    expect(curvesOption(history, -1, texts).series[2]).not.toHaveProperty("markLine");
    expect(phaseRuns([])).toEqual([]);
  });
});

describe("the output-layer point", () => {
  // the engine's history: the output layer as one entry after 40 quick epochs, then all layers
  const engine = [
    { phase: "head", epoch: 40, epochs: 40, loss: 0.9, val_loss: 0.8, val_accuracy: 0.8 },
    { phase: "finetune", epoch: 1, loss: 0.5, val_loss: 0.4, val_accuracy: 0.9 },
    { phase: "finetune", epoch: 2, loss: 0.3, val_loss: 0.3, val_accuracy: 0.95 },
    { phase: "finetune", epoch: 3, loss: 0.2, val_loss: 0.2, val_accuracy: 0.96 },
  ];

  it("is labelled output layer on the axis and in the tooltip, not epoch 40", () => {
    const option = curvesOption(engine, 3, texts);
    expect([1, 2, 3, 4].map(option.xAxis.axisLabel.formatter)).toEqual(["output layer", "1", "2", "3"]);
    expect(option.xAxis.axisPointer.label.formatter({ value: 1.2 })).toBe("output layer");
    const point = (dataIndex: number) => [{ dataIndex, marker: "", seriesName: "Loss", value: [dataIndex + 1, 0.5] as [number, number | null] }];
    expect(option.tooltip.formatter(point(0))).toMatch(/^Output layer \(backbone frozen\)<br\/>/);
    expect(option.tooltip.formatter(point(1))).toMatch(/^Epoch 1<br\/>/);
  });

  it("keeps the numbers of older jobs' output-layer epochs", () => {
    expect(isOutputLayerPoint(history, 0)).toBe(false);
    expect(isOutputLayerPoint(engine, 0)).toBe(true);
    expect(isOutputLayerPoint(engine, 1)).toBe(false);
  });
});

describe("tickPositions", () => {
  it("labels every entry when few, else every k-th of each phase from its first epoch", () => {
    expect(tickPositions(history)).toEqual([1, 2, 3, 4]);
    const long = [
      ...Array.from({ length: 40 }, (_, i) => ({ phase: "head", epoch: i + 1 })),
      ...Array.from({ length: 5 }, (_, i) => ({ phase: "finetune", epoch: i + 1 })),
    ];
    const ticks = tickPositions(long);
    expect(ticks.length).toBeLessThanOrEqual(22);
    expect(ticks.slice(0, 3)).toEqual([1, 4, 7]);
    expect(ticks).toContain(41); // the first fine-tuning epoch
    expect(tickPositions([])).toEqual([]);
  });
});

describe("an object detector's curves", () => {
  // the detection engine's history: a validation every few steps, mAP@0.5 and no epoch
  const steps = [
    { phase: "train", step: 40, steps: 200, loss: 1.9, val_map50: 0.12, val_map: 0.04 },
    { phase: "train", step: 80, steps: 200, loss: 1.2, val_map50: 0.45, val_map: 0.2 },
    { phase: "train", step: 120, steps: 200, loss: 0.8, val_map50: 0.61, val_map: 0.3 },
  ];
  const option = curvesOption(steps, 2, { ...texts, entryTitle: (h) => `Step ${h.step}` });

  it("reads validation mAP@0.5 on the percent axis, by step, without phase bands", () => {
    expect(validationMetric(steps)).toBe("val_map50");
    expect(validationMetric(history)).toBe("val_accuracy");
    expect(option.yAxis[1]).toMatchObject({ name: "Validation mAP@0.5", min: 0, max: 100 });
    expect(option.series[2]).toMatchObject({ name: "Validation mAP@0.5", markLine: { data: [{ xAxis: 3 }] } });
    expect(option.series[2]!.data.map((p) => p[1])).toEqual([12, 45, 61]);
    expect(option.series[0]!.markArea!.data).toEqual([]);
    expect(option.xAxis).toMatchObject({ name: "Step" });
    expect([1, 2, 3].map(option.xAxis.axisLabel.formatter)).toEqual(["40", "80", "120"]);
    const tip = option.tooltip.formatter([{ dataIndex: 1, marker: "", seriesName: "Validation mAP@0.5", value: [2, 45] }]);
    expect(tip).toBe("Step 80<br/>Validation mAP@0.5: 45.0%");
  });
});
