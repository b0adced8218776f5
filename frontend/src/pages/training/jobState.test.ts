import { describe, expect, it } from "vitest";

import type { TrainingJob } from "../../api/queries/training";
import { applyMessage, applySnapshot, formatDuration, historySeries, keptIndex, percentDone, type LiveJob } from "./jobState";

const base: LiveJob = { status: "RUNNING", progress: {}, error: "", history: [] };

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
    // the probe and fine-tuning both count from 1: separate entries, in arrival order
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

describe("chart and progress", () => {
  it("turns history into series with gaps as null", () => {
    const history = [
      { phase: "head", epoch: 5, loss: 2, val_accuracy: 0.5 },
      { phase: "finetune", epoch: 1, loss: 1, val_loss: 0.9, val_accuracy: 0.8 },
    ];
    expect(historySeries(history, (h) => (h.phase === "head" ? "P" : String(h.epoch)))).toEqual({
      epochs: ["P", "1"],
      loss: [2, 1],
      valLoss: [null, 0.9],
      valAccuracy: [0.5, 0.8],
    });
  });

  it("estimates the share done from elapsed and eta, else from epochs", () => {
    expect(percentDone({ ...base, progress: { elapsed_s: 30, eta_s: 60 } })).toBe(33);
    expect(percentDone({ ...base, progress: { epoch: 3, epochs: 4 } })).toBe(75);
    expect(percentDone({ ...base, status: "SUCCEEDED" })).toBe(100);
    expect(formatDuration(65)).toBe("1:05");
    expect(formatDuration(3723)).toBe("1:02:03");
  });
});

describe("keptIndex", () => {
  const history = [
    { phase: "head", epoch: 40, val_accuracy: 0.9 },
    { phase: "finetune", epoch: 1, val_accuracy: 0.1 },
    { phase: "finetune", epoch: 2, val_accuracy: 0.4 },
  ];
  it("finds the epoch the engine kept (the best, here the probe, not the last)", () => {
    expect(keptIndex(history, { best_phase: "head", best_epoch: 40 })).toBe(0);
    expect(keptIndex(history, { best_phase: "finetune", best_epoch: 2 })).toBe(2);
  });
  it("is -1 while the job runs or for metrics without the kept epoch", () => {
    expect(keptIndex(history, undefined)).toBe(-1);
    expect(keptIndex(history, {})).toBe(-1);
    expect(keptIndex(history, { best_phase: "finetune", best_epoch: 9 })).toBe(-1);
  });
});
