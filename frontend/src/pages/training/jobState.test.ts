import { describe, expect, it } from "vitest";

import type { TrainingJob } from "../../api/queries/training";
import {
  advanceShown,
  applyMessage,
  applySnapshot,
  ETA_TOLERANCE_S,
  formatDuration,
  keptIndex,
  lastValidation,
  liveFromJob,
  type LiveJob,
} from "./jobState";

const base: LiveJob = { status: "RUNNING", progress: {}, error: "", history: [], shown: { percent: 0, etaS: null } };

function job(fields: Partial<TrainingJob>): TrainingJob {
  return {
    id: "j",
    dataset_version_id: "v",
    dataset_version: { id: "v", dataset_id: "d", dataset_name: "digits", number: 1 },
    task_type: "image_classification",
    model_name: "m",
    architecture: "",
    budget_s: 90,
    seed: 0,
    augmentation: "auto",
    model_preference: "more_accurate",
    allow_flips: true,
    status: "RUNNING",
    attempt: 1,
    progress: {},
    history: [],
    recipe: {},
    metrics: {},
    pretrained: null,
    weights_note: "",
    error: "",
    model_version_id: null,
    created_at: "2026-11-29T00:00:00Z",
    started_at: null,
    finished_at: null,
    heartbeat_at: null,
    ...fields,
  };
}

describe("websocket messages", () => {
  it("takes progress and appends end-of-epoch events to history once", () => {
    let s = applyMessage(base, { status: "RUNNING", progress: { phase: "train", epoch: 1, step: 3, loss: 2 } });
    expect(s.history).toEqual([]);
    s = applyMessage(s, { status: "RUNNING", progress: { epoch: 1, loss: 1.5, val_loss: 1.2, val_accuracy: 0.6 } });
    s = applyMessage(s, { status: "RUNNING", progress: { epoch: 1, loss: 1.4, val_loss: 1.2, val_accuracy: 0.61 } });
    expect(s.history).toEqual([{ phase: undefined, epoch: 1, loss: 1.4, val_loss: 1.2, val_accuracy: 0.61 }]);
    // the output layer and all layers both count from 1: separate entries, in arrival order
    s = applyMessage(s, { status: "RUNNING", progress: { phase: "finetune", epoch: 1, loss: 0.9, val_accuracy: 0.8 } });
    expect(s.history.map((h) => h.phase)).toEqual([undefined, "finetune"]);
    expect(s.progress.loss).toBe(0.9);
  });

  it("never moves status backwards and keeps the error", () => {
    let s = applyMessage(base, { status: "FAILED", error: "out of memory" });
    expect(s).toMatchObject({ status: "FAILED", error: "out of memory" });
    s = applyMessage(s, { status: "RUNNING", progress: { epoch: 2 } });
    expect(s.status).toBe("FAILED");
    expect(applyMessage({ ...base, status: "QUEUED" }, { status: "PENDING" }).status).toBe("QUEUED");
  });
});

describe("REST snapshots", () => {
  it("uses the server's history and keeps newer live epochs", () => {
    const live = {
      ...base,
      history: [
        { phase: "head", epoch: 5, loss: 9 },
        { phase: "finetune", epoch: 1, loss: 1 },
        { phase: "finetune", epoch: 2, loss: 0.5 },
      ],
    };
    const merged = applySnapshot(live, job({ history: [{ phase: "head", epoch: 5, loss: 2 }, { phase: "finetune", epoch: 1, loss: 1 }] }));
    expect(merged.history.map((h) => [h.phase, h.epoch, h.loss])).toEqual([
      ["head", 5, 2],
      ["finetune", 1, 1],
      ["finetune", 2, 0.5],
    ]);
  });

  it("keeps the newer progress and a terminal status", () => {
    const live = { ...base, status: "SUCCEEDED", progress: { elapsed_s: 50, phase: "done" } };
    const merged = applySnapshot(live, job({ status: "RUNNING", progress: { elapsed_s: 40, phase: "train" } }));
    expect(merged.status).toBe("SUCCEEDED");
    expect(merged.progress.phase).toBe("done");
    expect(applySnapshot(null, job({ status: "QUEUED" })).status).toBe("QUEUED");
  });
});

