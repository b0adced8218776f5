// When a report's classes are imbalanced, accuracy mostly measures the large classes: the report
// page then leads with per-class recall and macro-F1. Pure, tested in imbalance.test.ts.
import type { ClassificationReport, PerClassRow } from "../../api/queries/training";

/** The largest class at least this many times the smallest (as the platform's class_imbalance flag). */
export const IMBALANCE_RATIO = 3;

/** Largest / smallest of the positive counts; null with fewer than two. */
function ratioOf(counts: number[]): number | null {
  const present = counts.filter((n) => n > 0);
  return present.length < 2 ? null : Math.max(...present) / Math.min(...present);
}

/**
 * Largest support / smallest support among the evaluated classes (support > 0) when it is at
 * least IMBALANCE_RATIO, else null (balanced, or fewer than two classes evaluated).
 */
export function imbalanceRatio(rows: PerClassRow[]): number | null {
  const ratio = ratioOf(rows.map((r) => r.support));
  return ratio !== null && ratio >= IMBALANCE_RATIO ? ratio : null;
}

/**
 * Whether the report's classes are imbalanced, and by how much (largest / smallest class; null
 * when not known). Newer reports say so themselves, judged on the training split's class counts
 * (a test split may leave out a small class entirely); older ones are judged on the supports.
 */
export function reportImbalance(
  report: Pick<ClassificationReport, "per_class" | "imbalanced" | "train_class_counts">,
): { imbalanced: boolean; ratio: number | null } {
  if (typeof report.imbalanced === "boolean") {
    return { imbalanced: report.imbalanced, ratio: report.imbalanced ? ratioOf(report.train_class_counts ?? []) : null };
  }
  const ratio = imbalanceRatio(report.per_class);
  return { imbalanced: ratio !== null, ratio };
}

/** A class with no image in the evaluated split: no precision, recall or F1 to speak of. */
export const notEvaluated = (row: { support: number }) => row.support === 0;

/**
 * The classes the model learned (images in the training split; every class when the report does
 * not give the training counts) that have no image in the evaluated split: the report's figures
 * say nothing about them, and with one class left a model that answers it every time scores 100 %.
 */
export function classesWithoutEvaluation(
  report: Pick<ClassificationReport, "per_class" | "train_class_counts">,
): string[] {
  const trained = report.train_class_counts;
  return report.per_class
    .filter((row) => notEvaluated(row) && (!trained || (trained[row.index] ?? 0) > 0))
    .map((row) => row.label);
}
