import { describe, expect, it } from "vitest";

import { classesWithoutEvaluation, imbalanceRatio, reportImbalance } from "./imbalance";

const row = (label: string, support: number) => ({ label, index: 0, precision: 1, recall: 1, f1: 1, support });

describe("imbalanceRatio", () => {
  it("is the largest / smallest support from 3x on, else null", () => {
    expect(imbalanceRatio([row("a", 90), row("b", 30)])).toBe(3);
    expect(imbalanceRatio([row("a", 89), row("b", 30)])).toBeNull();
    expect(imbalanceRatio([row("a", 100), row("b", 10), row("c", 0)])).toBe(10); // c not evaluated
    expect(imbalanceRatio([row("a", 100)])).toBeNull();
  });
});

describe("reportImbalance", () => {
  // classes 40/4/20 in training; the test split left class "1" out entirely (6 and 3 images)
  const perClass = [row("0", 6), row("1", 0), row("2", 3)];

  it("takes the report's own word, judged on the training split, with its ratio", () => {
    expect(reportImbalance({ per_class: perClass, imbalanced: true, train_class_counts: [40, 4, 20] })).toEqual({ imbalanced: true, ratio: 10 });
    expect(reportImbalance({ per_class: perClass, imbalanced: true })).toEqual({ imbalanced: true, ratio: null });
    // the test supports alone (6 vs 3) would say balanced
    expect(reportImbalance({ per_class: perClass, imbalanced: false, train_class_counts: [10, 10, 10] })).toEqual({ imbalanced: false, ratio: null });
    expect(reportImbalance({ per_class: [row("a", 100), row("b", 10)], imbalanced: false })).toEqual({ imbalanced: false, ratio: null });
  });

  it("falls back to the supports for older reports", () => {
    expect(reportImbalance({ per_class: perClass })).toEqual({ imbalanced: false, ratio: null });
    expect(reportImbalance({ per_class: [row("a", 90), row("b", 30)] })).toEqual({ imbalanced: true, ratio: 3 });
  });
});

describe("classesWithoutEvaluation", () => {
  const rows = [
    { ...row("0", 6), index: 0 },
    { ...row("1", 0), index: 1 },
    { ...row("2", 0), index: 2 },
  ];

  it("names the trained classes the split holds no image of", () => {
    expect(classesWithoutEvaluation({ per_class: rows, train_class_counts: [40, 4, 20] })).toEqual(["1", "2"]);
    // a class with no training image either is not the report's to explain
    expect(classesWithoutEvaluation({ per_class: rows, train_class_counts: [40, 0, 20] })).toEqual(["2"]);
    // older reports without training counts: every class of the model counts
    expect(classesWithoutEvaluation({ per_class: rows })).toEqual(["1", "2"]);
    expect(classesWithoutEvaluation({ per_class: rows.slice(0, 1), train_class_counts: [40] })).toEqual([]);
  });
});
