// The confusion matrix of a classification report as the report page uses it. Rows are true
// classes, columns predicted ones (workers/ml/evaluation.py), in the order of `labels`.
import type { ClassificationReport } from "../../api/queries/training";

export interface CellSample {
  sample_id: string;
  true: string;
  predicted: string;
  probability: number | null;
}

/**
 * The samples behind cell (row = true class, col = predicted class).
 *
 * Off the diagonal they are the report's `misclassified` entries with that pair. On it they are
 * the `predictions` of that class that are not misclassified (predicted == true); when a report
 * has no `predictions`, `trueLabels` (sample id -> true label name, from the version's
 * validation samples) stands in: the samples of that class not misclassified.
 */
export function cellSamples(
  report: Pick<ClassificationReport, "misclassified" | "predictions">,
  labels: string[],
  row: number,
  col: number,
  trueLabels?: Map<string, string>,
): CellSample[] {
  const trueName = labels[row];
  const predictedName = labels[col];
  if (trueName === undefined || predictedName === undefined) return [];
  if (row !== col) {
    return report.misclassified
      .filter((m) => m.true === trueName && m.predicted === predictedName)
      .map((m) => ({ sample_id: m.sample_id, true: m.true, predicted: m.predicted, probability: m.probability }));
  }
  const wrong = new Set(report.misclassified.map((m) => m.sample_id));
  if (report.predictions.length > 0) {
    return report.predictions
      .filter((p) => p.predicted === col && !wrong.has(p.sample_id))
      .map((p) => ({ sample_id: p.sample_id, true: trueName, predicted: predictedName, probability: p.probability }));
  }
  if (!trueLabels) return [];
  return [...trueLabels.entries()]
    .filter(([id, name]) => name === trueName && !wrong.has(id))
    .map(([id]) => ({ sample_id: id, true: trueName, predicted: predictedName, probability: null }));
}

/** The heat map's points: [column (predicted), row (true), count]. */
export function heatmapData(matrix: number[][]): [number, number, number][] {
  return matrix.flatMap((cells, row) => cells.map((count, col) => [col, row, count] as [number, number, number]));
}

/** The largest count off the diagonal (the colour scale's top, so errors stand out); at least 1. */
export function maxOffDiagonal(matrix: number[][]): number {
  let max = 0;
  matrix.forEach((cells, row) => cells.forEach((count, col) => {
    if (row !== col) max = Math.max(max, count);
  }));
  return Math.max(1, max);
}

/**
 * The heat map's points in three series: `errors` off the diagonal, `correct` on it, and
 * `absent` the diagonal cells of classes with no sample in the evaluated split (an empty row):
 * nothing was classified correctly there, so they are not drawn as correct.
 */
export function heatmapSeries(matrix: number[][]): {
  errors: [number, number, number][];
  correct: [number, number, number][];
  absent: [number, number, number][];
} {
  const empty = matrix.map((cells) => cells.every((count) => count === 0));
  const points = heatmapData(matrix);
  return {
    errors: points.filter(([col, row]) => col !== row),
    correct: points.filter(([col, row]) => col === row && !empty[row]),
    absent: points.filter(([col, row]) => col === row && empty[row]),
  };
}
