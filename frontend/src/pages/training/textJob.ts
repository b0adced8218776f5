// A text classifier's training job as the console reads it (workers/ml/text/train.py): the engine
// trains model families one after the other (linear, fastText-style, character CNN, sentence
// encoder), each counting epochs from 1 under the phase "train", a family by one or more fits
// (the linear model by Adam and by exact L-BFGS; the encoder frozen + a head, then fine-tuned);
// its progress events and history entries name the `family` (and `fit`); the job's recipe names
// the winner (`family`) and each family's validation figures (`candidates`: its best fit's,
// `fit` the one that won inside it, `fits` each fit's figures or why it did not run), or why
// the family was not trained (`skipped`). Pure, tested in textJob.test.ts.
import type { TFunction } from "i18next";

import type { EpochRecord } from "../../api/queries/training";

export const TEXT_TASK = "text_classification";

export function isTextTask(task: string | null | undefined): boolean {
  return task === TEXT_TASK;
}

/** The families the engine trains, in its order (workers/ml/text/train.py: the bag-of-n-grams
 * models, the character CNN, the pretrained sentence encoder). */
export const TEXT_FAMILIES = ["linear", "fasttext", "charcnn", "encoder"] as const;
export type TextFamily = (typeof TEXT_FAMILIES)[number];

export function isTextFamily(name: string | undefined): name is TextFamily {
  return (TEXT_FAMILIES as readonly string[]).includes(name ?? "");
}

/** Each family's fits, in the engine's order (train.py DEFAULT_CONFIGS; encoder.py). */
export const TEXT_FITS = {
  linear: ["linear", "linear_lbfgs"],
  fasttext: ["fasttext"],
  charcnn: ["charcnn"],
  encoder: ["frozen", "finetune"],
} as const satisfies Record<TextFamily, readonly string[]>;
type TextFit = (typeof TEXT_FITS)[TextFamily][number];
const ALL_FITS: readonly string[] = Object.values(TEXT_FITS).flat();
const isTextFit = (name: string | undefined): name is TextFit => ALL_FITS.includes(name ?? "");

/** A fit's name for people ("Adam", "exact (L-BFGS)", "fine-tuned"); an unknown one as the engine named it. */
export function fitName(t: TFunction, fit: string | undefined): string {
  if (!fit) return "—";
  return isTextFit(fit) ? t(`training.text.fits.${fit}`) : fit;
}

/** Whether the family is one the engine trains by more than one fit (so which one won says something). */
function hasSeveralFits(family: string | undefined): boolean {
  return isTextFamily(family) && TEXT_FITS[family].length > 1;
}

/**
 * The model a person reads: the family, and the fit when the family has several ("linear
 * model, exact (L-BFGS)"); the family alone otherwise, or when the fit is not known.
 */
export function modelName(t: TFunction, family: string | undefined, fit: string | undefined): string {
  if (!family) return "—";
  if (!fit || (isTextFamily(family) && !hasSeveralFits(family))) return familyName(t, family);
  return t("training.text.familyFit", { family: familyName(t, family), fit: fitName(t, fit) });
}

/** A history entry's or a progress event's fit inside its family; undefined when it names none. */
export function fitOf(x: unknown): string | undefined {
  const fit = x && typeof x === "object" ? (x as { fit?: unknown }).fit : undefined;
  return typeof fit === "string" && fit ? fit : undefined;
}

/** A history entry's or a progress event's model family; undefined for an image or detection job's. */
export function familyOf(x: unknown): string | undefined {
  const family = x && typeof x === "object" ? (x as { family?: unknown }).family : undefined;
  return typeof family === "string" && family ? family : undefined;
}

/** A family's name for people ("linear model", "character CNN"); an unknown one as the engine named it. */
export function familyName(t: TFunction, family: string | undefined): string {
  if (!family) return "—";
  return isTextFamily(family) ? t(`training.text.families.${family}`) : family;
}

/** One fit's figures inside its family (`recipe.candidates[family].fits[fit]`), or why it did not run. */
export interface TextFitFigures {
  val_accuracy?: number | null;
  val_balanced_accuracy?: number | null;
  val_loss?: number | null;
  /** why the fit did not run, in the engine's words, in the request's language */
  skipped?: string;
}

/** One family's figures in the job's recipe (`recipe.candidates[family]`). */
export interface TextCandidate {
  family?: string;
  /** the fit that won inside the family (its figures are the family's) */
  fit?: string;
  /** every fit of the family: its figures, or `skipped` */
  fits?: Record<string, TextFitFigures>;
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
  /** why the family was not trained, in the engine's words, in the request's language */
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

export interface FitRow {
  fit: string;
  /** the fit that won inside its family */
  won: boolean;
  figures: TextFitFigures;
}

/** A family's fits as rows: the engine's order for the family, then any other; none when the recipe names none. */
export function fitRows(family: string, candidate: TextCandidate): FitRow[] {
  const fits = candidate.fits && typeof candidate.fits === "object" ? candidate.fits : {};
  const known: readonly string[] = isTextFamily(family) ? TEXT_FITS[family] : [];
  const order = (name: string) => {
    const i = known.indexOf(name);
    return i < 0 ? known.length : i;
  };
  return Object.keys(fits)
    .filter((fit) => fits[fit] && typeof fits[fit] === "object")
    .sort((a, b) => order(a) - order(b))
    .map((fit) => ({ fit, won: fit === candidate.fit, figures: fits[fit]! }));
}

/** The model that won on validation: its family, the fit that won inside it, its validation accuracy. */
export interface TextWinner {
  family: string;
  fit?: string;
  valAccuracy?: number;
}

const numberOr = (x: unknown): number | undefined => (typeof x === "number" && Number.isFinite(x) ? x : undefined);

/**
 * The winner of a finished text job: the recipe's `family` and its candidate's `fit` and
 * `val_accuracy`, else the job's metrics (`family`, `val_by_family[family]`, `val_accuracy`);
 * null when neither names a family (an image job, a text job still running).
 */
export function textWinner(recipe: unknown, metrics: unknown): TextWinner | null {
  const fromRecipe = textRecipeOf({ recipe });
  const m = metrics && typeof metrics === "object" ? (metrics as { val_accuracy?: unknown; val_by_family?: unknown }) : {};
  const family = fromRecipe.family ?? familyOf(metrics);
  if (!family) return null;
  const candidate = fromRecipe.candidates?.[family];
  const byFamily = m.val_by_family && typeof m.val_by_family === "object" ? (m.val_by_family as Record<string, unknown>)[family] : undefined;
  const mirrored = byFamily && typeof byFamily === "object" ? (byFamily as { fit?: unknown; val_accuracy?: unknown }) : {};
  const fit = typeof candidate?.fit === "string" ? candidate.fit : typeof mirrored.fit === "string" ? mirrored.fit : undefined;
  // the metrics' own validation figure is the winner's only when they name the same family
  const valAccuracy = numberOr(candidate?.val_accuracy) ?? numberOr(mirrored.val_accuracy) ?? (familyOf(metrics) === family ? numberOr(m.val_accuracy) : undefined);
  return { family, ...(fit ? { fit } : {}), ...(valAccuracy !== undefined ? { valAccuracy } : {}) };
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
