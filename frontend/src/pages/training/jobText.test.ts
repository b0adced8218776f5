import i18n from "i18next";
import { afterEach, describe, expect, it } from "vitest";

import en from "../../i18n/locales/en.json";
import zhCN from "../../i18n/locales/zh-CN.json";
import { augmentationWhyText, elapsedOf, outputLayerOnly, phaseName, resolutionReason, resolutionWhyText, stopReasonText, validationHeadline, wonOnValidationText } from "./jobText";

const t = i18n.t.bind(i18n);

afterEach(async () => {
  await i18n.changeLanguage("en");
});

describe("phase names", () => {
  it("are plain words in both languages, and nothing a person reads says probe", async () => {
    expect(phaseName(t, "head")).toBe("Training the new output layer (backbone frozen)");
    expect(phaseName(t, "features")).toBe("Training the new output layer (backbone frozen)");
    expect(phaseName(t, "finetune")).toBe("Training all layers");
    expect(phaseName(t, "evaluate")).toBe("Evaluating on held-out images");
    expect(phaseName(t, undefined)).toBe("—");
    await i18n.changeLanguage("zh-CN");
    expect(phaseName(t, "decode")).toBe("准备图像");
    expect(phaseName(t, "head")).toBe("训练输出层（主干冻结）");
    expect(phaseName(t, "finetune")).toBe("训练全部层");
    expect(JSON.stringify(en)).not.toMatch(/probe/i);
    expect(JSON.stringify(zhCN)).not.toMatch(/探测/);
  });

  it("name the epoch a validation figure belongs to", () => {
    expect(validationHeadline(t, { phase: "finetune", epoch: 4, val_accuracy: 0.965 })).toBe(
      "Validation accuracy 96.5% after epoch 4 (all layers)",
    );
  });
});

describe("stopReasonText", () => {
  it("says plainly that training finished early, and the time it saved", () => {
    expect(stopReasonText(t, { stop_reason: "no_improvement", patience: 3 }, 300, 190)).toBe(
      "Finished early: no improvement for 3 epochs, 1:50 of the 5:00 budget left unused.",
    );
    expect(stopReasonText(t, { stop_reason: "no_improvement", patience: 1 }, undefined, 190)).toBe(
      "Finished early: no improvement for 1 epoch.",
    );
    expect(stopReasonText(t, { stop_reason: "no_improvement" }, 300, 100)).toBe("Finished early: the validation figures stopped improving.");
    expect(stopReasonText(t, { stop_reason: "deadline" }, 300, 299)).toBe("Stopped at the time limit (a longer budget may train further).");
    expect(stopReasonText(t, { stop_reason: "no_finetune_time" }, 30, 29)).toBe(
      "The budget left no time to train all layers: this model is the output layer only (raise the budget for a better model).",
    );
    expect(stopReasonText(t, { stop_reason: null }, 300, 100)).toBeNull();
    expect(stopReasonText(t, {}, 300, 100)).toBeNull();
    // a finished run with no stop reason went through its whole schedule, and says so
    expect(stopReasonText(t, { stop_reason: null, finetune_steps_done: 120 }, 60, 58)).toBe(
      "Used its whole time budget: the learning rate was annealed to zero at the planned end.");
  });

  it("says so in Chinese too", async () => {
    await i18n.changeLanguage("zh-CN");
    expect(stopReasonText(t, { stop_reason: "deadline" }, 300, 299)).toBe("在时间上限处停止（更长的预算可能训练得更好）。");
    expect(stopReasonText(t, { stop_reason: "no_finetune_time" }, 30, 29)).toMatch(/^预算没有留下训练全部层的时间：此模型只训练了输出层/);
  });

  it("knows a model of the output layer only: no time was left for all layers", () => {
    const head = [{ phase: "head", epoch: 40 }];
    expect(outputLayerOnly({ stop_reason: "no_finetune_time" }, head)).toBe(true);
    expect(outputLayerOnly({ stop_reason: "deadline", finetune_steps_done: 0 }, head)).toBe(true);
    expect(outputLayerOnly({ stop_reason: "deadline", finetune_steps_done: 12 }, head)).toBe(false);
    expect(outputLayerOnly({ stop_reason: "deadline" }, head)).toBe(false); // older jobs: not recorded
    // an epoch of all layers in the history: whatever the recipe recorded, all layers trained
    expect(outputLayerOnly({ finetune_steps_done: 0 }, [...head, { phase: "finetune", epoch: 1 }])).toBe(false);
  });

  it("takes the time from the engine, else from the job's dates", () => {
    expect(elapsedOf({ started_at: "2026-11-29T00:00:00Z", finished_at: "2026-11-29T00:01:30Z" }, undefined)).toBe(90);
    expect(elapsedOf({ started_at: null, finished_at: null }, 42)).toBe(42);
    expect(elapsedOf({ started_at: null, finished_at: null }, undefined)).toBeUndefined();
  });
});