describe("durations", () => {
  it("formats durations", () => {
    expect(formatDuration(65)).toBe("1:05");
    expect(formatDuration(3723)).toBe("1:02:03");
  });
});

describe("progress shown", () => {
  const running = { ...base, budgetS: 100 };

  it("uses the engine's fraction, and never goes back (the old bar fell to 0% during evaluation)", () => {
    let s = applyMessage(running, { progress: { phase: "finetune", epoch: 3, epochs: 3, fraction: 0.8, elapsed_s: 60, eta_s: 15 } });
    expect(s.shown.percent).toBe(80);
    // evaluation: no epoch, no eta, an older engine without fraction
    s = applyMessage(s, { progress: { phase: "evaluate", elapsed_s: 61 } });
    expect(s.shown.percent).toBe(80);
    s = applyMessage(s, { progress: { phase: "evaluate", fraction: 0.7, elapsed_s: 62 } });
    expect(s.shown.percent).toBe(80);
    s = applyMessage(s, { progress: { phase: "evaluate", fraction: 0.95, elapsed_s: 70 } });
    expect(s.shown.percent).toBe(95);
    expect(applyMessage(s, { status: "SUCCEEDED", progress: { phase: "done" } }).shown.percent).toBe(100);
  });

  it("derives progress from elapsed / budget on older jobs, at most 99 until done", () => {
    let s = applyMessage(running, { progress: { phase: "head", epoch: 1, epochs: 3, elapsed_s: 25 } });
    expect(s.shown.percent).toBe(25);
    // a new phase restarts its epochs at 1: the bar does not follow
    s = applyMessage(s, { progress: { phase: "finetune", epoch: 1, epochs: 3, elapsed_s: 20 } });
    expect(s.shown.percent).toBe(25);
    s = applyMessage(s, { progress: { phase: "evaluate", elapsed_s: 130 } });
    expect(s.shown.percent).toBe(99);
  });

  it("shows the engine's time left and never jumps back up to the whole budget", () => {
    let s = applyMessage(running, { progress: { phase: "finetune", elapsed_s: 70, eta_s: 30 } });
    expect(s.shown.etaS).toBe(30);
    s = applyMessage(s, { progress: { phase: "export", elapsed_s: 88, eta_s: 12 } });
    expect(s.shown.etaS).toBe(12);
    // no estimate in this event (the old page showed "up to 1:40" here): estimated from the budget
    s = applyMessage(s, { progress: { phase: "evaluate", elapsed_s: 90 } });
    expect(s.shown.etaS).toBe(10);
    // the engine re-estimates upwards: capped at the previous value + the tolerance
    s = applyMessage(s, { progress: { phase: "evaluate", elapsed_s: 91, eta_s: 100 } });
    expect(s.shown.etaS).toBe(10 + ETA_TOLERANCE_S);
    s = applyMessage(s, { progress: { phase: "evaluate", elapsed_s: 92, eta_s: 4 } });
    expect(s.shown.etaS).toBe(4);
    expect(applyMessage(s, { status: "SUCCEEDED" }).shown.etaS).toBe(0);
  });

  it("keeps what was shown when a snapshot brings older progress, and starts afresh for another job", () => {
    const live = applyMessage({ ...base, id: "j", budgetS: 90 }, { progress: { elapsed_s: 45, fraction: 0.6, eta_s: 30 } });
    const merged = applySnapshot(live, job({ progress: { elapsed_s: 40, fraction: 0.4, eta_s: 50 } }));
    expect(merged.shown).toEqual({ percent: 60, etaS: 30 });
    expect(applySnapshot(live, job({ id: "other", progress: { elapsed_s: 9, fraction: 0.1 } })).shown.percent).toBe(10);
    expect(liveFromJob(job({ status: "QUEUED" })).shown).toEqual({ percent: 0, etaS: null });
    expect(advanceShown({ ...base, status: "SUCCEEDED" }).percent).toBe(100);
  });
});

