// What the job page says in words: phases in plain names, the phase an epoch belongs to, why
// training stopped. Pure (t passed in), tested in jobText.test.ts.
import type { TFunction } from "i18next";

import { PHASES, type EpochRecord, type Phase, type TrainingRecipe } from "../../api/queries/training";
import { formatDuration } from "./jobState";
import { familyName, familyOf, fitOf, isTextFamily, modelName, textWinner } from "./textJob";

function isPhase(phase: string | undefined): phase is Phase {
  return (PHASES as readonly string[]).includes(phase ?? "");
}

/** The phase in plain words ("Training all layers"); an unknown phase as the engine named it. */
export function phaseName(t: TFunction, phase: string | undefined): string {
  if (!phase) return "—";
  return isPhase(phase) ? t(`training.phases.${phase}`) : phase;
}

/** The short name of the stage an epoch belongs to ("all layers"), as part of a sentence. */
export function stageName(t: TFunction, phase: string | undefined): string {
  return phase === "head" || phase === "features" ? t("training.stages.head") : phase === "finetune" ? t("training.stages.finetune") : t("training.stages.other");
}

/**
 * What an epoch belongs to: a text job's model family ("linear model"; with its fit where the
 * family has several: "linear model, exact (L-BFGS)"), else the stage of its phase.
 */
export function entryStageName(t: TFunction, entry: EpochRecord): string {
  const family = familyOf(entry);
  return family ? modelName(t, family, fitOf(entry)) : stageName(t, entry.phase);
}

/** A band of the curves (curves.phaseRuns): a text model family's name, else the stage's. */
export function runName(t: TFunction, key: string | undefined): string {
  return isTextFamily(key) ? familyName(t, key) : stageName(t, key);
}

export const percentText = (x: number) => `${(100 * x).toFixed(1)}%`;

/**
 * A finished text job's headline: which model won on validation and its validation accuracy
 * ("Won on validation: sentence encoder (all-MiniLM-L6-v2), fine-tuned, 91.2%"); null when no
 * family is named (an image job, a text job not finished).
 */
export function wonOnValidationText(t: TFunction, recipe: unknown, metrics: unknown): string | null {
  const winner = textWinner(recipe, metrics);
  if (!winner) return null;
  const family = modelName(t, winner.family, winner.fit);
  return winner.valAccuracy === undefined
    ? t("training.text.chosenFamilyPlain", { family })
    : t("training.text.chosenFamily", { family, accuracy: percentText(winner.valAccuracy) });
}

/** "Validation accuracy 96.5% after epoch 4 (all layers)"; a text job's "(linear model)". */
export function validationHeadline(t: TFunction, entry: EpochRecord): string {
  return t("training.valHeadline", {
    accuracy: typeof entry.val_accuracy === "number" ? percentText(entry.val_accuracy) : "—",
    epoch: entry.epoch,
    stage: entryStageName(t, entry),
  });
}

/**
 * Why training stopped, in a sentence; null when the recipe does not say (running, older jobs).
 * "no_improvement": "Finished early: no improvement for 3 epochs, 1:10 of the 5:00 budget left
 * unused." (the time only when the budget and the time taken are known and some was left).
 */
export function stopReasonText(t: TFunction, recipe: TrainingRecipe, budgetS: number | undefined, elapsedS: number | undefined): string | null {
  if (recipe.stop_reason === "deadline") return t("training.stoppedDeadline");
  if (recipe.stop_reason === "no_finetune_time") return t("training.headOnly");
  // no stop reason, and all layers trained: the run went through its whole (re-planned) schedule
  if (!recipe.stop_reason && typeof recipe.finetune_steps_done === "number" && recipe.finetune_steps_done > 0) {
    return t("training.completedPlan");
  }
  if (recipe.stop_reason !== "no_improvement") return null;
  if (typeof recipe.patience !== "number" || recipe.patience < 1) return t("training.stoppedEarlyPlain");
  const count = recipe.patience;
  const saved = typeof budgetS === "number" && typeof elapsedS === "number" ? budgetS - elapsedS : 0;
  if (saved >= 1 && typeof budgetS === "number") {
    return t("training.stoppedEarlySaved", { count, saved: formatDuration(saved), budget: formatDuration(budgetS) });
  }
  return t("training.stoppedEarly", { count });
}

/**
 * Whether the model is the output layer only: the budget left no step for training all layers
 * (the engine's stop_reason "no_finetune_time", or finetune_steps_done 0), and no epoch of all
 * layers is in the history (older jobs recorded 0 steps whatever ran).
 */
export function outputLayerOnly(recipe: TrainingRecipe, history: EpochRecord[]): boolean {
  if (!history.every((h) => h.phase === "head" || h.phase === "features")) return false;
  return recipe.stop_reason === "no_finetune_time" || recipe.finetune_steps_done === 0;
}

/** The time the job took: the engine's last elapsed_s, else finished - started. */
export function elapsedOf(job: { started_at: string | null; finished_at: string | null }, elapsedS: number | undefined): number | undefined {
  if (typeof elapsedS === "number") return elapsedS;
  if (!job.started_at || !job.finished_at) return undefined;
  const s = (Date.parse(job.finished_at) - Date.parse(job.started_at)) / 1000;
  return Number.isFinite(s) && s >= 0 ? s : undefined;
}

/** " — <why>" after the image size, without the size the engine's reason starts with ("96 px: …"). */
export function resolutionReason(px: number, reason: string | undefined): string {
  const why = (reason ?? "").replace(new RegExp(`^${px}\\s*px\\s*(:|$)\\s*`), "").trim();
  return why ? ` — ${why}` : "";
}

const RESOLUTION_WHY = ["shorter_side", "budget", "smallest"] as const;
const AUGMENTATION_WHY = ["none_requested", "photos", "grayscale", "small", "flips_off"] as const;
const isOneOf = <T extends string>(list: readonly T[], code: string | undefined): code is T => (list as readonly string[]).includes(code ?? "");

/**
 * Why this image size, in the reader's language, from the engine's reason as data
 * (recipe.resolution_why); older jobs have only the English sentence, shown in English only.
 * Returns " — <why>" or "".
 */
export function resolutionWhyText(t: TFunction, recipe: TrainingRecipe, english: boolean): string {
  const why = recipe.resolution_why;
  if (why && isOneOf(RESOLUTION_WHY, why.code)) {
    const key = why.code === "shorter_side" && why.faster_cap ? ("shorter_side_faster" as const) : why.code;
    return ` — ${t(`training.resolutionWhy.${key}`, { side: why.shorter_side, target: why.target, epochs: why.min_epochs, budget: why.budget_s })}`;
  }
  return english && typeof recipe.resolution === "number" ? resolutionReason(recipe.resolution, recipe.resolution_reason) : "";
}

/** Why this augmentation (and flips or not), in the reader's language; "" when unknown. */
export function augmentationWhyText(t: TFunction, recipe: TrainingRecipe, english: boolean): string {
  const why = recipe.augmentation_why;
  if (why && isOneOf(AUGMENTATION_WHY, why.code)) {
    return t(`training.augmentationWhy.${why.code}`, { side: why.shorter_side });
  }
  return english ? recipe.augmentation_reason ?? "" : "";
}
