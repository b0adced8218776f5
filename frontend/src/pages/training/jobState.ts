// A training job as the job page shows it: the REST snapshot (polled) merged with websocket
// events (`/ws/jobs/training/<id>/`: {status, progress, error} on connect, then {status, progress}
// or {status, error}). Pure functions, tested in jobState.test.ts.
import { TERMINAL_JOB_STATES } from "../../api/queries/datasets";
import { historyOf, trainingProgressOf, type EpochRecord, type TrainingJob, type TrainingProgress } from "../../api/queries/training";
import { familyOf, textKeptIndex, textRecipeOf } from "./textJob";

/** What the progress card shows; only ever moves forward (see `advanceShown`). */
export interface Shown {
  /** 0..100 */
  percent: number;
  /** seconds left as last shown; null while unknown */
  etaS: number | null;
}

export interface LiveJob {
  /** the job's id: a snapshot of another job starts afresh */
  id?: string;
  status: string;
  progress: TrainingProgress;
  error: string;
  history: EpochRecord[];
  /** the job's budget, seconds: estimates progress and time left when the engine does not */
  budgetS?: number;
  shown: Shown;
}

/** A time left may grow by this much between two events (an engine's estimate wobbles), never more. */
export const ETA_TOLERANCE_S = 5;

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

/**
 * History entries are keyed by phase and epoch: the output layer ("head") and all layers
 * ("finetune") both count epochs from 1. An object detector's entries have no epoch: by step. A
 * text job's families ("linear", "fasttext") each count epochs from 1 in the phase "train": by
 * family too.
 */
export function epochKey(entry: EpochRecord): string {
  const family = familyOf(entry);
  const phase = family ? `${family}/${entry.phase ?? ""}` : (entry.phase ?? "");
  return typeof entry.epoch === "number" ? `${phase}:${entry.epoch}` : `${phase}:step ${entry.step}`;
}

/** Replaces the entry with the same key in place, or appends it (history is in arrival order). */
export function upsertEpoch(history: EpochRecord[], entry: EpochRecord): EpochRecord[] {
  const key = epochKey(entry);
  const at = history.findIndex((h) => epochKey(h) === key);
  if (at < 0) return [...history, entry];
  return history.map((h, i) => (i === at ? entry : h));
}

/**
 * An end-of-epoch progress event (epoch and val_accuracy both present) as a history entry; an
 * object detector's validation event (step and val_map50) as its entry.
 */
export function epochOf(progress: TrainingProgress): EpochRecord | null {
  if (typeof progress.step === "number" && typeof progress.val_map50 === "number") {
    const { phase, step, steps, loss, val_map50, val_map, elapsed_s } = progress;
    const losses = (progress as { losses?: unknown }).losses;
    return {
      phase,
      step,
      steps,
      loss,
      val_map50,
      ...(typeof val_map === "number" ? { val_map } : {}),
      ...(losses && typeof losses === "object" ? { losses: losses as Record<string, number> } : {}),
      ...(typeof elapsed_s === "number" ? { elapsed_s } : {}),
    };
  }
  if (typeof progress.epoch !== "number" || typeof progress.val_accuracy !== "number") return null;
  const entry: EpochRecord = {
    phase: progress.phase,
    epoch: progress.epoch,
    loss: progress.loss,
    val_loss: progress.val_loss,
    val_accuracy: progress.val_accuracy,
  };
  // a text job's event names its model family (and the balanced accuracy the winner is chosen by)
  const family = familyOf(progress);
  if (!family) return entry;
  const balanced = (progress as { val_balanced_accuracy?: unknown }).val_balanced_accuracy;
  return { ...entry, family, ...(typeof balanced === "number" ? { val_balanced_accuracy: balanced } : {}) } as EpochRecord;
}

const num = (x: unknown): x is number => typeof x === "number" && Number.isFinite(x);

/**
 * The share done (0..100) and the time left to show, from the state's progress and what was shown
 * before. Progress: the engine's `fraction` when present, else elapsed / budget; never below the
 * previous value, 99 at most until the job succeeded. Time left: the engine's `eta_s`, else the
 * budget minus the elapsed time; never more than the previous value + ETA_TOLERANCE_S (so an
 * event without an estimate does not jump back to the whole budget).
 */