describe("lastValidation", () => {
  it("names the epoch the figure belongs to, not the epoch running now", () => {
    let s = applyMessage(base, { progress: { phase: "finetune", epoch: 1, epochs: 3, loss: 0.9, val_loss: 0.8, val_accuracy: 0.1 } });
    s = applyMessage(s, { progress: { phase: "finetune", epoch: 2, epochs: 3, step: 4, steps: 10, loss: 0.5 } });
    expect(s.progress.epoch).toBe(2);
    expect(lastValidation(s)).toMatchObject({ phase: "finetune", epoch: 1, val_accuracy: 0.1 });
    s = applyMessage(s, { progress: { phase: "finetune", epoch: 2, epochs: 3, loss: 0.4, val_accuracy: 0.9 } });
    expect(lastValidation(s)).toMatchObject({ epoch: 2, val_accuracy: 0.9 });
    expect(lastValidation(base)).toBeNull();
  });
});

describe("keptIndex", () => {
  const history = [
    { phase: "head", epoch: 40, val_accuracy: 0.9 },
    { phase: "finetune", epoch: 1, val_accuracy: 0.1 },
    { phase: "finetune", epoch: 2, val_accuracy: 0.4 },
  ];
  it("finds the epoch the engine kept (the best, here the output layer's, not the last)", () => {
    expect(keptIndex(history, { best_phase: "head", best_epoch: 40 })).toBe(0);
    expect(keptIndex(history, { best_phase: "finetune", best_epoch: 2 })).toBe(2);
  });
  it("is -1 while the job runs or for metrics without the kept epoch", () => {
    expect(keptIndex(history, undefined)).toBe(-1);
    expect(keptIndex(history, {})).toBe(-1);
    expect(keptIndex(history, { best_phase: "finetune", best_epoch: 9 })).toBe(-1);
  });
});

describe("an object detector's history", () => {
  const validation = { phase: "train", step: 80, steps: 200, loss: 1.2, losses: { classification: 0.7, bbox_regression: 0.4, bbox_ctrness: 0.1 }, val_map50: 0.45, val_map: 0.2, elapsed_s: 31 };

  it("takes a validation event (step and val_map50, no epoch) as an entry, once per step", () => {
    let s = applyMessage(base, { status: "RUNNING", progress: { phase: "train", step: 79, steps: 200, loss: 1.25 } });
    expect(s.history).toEqual([]);
    s = applyMessage(s, { progress: validation });
    s = applyMessage(s, { progress: { ...validation, val_map50: 0.46 } });
    expect(s.history).toEqual([{ ...validation, val_map50: 0.46 }]);
    s = applyMessage(s, { progress: { ...validation, step: 120, val_map50: 0.6 } });
    expect(s.history.map((h) => h.step)).toEqual([80, 120]);
    expect(lastValidation(s)).toMatchObject({ step: 120, val_map50: 0.6 });
  });

  it("keeps the server's entries and the live ones it has not stored, by step", () => {
    const live = applyMessage(base, { progress: { ...validation, step: 120, val_map50: 0.6 } });
    const merged = applySnapshot({ ...live, id: "j" }, job({ task_type: "object_detection", history: [validation] }));
    expect(merged.history.map((h) => h.step)).toEqual([80, 120]);
  });

  it("finds the kept step (metrics best_step)", () => {
    const history = [validation, { ...validation, step: 120, val_map50: 0.6 }, { ...validation, step: 200, val_map50: 0.58 }];
    expect(keptIndex(history, { best_step: 120, val_map50: 0.6 })).toBe(1);
    expect(keptIndex(history, { best_step: 7 })).toBe(-1);
  });
});
