// When a report's classes are imbalanced, accuracy mostly measures the large classes: the report
// page then leads with per-class recall and macro-F1. Pure, tested in imbalance.test.ts.
import type { PerClassRow } from "../../api/queries/training";

/** The largest class at least this many times the smallest (as the platform's class_imbalance flag). */
export const IMBALANCE_RATIO = 3;

/**
 * Largest support / smallest support among the evaluated classes (support > 0) when it is at
 * least IMBALANCE_RATIO, else null (balanced, or fewer than two classes evaluated).
 */
export function imbalanceRatio(rows: PerClassRow[]): number | null {
  const supports = rows.map((r) => r.support).filter((n) => n > 0);
  if (supports.length < 2) return null;
  const ratio = Math.max(...supports) / Math.min(...supports);
  return ratio >= IMBALANCE_RATIO ? ratio : null;
}
