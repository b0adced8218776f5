import { describe, expect, it } from "vitest";

import { headlineMetric, metricNames, percent } from "./headlineMetric";

const classifier = "image_classification";
const detector = "object_detection";

describe("headlineMetric", () => {
  it("a classifier evaluated on test: its test accuracy and macro-F1, named so", () => {
    const metrics = { evaluated_on: "test", val_accuracy: 0.99, macro_f1: 0.98, test_accuracy: 0.912, test_macro_f1: 0.9, classes_not_evaluated: ["8"] };
    expect(headlineMetric({ task_type: classifier, metrics })).toEqual({
      kind: "accuracy", split: "test", value: 0.912, secondary: 0.9, notEvaluated: ["8"], labelKey: "training.testAccuracy",
    });
  });

  it("a classifier without a test split (or before evaluated_on existed): validation accuracy", () => {
    expect(headlineMetric({ task_type: classifier, metrics: { evaluated_on: "val", val_accuracy: 0.9, macro_f1: 0.875 } })).toEqual({
      kind: "accuracy", split: "val", value: 0.9, secondary: 0.875, notEvaluated: [], labelKey: "training.valAccuracy",
    });
    expect(headlineMetric({ task_type: classifier, metrics: { val_accuracy: 0.8 } })).toMatchObject({ split: "val", value: 0.8, secondary: null });
    // "test" said but no test figure: the validation one, not a missing test figure
    expect(headlineMetric({ task_type: classifier, metrics: { evaluated_on: "test", val_accuracy: 0.7 } })).toMatchObject({ split: "val", value: 0.7 });
  });

  it("a text classifier without a test split: its validation macro-F1 (text jobs write val_macro_f1)", () => {
    const metrics = { evaluated_on: "val", val_accuracy: 0.84, val_macro_f1: 0.83, winner: "linear", family: "linear" };
    expect(headlineMetric({ task_type: "text_classification", metrics })).toEqual({
      kind: "accuracy", split: "val", value: 0.84, secondary: 0.83, notEvaluated: [], labelKey: "training.valAccuracy",
    });
  });

  it("a detector evaluated on test: test mAP@0.5, with mAP@0.5:0.95 beside it, not validation's", () => {
    const metrics = { evaluated_on: "test", val_map50: 0.62, val_map: 0.4, test_map50: 0.58, test_map: 0.35, score_threshold: 0.3, best_step: 160 };
    expect(headlineMetric({ task_type: detector, metrics })).toEqual({
      kind: "map50", split: "test", value: 0.58, secondary: 0.35, notEvaluated: [], labelKey: "training.testMap50",
    });
  });

  it("a detector without a test split: validation mAP@0.5", () => {
    const metrics = { evaluated_on: "val", val_map50: 0.62, val_map: 0.4, score_threshold: 0.3 };
    expect(headlineMetric({ task_type: detector, metrics })).toEqual({
      kind: "map50", split: "val", value: 0.62, secondary: 0.4, notEvaluated: [], labelKey: "training.valMap50",
    });
    expect(headlineMetric({ task_type: detector, metrics: { evaluated_on: "test", val_map50: 0.5 } })).toMatchObject({ split: "val", value: 0.5, secondary: null });
  });

  it("a detector is never judged by accuracy, nor a classifier by mAP", () => {
    expect(headlineMetric({ task_type: detector, metrics: { val_accuracy: 0.9, test_accuracy: 0.9, evaluated_on: "test" } })).toBeNull();
    expect(headlineMetric({ task_type: classifier, metrics: { val_map50: 0.6, test_map50: 0.5, evaluated_on: "test" } })).toBeNull();
  });

  it("no figures yet: null, whatever the metrics hold", () => {
    for (const task_type of [classifier, detector]) {
      expect(headlineMetric({ task_type, metrics: {} })).toBeNull();
      expect(headlineMetric({ task_type, metrics: null })).toBeNull();
      expect(headlineMetric({ task_type })).toBeNull();
      expect(headlineMetric({ task_type, metrics: "not an object" })).toBeNull();
      expect(headlineMetric({ task_type, metrics: { evaluated_on: "test", test_map50: null, test_accuracy: null } })).toBeNull();
    }
  });

  it("names each task's figures for columns and statistics", () => {
    expect(metricNames(detector)).toEqual({ kind: "map50", nameKey: "report.detection.map50", secondaryKey: "report.detection.map" });
    expect(metricNames(classifier)).toEqual({ kind: "accuracy", nameKey: "report.accuracy", secondaryKey: "report.macroF1" });
    expect(percent(0.912)).toBe("91.2%");
    expect(percent(null)).toBe("—");
  });
});
