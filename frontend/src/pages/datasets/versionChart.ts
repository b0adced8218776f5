// A dataset version's class balance as chart data: one bar series per split that has samples.
import { SPLITS, type Split, type VersionStats } from "../../api/queries/versions";

export interface BalanceSeries {
  split: Split;
  counts: number[];
}

/** Classes in the version's label order (the model's output order), then any the stats add. */
export function classBalance(stats: VersionStats, labels: string[]): { classes: string[]; series: BalanceSeries[] } {
  const classes = [...labels, ...Object.keys(stats.classes).filter((name) => !labels.includes(name))];
  const series = SPLITS.map((split) => ({
    split,
    counts: classes.map((name) => stats.classes[name]?.[split] ?? 0),
  })).filter((s) => s.counts.some((n) => n > 0));
  return { classes, series };
}

/** The smallest and largest class (all splits together); null without classes. */
export function imbalance(stats: VersionStats, labels: string[]): { min: number; max: number } | null {
  const { classes, series } = classBalance(stats, labels);
  if (classes.length === 0) return null;
  const totals = classes.map((_, i) => series.reduce((sum, s) => sum + (s.counts[i] ?? 0), 0));
  return { min: Math.min(...totals), max: Math.max(...totals) };
}
