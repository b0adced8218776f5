import i18n from "i18next";
import { describe, expect, it } from "vitest";

import type { EpochRecord } from "../../api/queries/training";
import { phaseRuns } from "./curves";
import { applyMessage, applySnapshot, epochKey, keptIndex, type LiveJob } from "./jobState";
import { entryStageName, runName } from "./jobText";
import { candidateRows, textKeptIndex, textPhaseName, textRecipeOf } from "./textJob";

// a text job's history as the engine writes it (workers/ml/text/train.py): each family counts
// epochs from 1 in the phase "train"
const linear = (epoch: number, val_accuracy: number) => ({ phase: "train", family: "linear", epoch, step: 10 * epoch, loss: 0.5, val_accuracy, val_balanced_accuracy: val_accuracy - 0.01, val_loss: 0.4 });
const fasttext = (epoch: number, val_accuracy: number) => ({ ...linear(epoch, val_accuracy), family: "fasttext" });
const history = [linear(1, 0.8), linear(2, 0.86), linear(3, 0.85), fasttext(1, 0.7), fasttext(2, 0.83)] as EpochRecord[];

const recipe = {
  schema: "sampan.text-recipe/1",
  winner: "linear",
  family: "linear",
  candidates: {
    fasttext: { family: "fasttext", val_accuracy: 0.83, val_balanced_accuracy: 0.82, kept_epoch: 2, epochs_done: 2, train_s: 21.4 },
    linear: { family: "linear", val_accuracy: 0.86, val_balanced_accuracy: 0.85, kept_epoch: 2, epochs_done: 3, train_s: 12.1 },
  },
};
const metrics = { evaluated_on: "test", family: "linear", val_accuracy: 0.86, val_macro_f1: 0.85, test_accuracy: 0.84 };

const start: LiveJob = { status: "RUNNING", progress: {}, error: "", history: [], budgetS: 60, shown: { percent: 0, etaS: null } };

describe("a text job's history", () => {
  it("keeps each family's epochs apart: both count from 1 in the phase train", () => {
    expect(epochKey(history[0]!)).not.toBe(epochKey(history[3]!));
    let live = start;
    for (const entry of history) live = applyMessage(live, { progress: { ...entry, elapsed_s: 5 } });
    expect(live.history.map((h) => [(h as { family?: string }).family, h.epoch])).toEqual([
      ["linear", 1], ["linear", 2], ["linear", 3], ["fasttext", 1], ["fasttext", 2],
    ]);
    expect((live.history[4] as { val_balanced_accuracy?: number }).val_balanced_accuracy).toBeCloseTo(0.82);
  });

  it("a snapshot of the same entries adds none twice", () => {
    let live = start;
    for (const entry of history.slice(0, 4)) live = applyMessage(live, { progress: entry });
    const merged = applySnapshot(live, { id: "j1", status: "RUNNING", progress: {}, error: "", history: history.slice(0, 3), budget_s: 60 } as never);
    expect(merged.history).toHaveLength(4);
  });

  it("runs by family on the curves, named as models", () => {
    expect(phaseRuns(history)).toEqual([["linear", 0, 2], ["fasttext", 3, 4]]);
    const t = i18n.getFixedT("en");
    expect(runName(t, "fasttext")).toBe("fastText-style model");
    expect(runName(t, "finetune")).toBe("all layers");
    expect(entryStageName(t, history[0]!)).toBe("linear model");
    expect(entryStageName(t, { phase: "head", epoch: 40 })).toBe("output layer only");
  });
});

describe("the model kept", () => {
  it("is the winner's kept epoch, from the recipe", () => {
    expect(textKeptIndex(history, textRecipeOf({ recipe }))).toBe(1);
    expect(keptIndex(history, metrics, recipe)).toBe(1);
    // the fastText-style model won instead: its own epoch 2, not the linear model's
    expect(keptIndex(history, { ...metrics, family: "fasttext" }, recipe)).toBe(4);
  });

  it("is unknown without the recipe's candidates", () => {
    expect(keptIndex(history, metrics, undefined)).toBe(-1);
    expect(keptIndex(history, metrics, { family: "linear", candidates: { linear: { skipped: "budget" } } })).toBe(-1);
  });
});

describe("candidateRows", () => {
  it("lists the engine's families in its order and marks the winner", () => {
    const rows = candidateRows(textRecipeOf({ recipe }));
    expect(rows.map((r) => [r.family, r.winner])).toEqual([["linear", true], ["fasttext", false]]);
  });

  it("keeps a skipped family with its reason", () => {
    const rows = candidateRows(textRecipeOf({ recipe: { family: "linear", candidates: { fasttext: { family: "fasttext", skipped: "budget: not even one epoch fits" }, linear: recipe.candidates.linear } } }));
    expect(rows[1]).toEqual({ family: "fasttext", winner: false, candidate: { family: "fasttext", skipped: "budget: not even one epoch fits" } });
  });

  it("reads nothing from an image job's recipe", () => {
    expect(candidateRows(textRecipeOf({ recipe: { stop_reason: "deadline", resolution: 96 } }))).toEqual([]);
    expect(candidateRows(textRecipeOf({ recipe: null }))).toEqual([]);
  });
});

describe("textPhaseName", () => {
  it("names the text engine's phases and the family training", async () => {
    const t = i18n.getFixedT("en");
    expect(textPhaseName(t, "featurize", undefined)).toBe("Turning the texts into n-gram features");
    expect(textPhaseName(t, "train", "fasttext")).toBe("Training the fastText-style model");
    expect(textPhaseName(t, "evaluate", undefined)).toBe("Evaluating on held-out texts");
    expect(textPhaseName(t, "mystery", undefined)).toBe("mystery");
    const zh = i18n.getFixedT("zh-CN");
    expect(textPhaseName(zh, "train", "linear")).toBe("正在训练：线性模型");
  });
});