describe("resolutionReason", () => {
  it("does not repeat the size the engine's reason starts with", () => {
    expect(resolutionReason(96, "96 px: the images' shorter side is 28 px")).toBe(" — the images' shorter side is 28 px");
    expect(resolutionReason(128, "the faster model is capped at 128 px")).toBe(" — the faster model is capped at 128 px");
    expect(resolutionReason(96, "96 px")).toBe("");
    expect(resolutionReason(96, undefined)).toBe("");
  });
});

describe("the engine's reasons", () => {
  const recipe = {
    resolution: 128,
    resolution_reason: "128 px: the images' shorter side is 3000 px, but 224 px would leave time for fewer than 12 epochs in 600 s",
    resolution_why: { code: "budget", shorter_side: 3000, target: 224, faster_cap: false, budget_s: 600, min_epochs: 12 },
    augmentation: "light",
    augmentation_reason: "grayscale images (digits, text, scans): no flips, a mirror image can change the class",
    augmentation_why: { code: "grayscale", shorter_side: 28 },
  };

  it("are translated from data in both languages", async () => {
    expect(resolutionWhyText(t, recipe, true)).toBe(
      " — the images' shorter side is 3000 px, but 224 px would leave time for fewer than 12 epochs in 600 s",
    );
    expect(augmentationWhyText(t, recipe, true)).toBe(recipe.augmentation_reason);
    await i18n.changeLanguage("zh-CN");
    expect(resolutionWhyText(t, recipe, false)).toBe(" — 图像短边为 3000 像素，但 224 像素在 600 秒内训练不足 12 轮");
    expect(augmentationWhyText(t, recipe, false)).toBe("灰度图像（数字、文字、扫描件）：不翻转，镜像可能改变类别");
    expect(resolutionWhyText(t, { resolution: 128, resolution_why: { code: "shorter_side", shorter_side: 300, faster_cap: true } }, false)).toBe(
      " — 图像短边为 300 像素（“更快”模型最大 128 像素）",
    );
  });

  it("of older jobs (English sentence only) show in English and are left out in Chinese", async () => {
    const older = { resolution: 96, resolution_reason: "96 px: the images' shorter side is 28 px", augmentation_reason: "no augmentation requested" };
    expect(resolutionWhyText(t, older, true)).toBe(" — the images' shorter side is 28 px");
    expect(augmentationWhyText(t, older, true)).toBe("no augmentation requested");
    await i18n.changeLanguage("zh-CN");
    expect(resolutionWhyText(t, older, false)).toBe("");
    expect(augmentationWhyText(t, older, false)).toBe("");
  });
});

describe("wonOnValidationText", () => {
  // a finished text job's recipe and metrics as the engine writes them (workers/ml/text/train.py)
  const recipe = {
    family: "encoder",
    candidates: {
      linear: { family: "linear", fit: "linear", val_accuracy: 0.861, val_balanced_accuracy: 0.85 },
      encoder: {
        family: "encoder", fit: "finetune", val_accuracy: 0.912, val_balanced_accuracy: 0.905,
        fits: { frozen: { val_accuracy: 0.874, val_balanced_accuracy: 0.861 }, finetune: { val_accuracy: 0.912, val_balanced_accuracy: 0.905 } },
      },
    },
  };
  const metrics = { family: "encoder", winner: "finetune", val_accuracy: 0.91, val_by_family: { encoder: { val_accuracy: 0.912, fit: "finetune" } } };

  it("says in one line which model won on validation, its fit and its validation accuracy", async () => {
    expect(wonOnValidationText(t, recipe, metrics)).toBe("Won on validation: sentence encoder (all-MiniLM-L6-v2), fine-tuned, 91.2%");
    expect(wonOnValidationText(t, { family: "charcnn", candidates: { charcnn: { family: "charcnn", fit: "charcnn", val_accuracy: 0.8 } } }, undefined)).toBe(
      "Won on validation: character CNN, 80.0%",
    );
    // the linear model's exact fit beat Adam; only the metrics (val_by_family) say so
    expect(wonOnValidationText(t, undefined, { family: "linear", val_by_family: { linear: { val_accuracy: 0.884, fit: "linear_lbfgs" } } })).toBe(
      "Won on validation: linear model, exact (L-BFGS), 88.4%",
    );
    expect(wonOnValidationText(t, { family: "fasttext" }, undefined)).toBe("Won on validation: fastText-style model");
    expect(wonOnValidationText(t, { family: "bilstm", candidates: { bilstm: { val_accuracy: 0.5 } } }, undefined)).toBe("Won on validation: bilstm, 50.0%");
    await i18n.changeLanguage("zh-CN");
    expect(wonOnValidationText(t, recipe, metrics)).toBe("验证集上胜出：句向量编码器（all-MiniLM-L6-v2），全部权重微调，91.2%");
  });

  it("says nothing for an image job", () => {
    expect(wonOnValidationText(t, { stop_reason: "deadline", resolution: 96 }, { accuracy: 0.9, best_phase: "finetune", best_epoch: 3 })).toBeNull();
    expect(wonOnValidationText(t, undefined, undefined)).toBeNull();
  });
});
