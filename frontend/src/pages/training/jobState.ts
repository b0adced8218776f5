// A training job as the job page shows it: the REST snapshot (polled) merged with websocket
// events (`/ws/jobs/training/<id>/`: {status, progress, error} on connect, then {status, progress}
// or {status, error}). Pure functions, tested in jobState.test.ts.
import { TERMINAL_JOB_STATES } from "../../api/queries/datasets";
import { historyOf, trainingProgressOf, type EpochRecord, type TrainingJob, type TrainingProgress } from "../../api/queries/training";

export interface LiveJob {
  status: string;
  progress: TrainingProgress;
  error: string;
  history: EpochRecord[];
}

export interface JobMessage {
  status?: string;
  progress?: unknown;
  error?: string | null;
}

const RANK: Record<string, number> = { PENDING: 0, QUEUED: 1, RUNNING: 2 };
/** Jobs only move forward (PENDING < QUEUED < RUNNING < a terminal state). */
function rank(status: string): number {
  return TERMINAL_JOB_STATES.has(status) ? 3 : (RANK[status] ?? 0);
}

export function isTerminal(status: string): boolean {
  return TERMINAL_JOB_STATES.has(status);
}

/** History entries are keyed by phase and epoch: the linear probe ("head") and fine-tuning both count epochs from 1. */
export function epochKey(entry: EpochRecord): string {
  return `${entry.phase ?? ""}:${entry.epoch}`;
}

/** Replaces the entry with the same key in place, or appends it (history is in arrival order). */
export function upsertEpoch(history: EpochRecord[], entry: EpochRecord): EpochRecord[] {
  const key = epochKey(entry);
  const at = history.findIndex((h) => epochKey(h) === key);
  if (at < 0) return [...history, entry];
  return history.map((h, i) => (i === at ? entry : h));
}

/** An end-of-epoch progress event (epoch and val_accuracy both present) as a history entry. */
export function epochOf(progress: TrainingProgress): EpochRecord | null {
  if (typeof progress.epoch !== "number" || typeof progress.val_accuracy !== "number") return null;
  return {
    phase: progress.phase,
    epoch: progress.epoch,
    loss: progress.loss,
    val_loss: progress.val_loss,
    val_accuracy: progress.val_accuracy,
  };
}

export function liveFromJob(job: TrainingJob): LiveJob {
  return { status: job.status, progress: trainingProgressOf(job), error: job.error, history: historyOf(job) };
}

/** A websocket message applied to the state. */
export function applyMessage(state: LiveJob, message: JobMessage): LiveJob {
  const status = message.status && rank(message.status) >= rank(state.status) ? message.status : state.status;
  if (status !== state.status && isTerminal(state.status)) return state;
  const next: LiveJob = { ...state, status };
  if (message.progress && typeof message.progress === "object") {
    next.progress = message.progress as TrainingProgress;
    const entry = epochOf(next.progress);
    if (entry) next.history = upsertEpoch(state.history, entry);
  }
  if (typeof message.error === "string" && message.error) next.error = message.error;
  return next;
}

/**
 * A fresh REST snapshot merged in: the server's history is the truth for the entries it has, live
 * entries it does not have yet are kept; status never goes back; the newer progress (by elapsed time) wins.
 */
export function applySnapshot(state: LiveJob | null, job: TrainingJob): LiveJob {
  const server = liveFromJob(job);
  if (!state) return server;
  const known = new Set(server.history.map(epochKey));
  const history = [...server.history, ...state.history.filter((h) => !known.has(epochKey(h)))];
  const status = rank(server.status) >= rank(state.status) ? server.status : state.status;
  const newer = (server.progress.elapsed_s ?? 0) >= (state.progress.elapsed_s ?? 0) || isTerminal(server.status);
  return { status, progress: newer ? server.progress : state.progress, error: server.error || state.error, history };
}

/** History as chart series: x = one label per entry, y = null where an entry lacks the value. */
export function historySeries(history: EpochRecord[], label: (entry: EpochRecord) => string = (h) => String(h.epoch)) {
  const pick = (key: "loss" | "val_loss" | "val_accuracy") =>
    history.map((h) => (typeof h[key] === "number" ? (h[key] as number) : null));
  return {
    epochs: history.map(label),
    loss: pick("loss"),
    valLoss: pick("val_loss"),
    valAccuracy: pick("val_accuracy"),
  };
}

/**
 * The index in `history` of the epoch whose weights were kept: the engine keeps the best epoch by
 * validation accuracy (workers/ml/training.py), not the last, and names it in the job's metrics
 * as `best_phase` + `best_epoch`. -1 while unknown (running, or an older job).
 */
export function keptIndex(history: EpochRecord[], metrics: unknown): number {
  if (!metrics || typeof metrics !== "object") return -1;
  const { best_phase: phase, best_epoch: epoch } = metrics as { best_phase?: unknown; best_epoch?: unknown };
  if (typeof phase !== "string" || typeof epoch !== "number") return -1;
  return history.findIndex((h) => (h.phase ?? "finetune") === phase && h.epoch === epoch);
}

/** 0..100: elapsed / (elapsed + eta) when the worker gave both, else epochs done; 100 when done. */
export function percentDone(live: LiveJob): number {
  if (live.status === "SUCCEEDED") return 100;
  const p = live.progress;
  if (typeof p.elapsed_s === "number" && typeof p.eta_s === "number" && p.elapsed_s + p.eta_s > 0) {
    return Math.min(99, Math.floor((100 * p.elapsed_s) / (p.elapsed_s + p.eta_s)));
  }
  if (typeof p.epoch === "number" && typeof p.epochs === "number" && p.epochs > 0) {
    return Math.min(99, Math.floor((100 * p.epoch) / p.epochs));
  }
  return 0;
}

/** Seconds as "1:05" (m:ss) or "1:02:03". */
export function formatDuration(seconds: number): string {
  const s = Math.max(0, Math.round(seconds));
  const h = Math.floor(s / 3600);
  const m = Math.floor((s % 3600) / 60);
  const ss = String(s % 60).padStart(2, "0");
  return h > 0 ? `${h}:${String(m).padStart(2, "0")}:${ss}` : `${m}:${ss}`;
}
