// The one figure a finished training job or a model version is judged by, whatever its task:
// an image classifier's accuracy, an object detector's mAP@0.5; on the test split when the
// evaluation used one (never used to choose the model), else on validation. The models list, a
// version's page and the training jobs list all show it through here.
import { headlineAccuracy, metricsOf, type TrainingMetrics } from "../../api/queries/training";

export type HeadlineKind = "accuracy" | "map50";

export interface HeadlineMetric {
  kind: HeadlineKind;
  /** the split `value` and `secondary` were computed on */
  split: "test" | "val";
  /** 0..1 */
  value: number;
  /** on the same split: macro-F1 (classification) or mAP@0.5:0.95 (detection), when known */
  secondary: number | null;
  /** classes the model learned that the split holds no image of (classification only) */
  notEvaluated: string[];
  /** the figure named with its split: "Test accuracy", "Validation mAP@0.5" */
  labelKey: "training.testAccuracy" | "training.valAccuracy" | "training.testMap50" | "training.valMap50";
}

/** The names of a task's figures, for a column or a statistic: "Accuracy" / "Macro-F1", "mAP@0.5" / "mAP@0.5:0.95". */
export interface MetricNames {
  kind: HeadlineKind;
  nameKey: "report.accuracy" | "report.detection.map50";
  secondaryKey: "report.macroF1" | "report.detection.map";
}

export function isDetectionTask(task: string | null | undefined): boolean {
  return task === "object_detection";
}

export function metricNames(task: string | null | undefined): MetricNames {
  return isDetectionTask(task)
    ? { kind: "map50", nameKey: "report.detection.map50", secondaryKey: "report.detection.map" }
    : { kind: "accuracy", nameKey: "report.accuracy", secondaryKey: "report.macroF1" };
}

const num = (x: unknown): number | null => (typeof x === "number" && Number.isFinite(x) ? x : null);

function detectionHeadline(m: TrainingMetrics): HeadlineMetric | null {
  const test = num(m.test_map50);
  if (m.evaluated_on === "test" && test !== null) {
    return { kind: "map50", split: "test", value: test, secondary: num(m.test_map), notEvaluated: [], labelKey: "training.testMap50" };
  }
  const val = num(m.val_map50);
  if (val === null) return null;
  return { kind: "map50", split: "val", value: val, secondary: num(m.val_map), notEvaluated: [], labelKey: "training.valMap50" };
}

/**
 * The headline figure of a version or a job from its `task_type` and `metrics`; null when it has
 * none yet (a running job, a failed one, metrics from before evaluation).
 */
export function headlineMetric(item: { task_type?: string | null; metrics?: unknown }): HeadlineMetric | null {
  const metrics = metricsOf(item);
  if (isDetectionTask(item.task_type)) return detectionHeadline(metrics);
  const h = headlineAccuracy(metrics);
  if (!h) return null;
  return {
    kind: "accuracy",
    split: h.split,
    value: h.accuracy,
    secondary: h.macroF1,
    notEvaluated: h.notEvaluated,
    labelKey: h.split === "test" ? "training.testAccuracy" : "training.valAccuracy",
  };
}

/** 0.912 -> "91.2%"; null -> "—". */
export function percent(value: number | null): string {
  return value === null ? "—" : `${(100 * value).toFixed(1)}%`;
}
