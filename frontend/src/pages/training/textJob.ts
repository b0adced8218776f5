// A text classifier's training job as the console reads it (workers/ml/text/train.py): the engine
// trains model families one after the other ("linear", then "fasttext"), each counting epochs
// from 1 under the phase "train"; its progress events and history entries name the `family`;
// the job's recipe names the winner (`family`) and each family's validation figures
// (`candidates`), or why one was not trained (`skipped`). Pure, tested in textJob.test.ts.
import type { TFunction } from "i18next";

import type { EpochRecord } from "../../api/queries/training";

export const TEXT_TASK = "text_classification";

export function isTextTask(task: string | null | undefined): boolean {
  return task === TEXT_TASK;
}

/** The families the engine trains, in its order (workers/ml/text/model.py FAMILIES). */
export const TEXT_FAMILIES = ["linear", "fasttext"] as const;
export type TextFamily = (typeof TEXT_FAMILIES)[number];

export function isTextFamily(name: string | undefined): name is TextFamily {
  return (TEXT_FAMILIES as readonly string[]).includes(name ?? "");
}

/** A history entry's or a progress event's model family; undefined for an image or detection job's. */
export function familyOf(x: unknown): string | undefined {
  const family = x && typeof x === "object" ? (x as { family?: unknown }).family : undefined;
  return typeof family === "string" && family ? family : undefined;
}

/** A family's name for people ("linear", "fastText-style"); an unknown one as the engine named it. */
export function familyName(t: TFunction, family: string | undefined): string {
  if (!family) return "—";
  return family === "linear" ? t("training.text.families.linear") : family === "fasttext" ? t("training.text.families.fasttext") : family;
}

/** One family's figures in the job's recipe (`recipe.candidates[family]`). */
export interface TextCandidate {
  family?: string;
  /** of the epoch kept, on the validation split */
  val_accuracy?: number | null;
  val_balanced_accuracy?: number | null;
  val_loss?: number | null;
  kept_epoch?: number | null;
  epochs_done?: number;
  planned_epochs?: number | null;
  steps_done?: number;
  planned_steps?: number;
  /** seconds */
  train_s?: number;
  parameters?: number;
  /** why the family was not trained, in the engine's words (English) */
  skipped?: string;
}

/** What a text job's recipe adds: the family that won and every family's figures. */
export interface TextRecipe {
  family?: string;
  candidates?: Record<string, TextCandidate>;
}

export function textRecipeOf(job: { recipe?: unknown }): TextRecipe {
  const raw = job.recipe && typeof job.recipe === "object" ? (job.recipe as { family?: unknown; candidates?: unknown }) : {};
  const candidates: Record<string, TextCandidate> = {};
  if (raw.candidates && typeof raw.candidates === "object") {
    for (const [name, value] of Object.entries(raw.candidates as Record<string, unknown>)) {
      if (value && typeof value === "object") candidates[name] = value as TextCandidate;
    }
  }
  return { ...(typeof raw.family === "string" ? { family: raw.family } : {}), candidates };
}

export interface CandidateRow {
  family: string;
  /** the family whose model was kept */
  winner: boolean;
  candidate: TextCandidate;
}

/** The candidates as table rows: the engine's families in its order, then any other. */
export function candidateRows(recipe: TextRecipe): CandidateRow[] {
  const names = Object.keys(recipe.candidates ?? {});
  const order = (name: string) => {
    const i = (TEXT_FAMILIES as readonly string[]).indexOf(name);
    return i < 0 ? TEXT_FAMILIES.length : i;
  };
  return names
    .sort((a, b) => order(a) - order(b))
    .map((family) => ({ family, winner: family === recipe.family, candidate: recipe.candidates![family]! }));
}

/**
 * The index in `history` of the epoch whose weights were kept: the winner's (`recipe.family`)
 * `kept_epoch`, among that family's entries; -1 while unknown.
 */
export function textKeptIndex(history: EpochRecord[], recipe: TextRecipe): number {
  const family = recipe.family;
  const epoch = family ? recipe.candidates?.[family]?.kept_epoch : undefined;
  if (!family || typeof epoch !== "number") return -1;
  return history.findIndex((h) => familyOf(h) === family && h.epoch === epoch);
}

const TEXT_PHASES = ["featurize", "calibrate", "train", "export", "evaluate", "done"] as const;

/** A text job's phase in plain words ("Training the linear model"); an unknown phase as the engine named it. */
export function textPhaseName(t: TFunction, phase: string | undefined, family: string | undefined): string {
  if (!phase) return "—";
  if (!(TEXT_PHASES as readonly string[]).includes(phase)) return phase;
  if (phase === "train") return family ? t("training.text.phases.trainFamily", { family: familyName(t, family) }) : t("training.text.phases.train");
  return t(`training.text.phases.${phase as Exclude<(typeof TEXT_PHASES)[number], "train">}`);
}
