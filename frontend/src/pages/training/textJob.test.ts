import i18n from "i18next";
import { describe, expect, it } from "vitest";

import type { EpochRecord } from "../../api/queries/training";
import { phaseRuns } from "./curves";
import { applyMessage, applySnapshot, epochKey, keptIndex, type LiveJob } from "./jobState";
import { entryStageName, runName } from "./jobText";
import { candidateRows, familyName, fitName, fitRows, modelName, TEXT_FAMILIES, textKeptIndex, textPhaseName, textRecipeOf, textWinner } from "./textJob";

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

// a recipe of the four families as the engine writes it (workers/ml/text/train.py _by_family,
// encoder.py): the family's figures are its best fit's, `fit` names it, `fits` holds each fit's
// figures or why it did not run; a family that did not run has `skipped` only
const fourFamilies = {
  family: "encoder",
  candidates: {
    encoder: {
      family: "encoder", fit: "finetune", val_accuracy: 0.912, val_balanced_accuracy: 0.905, val_loss: 0.29, kept_epoch: 3, epochs_done: 3, train_s: 96.4,
      fits: { frozen: { val_accuracy: 0.874, val_balanced_accuracy: 0.861, val_loss: 0.41, c: 10 }, finetune: { val_accuracy: 0.912, val_balanced_accuracy: 0.905, val_loss: 0.29, epochs: 2 } },
    },
    charcnn: { family: "charcnn", skipped: "budget: 2.1 s left after the other candidates, one epoch needs ~41.0 s" },
    linear: {
      family: "linear", fit: "linear_lbfgs", val_accuracy: 0.884, val_balanced_accuracy: 0.879, kept_epoch: 7, epochs_done: 8, train_s: 14.2,
      fits: {
        linear_lbfgs: { fit: "linear_lbfgs", solver: "lbfgs", val_accuracy: 0.884, val_balanced_accuracy: 0.879, kept_epoch: 2, epochs_done: 3 },
        linear: { fit: "linear", solver: "adam", val_accuracy: 0.861, val_balanced_accuracy: 0.85, kept_epoch: 5, epochs_done: 5 },
      },
    },
    fasttext: { family: "fasttext", fit: "fasttext", val_accuracy: 0.85, val_balanced_accuracy: 0.84, kept_epoch: 3, epochs_done: 3, fits: { fasttext: { fit: "fasttext", val_accuracy: 0.85 } } },
  },
};

