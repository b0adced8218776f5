import { describe, expect, it } from "vitest";

import { cellSamples, heatmapData, heatmapSeries, maxOffDiagonal } from "./confusion";

const labels = ["cat", "dog"];
const report = {
  misclassified: [
    { sample_id: "s2", true: "cat", predicted: "dog", probability: 0.7 },
    { sample_id: "s4", true: "dog", predicted: "cat", probability: 0.6 },
  ],
  predictions: [
    { sample_id: "s1", predicted: 0, probability: 0.9 },
    { sample_id: "s2", predicted: 1, probability: 0.7 },
    { sample_id: "s3", predicted: 1, probability: 0.95 },
    { sample_id: "s4", predicted: 0, probability: 0.6 },
  ],
};

describe("confusion matrix cells", () => {
  it("lists the misclassified samples of an off-diagonal cell", () => {
    expect(cellSamples(report, labels, 0, 1)).toEqual([{ sample_id: "s2", true: "cat", predicted: "dog", probability: 0.7 }]);
    expect(cellSamples(report, labels, 1, 0).map((s) => s.sample_id)).toEqual(["s4"]);
  });

  it("lists the correct predictions of a diagonal cell", () => {
    expect(cellSamples(report, labels, 0, 0)).toEqual([{ sample_id: "s1", true: "cat", predicted: "cat", probability: 0.9 }]);
    expect(cellSamples(report, labels, 1, 1).map((s) => s.sample_id)).toEqual(["s3"]);
  });

  it("falls back to the validation samples' true labels without predictions", () => {
    const trueLabels = new Map([["s1", "cat"], ["s2", "cat"], ["s3", "dog"]]);
    const old = { misclassified: report.misclassified, predictions: [] };
    expect(cellSamples(old, labels, 0, 0, trueLabels).map((s) => s.sample_id)).toEqual(["s1"]);
    expect(cellSamples(old, labels, 0, 0)).toEqual([]);
  });

  it("ignores cells outside the labels", () => {
    expect(cellSamples(report, labels, 2, 0)).toEqual([]);
  });

  it("turns the matrix into heat map points", () => {
    const matrix = [[5, 1], [3, 7]];
    expect(heatmapData(matrix)).toEqual([[0, 0, 5], [1, 0, 1], [0, 1, 3], [1, 1, 7]]);
    expect(maxOffDiagonal(matrix)).toBe(3);
    expect(maxOffDiagonal([[4]])).toBe(1);
  });
});

describe("heatmapSeries", () => {
  it("does not draw the diagonal cell of a class absent from the split as correct", () => {
    // class 1 has no image in the split: its row is empty
    const { errors, correct, absent } = heatmapSeries([
      [5, 0, 1],
      [0, 0, 0],
      [0, 2, 3],
    ]);
    expect(correct).toEqual([
      [0, 0, 5],
      [2, 2, 3],
    ]);
    expect(absent).toEqual([[1, 1, 0]]);
    expect(errors).toHaveLength(6);
    expect(errors.every(([col, row]) => col !== row)).toBe(true);
  });
});