export function advanceShown(state: LiveJob): Shown {
  const prev = state.shown;
  const p = state.progress;
  const budget = num(state.budgetS) && state.budgetS > 0 ? state.budgetS : undefined;
  let percent = prev.percent;
  if (state.status === "SUCCEEDED") percent = 100;
  else {
    let raw: number | undefined;
    if (num(p.fraction)) raw = 100 * p.fraction;
    else if (num(p.elapsed_s) && budget) raw = (100 * p.elapsed_s) / budget;
    else if (num(p.elapsed_s) && num(p.eta_s) && p.elapsed_s + p.eta_s > 0) raw = (100 * p.elapsed_s) / (p.elapsed_s + p.eta_s);
    if (raw !== undefined) percent = Math.max(prev.percent, Math.min(99, Math.max(0, Math.floor(raw))));
  }
  let etaS = prev.etaS;
  if (isTerminal(state.status)) etaS = 0;
  else {
    let raw: number | undefined;
    if (num(p.eta_s)) raw = Math.max(0, p.eta_s);
    else if (num(p.elapsed_s) && budget) raw = Math.max(0, budget - p.elapsed_s);
    if (raw !== undefined) etaS = prev.etaS === null ? raw : Math.min(raw, prev.etaS + ETA_TOLERANCE_S);
  }
  return { percent, etaS };
}

const NOTHING_SHOWN: Shown = { percent: 0, etaS: null };

export function liveFromJob(job: TrainingJob): LiveJob {
  const live: LiveJob = {
    id: job.id,
    status: job.status,
    progress: trainingProgressOf(job),
    error: job.error,
    history: historyOf(job),
    budgetS: job.budget_s,
    shown: NOTHING_SHOWN,
  };
  return { ...live, shown: advanceShown(live) };
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
  next.shown = advanceShown(next);
  return next;
}

/**
 * A fresh REST snapshot merged in: the server's history is the truth for the entries it has, live
 * entries it does not have yet are kept; status never goes back; the newer progress (by elapsed time) wins.
 */
export function applySnapshot(state: LiveJob | null, job: TrainingJob): LiveJob {
  const server = liveFromJob(job);
  if (!state || (state.id !== undefined && state.id !== job.id)) return server;
  const known = new Set(server.history.map(epochKey));
  const history = [...server.history, ...state.history.filter((h) => !known.has(epochKey(h)))];
  const status = rank(server.status) >= rank(state.status) ? server.status : state.status;
  const newer = (server.progress.elapsed_s ?? 0) >= (state.progress.elapsed_s ?? 0) || isTerminal(server.status);
  const next: LiveJob = {
    ...state,
    id: job.id,
    status,
    progress: newer ? server.progress : state.progress,
    error: server.error || state.error,
    history,
    budgetS: job.budget_s,
  };
  return { ...next, shown: advanceShown(next) };
}

/**
 * The index in `history` of the epoch whose weights were kept: the engine keeps the best epoch by
 * validation accuracy (workers/ml/training.py), not the last, and names it in the job's metrics
 * as `best_phase` + `best_epoch`; an object detector keeps the step of the best validation
 * mAP@0.5 (workers/ml/detection/train.py), `best_step`; a text classifier names the winning
 * family in its metrics (`family`) and that family's kept epoch in the job's `recipe`
 * (textJob.textKeptIndex). -1 while unknown (running, or an older job).
 */
export function keptIndex(history: EpochRecord[], metrics: unknown, recipe?: unknown): number {
  if (!metrics || typeof metrics !== "object") return -1;
  const family = familyOf(metrics);
  if (family) return textKeptIndex(history, { ...textRecipeOf({ recipe }), family });
  const { best_phase: phase, best_epoch: epoch, best_step: step } = metrics as { best_phase?: unknown; best_epoch?: unknown; best_step?: unknown };
  if (typeof step === "number" && typeof phase !== "string") {
    return history.findIndex((h) => h.step === step && typeof h.val_map50 === "number");
  }
  if (typeof phase !== "string" || typeof epoch !== "number") return -1;
  return history.findIndex((h) => (h.phase ?? "finetune") === phase && h.epoch === epoch);
}

/**
 * The newest validation figure and the epoch it belongs to (an end-of-epoch event's `epoch`):
 * while epoch n runs, the figure shown is epoch n-1's, and says so; an object detector's newest
 * validation (mAP@0.5) and its step. Null before the first one.
 */
export function lastValidation(live: LiveJob): EpochRecord | null {
  for (let i = live.history.length - 1; i >= 0; i -= 1) {
    const h = live.history[i]!;
    if (typeof h.val_accuracy === "number" || typeof h.val_map50 === "number") return h;
  }
  return null;
}

/** Seconds as "1:05" (m:ss) or "1:02:03". */
export function formatDuration(seconds: number): string {
  const s = Math.max(0, Math.round(seconds));
  const h = Math.floor(s / 3600);
  const m = Math.floor((s % 3600) / 60);
  const ss = String(s % 60).padStart(2, "0");
  return h > 0 ? `${h}:${String(m).padStart(2, "0")}:${ss}` : `${m}:${ss}`;
}