describe("the four families", () => {
  it("are known in the engine's order, by people's names in both languages; an unknown one as named", () => {
    expect([...TEXT_FAMILIES]).toEqual(["linear", "fasttext", "charcnn", "encoder"]);
    const t = i18n.getFixedT("en");
    const zh = i18n.getFixedT("zh-CN");
    expect(TEXT_FAMILIES.map((f) => familyName(t, f))).toEqual(["linear model", "fastText-style model", "character CNN", "sentence encoder (all-MiniLM-L6-v2)"]);
    expect(TEXT_FAMILIES.map((f) => familyName(zh, f))).toEqual(["线性模型", "fastText 式模型", "字符级卷积网络", "句向量编码器（all-MiniLM-L6-v2）"]);
    expect(familyName(t, "bilstm")).toBe("bilstm");
    expect(textPhaseName(t, "train", "encoder")).toBe("Training the sentence encoder (all-MiniLM-L6-v2)");
    expect(textPhaseName(zh, "train", "charcnn")).toBe("正在训练：字符级卷积网络");
    // the curves' bands and the epochs' stage
    expect(runName(t, "charcnn")).toBe("character CNN");
    expect(runName(t, "encoder")).toBe("sentence encoder (all-MiniLM-L6-v2)");
  });

  it("name their fits, and a family with several names the fit with it", () => {
    const t = i18n.getFixedT("en");
    expect(["linear", "linear_lbfgs", "frozen", "finetune"].map((f) => fitName(t, f))).toEqual(["Adam", "exact (L-BFGS)", "frozen encoder + head", "fine-tuned"]);
    expect(fitName(t, "sgd_v2")).toBe("sgd_v2");
    expect(modelName(t, "encoder", "finetune")).toBe("sentence encoder (all-MiniLM-L6-v2), fine-tuned");
    expect(modelName(t, "linear", "linear_lbfgs")).toBe("linear model, exact (L-BFGS)");
    // one fit only: the family says it all
    expect(modelName(t, "fasttext", "fasttext")).toBe("fastText-style model");
    expect(modelName(t, "encoder", undefined)).toBe("sentence encoder (all-MiniLM-L6-v2)");
    expect(modelName(i18n.getFixedT("zh-CN"), "encoder", "frozen")).toBe("句向量编码器（all-MiniLM-L6-v2），冻结编码器 + 分类头");
    // an epoch of the encoder's fine-tuning
    expect(entryStageName(t, { phase: "train", family: "encoder", fit: "finetune", epoch: 2 } as EpochRecord)).toBe("sentence encoder (all-MiniLM-L6-v2), fine-tuned");
  });

  it("are the candidates' rows in the engine's order, then any other family", () => {
    const rows = candidateRows(textRecipeOf({ recipe: { ...fourFamilies, candidates: { bilstm: { family: "bilstm", val_accuracy: 0.5 }, ...fourFamilies.candidates } } }));
    expect(rows.map((r) => [r.family, r.winner])).toEqual([["linear", false], ["fasttext", false], ["charcnn", false], ["encoder", true], ["bilstm", false]]);
    expect(rows[0]!.candidate.fit).toBe("linear_lbfgs");
    expect(rows[2]!.candidate.skipped).toMatch(/^budget: /);
  });

  it("list each family's fits in the engine's order, the one that won inside it marked, or why one did not run", () => {
    const recipe = textRecipeOf({ recipe: fourFamilies });
    expect(fitRows("linear", recipe.candidates!.linear!).map((f) => [f.fit, f.won, f.figures.val_accuracy])).toEqual([
      ["linear", false, 0.861],
      ["linear_lbfgs", true, 0.884],
    ]);
    const skipped = { ...fourFamilies.candidates.encoder, fit: "frozen", fits: { finetune: { skipped: "budget: an epoch needs ~80 s, 12 s are left" }, frozen: fourFamilies.candidates.encoder.fits.frozen } };
    expect(fitRows("encoder", skipped)).toEqual([
      { fit: "frozen", won: true, figures: fourFamilies.candidates.encoder.fits.frozen },
      { fit: "finetune", won: false, figures: { skipped: "budget: an epoch needs ~80 s, 12 s are left" } },
    ]);
    // a family that did not run, or a recipe from before the fits were recorded
    expect(fitRows("charcnn", recipe.candidates!.charcnn!)).toEqual([]);
    expect(fitRows("linear", { family: "linear", val_accuracy: 0.8 })).toEqual([]);
  });

  it("name the winner, its fit and its validation accuracy: from the recipe, else the metrics' val_by_family", () => {
    expect(textWinner(fourFamilies, { family: "encoder", val_accuracy: 0.9 })).toEqual({ family: "encoder", fit: "finetune", valAccuracy: 0.912 });
    const metrics = { family: "linear", winner: "linear_lbfgs", val_accuracy: 0.88, val_by_family: { linear: { val_accuracy: 0.884, val_balanced_accuracy: 0.879, fit: "linear_lbfgs" } } };
    expect(textWinner(undefined, metrics)).toEqual({ family: "linear", fit: "linear_lbfgs", valAccuracy: 0.884 });
    expect(textWinner(undefined, { family: "linear", val_accuracy: 0.88 })).toEqual({ family: "linear", valAccuracy: 0.88 });
    expect(textWinner({ stop_reason: "deadline", resolution: 96 }, { accuracy: 0.9, best_phase: "finetune", best_epoch: 3 })).toBeNull();
    // and the epoch kept is the encoder's own, among its entries
    const entries = [linear(1, 0.8), { phase: "train", family: "encoder", fit: "frozen", epoch: 1, val_accuracy: 0.874 }, { phase: "train", family: "encoder", fit: "finetune", epoch: 2, val_accuracy: 0.9 }, { phase: "train", family: "encoder", fit: "finetune", epoch: 3, val_accuracy: 0.912 }] as EpochRecord[];
    expect(keptIndex(entries, { family: "encoder" }, fourFamilies)).toBe(3);
  });
});
