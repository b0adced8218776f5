// A detector's evaluation report in the shape workers/ml/detection/evaluation.py writes, for the
// report page's tests: 3 test images, classes car, person and bike (no bike in the split), the
// errors in the engine's order (wrong detections by score, then missed objects), and the
// version's frozen items of those images.
import type { DetectionReport } from "../../api/queries/training";
import type { VersionItem } from "../../api/queries/versions";

export const LABELS = ["car", "person", "bike"];

const recall = Array.from({ length: 101 }, (_, i) => i / 100);

export const DETECTION_REPORT: DetectionReport = {
  task: "object_detection",
  split: "test",
  n: 3,
  boxes: 5,
  map50: 0.725,
  map: 0.41,
  score_threshold: 0.35,
  precision: 0.6,
  recall: 0.6,
  f1: 0.6,
  per_class: [
    { label: "car", index: 0, ap50: 0.9, ap: 0.55, support: 3, precision: 0.75, recall: 0.667 },
    { label: "person", index: 1, ap50: 0.55, ap: 0.27, support: 2, precision: 0.333, recall: 0.5 },
    { label: "bike", index: 2, ap50: null, ap: null, support: 0, precision: 0, recall: 0 },
  ],
  pr_curves: [
    { label: "car", index: 0, recall, precision: recall.map((r) => (r <= 0.67 ? 1 : null)) },
    { label: "person", index: 1, recall, precision: recall.map((r) => (r <= 0.5 ? 0.5 : null)) },
  ],
  errors: [
    { sample_id: "s2", kind: "wrong_class", box: [50, 40, 90, 120], label: "person", true_label: "car", score: 0.81 },
    { sample_id: "s1", kind: "false_positive", box: [10, 10, 30, 30], label: "car", true_label: null, score: 0.62 },
    { sample_id: "s2", kind: "false_positive", box: [0, 0, 5, 5], label: "person", true_label: null, score: 0.4 },
    { sample_id: "s3", kind: "missed", box: [100, 20, 120, 60], label: null, true_label: "person", score: null },
    { sample_id: "s1", kind: "missed", box: [60, 60, 160, 140], label: null, true_label: "car", score: null },
  ],
  error_counts: { false_positive: 2, wrong_class: 1, missed: 2 },
  predictions: [
    { sample_id: "s1", boxes: [[10, 10, 30, 30, 0, 0.62], [60, 10, 100, 50, 0, 0.9]] },
    { sample_id: "s2", boxes: [[50, 40, 90, 120, 1, 0.81], [0, 0, 5, 5, 1, 0.4]] },
    { sample_id: "s3", boxes: [] },
  ],
  validation: { map50: 0.8, map: 0.45, n: 4, f1: 0.7 },
  skipped_samples: [],
};

export const VERSION_ITEMS: VersionItem[] = [
  { sample_id: "s1", split: "test", width: 200, height: 150, class_index: null, boxes: [[60, 10, 100, 50, 0], [60, 60, 160, 140, 0]] },
  { sample_id: "s2", split: "test", width: 200, height: 150, class_index: null, boxes: [[50, 40, 90, 120, 0]] },
  { sample_id: "s3", split: "test", width: 200, height: 150, class_index: null, boxes: [[100, 20, 120, 60, 1]] },
];
