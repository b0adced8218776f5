// The undo history of classification labels: steps across samples (a label set or cleared with
// a key or a click, or a bulk label of many samples), each saying what every sample's label was
// before and after. Undoing writes the earlier labels back to the server, redoing the later ones
// (useLabelHistory.ts); this module only keeps the lists, so it is tested alone. Box changes
// have their own history per sample (boxHistory.ts); both panels take the same keys and buttons.
import { HISTORY_LIMIT } from "./boxHistory";

export interface LabelChange {
  sampleId: string;
  /** class label ids; null: no label */
  before: string | null;
  after: string | null;
  /**
   * The sample's etag in the state this step leaves it in (on the undo list: `after` stored; on
   * the redo list: `before` stored), sent as If-Match so that an undo never overwrites what
   * someone else labeled since. Unknown after a bulk label (the bulk endpoint answers a count).
   */
  etag?: string;
}

export interface LabelStep {
  changes: LabelChange[];
}

export interface LabelHistory {
  past: LabelStep[];
  future: LabelStep[];
}

/** One write of the API: `sampleIds` get `classLabelId` (null clears). */
export interface LabelWrite {
  sampleIds: string[];
  classLabelId: string | null;
  /** If-Match, for a write of one sample */
  etag?: string;
}

export const emptyLabelHistory: LabelHistory = { past: [], future: [] };

/** A new step on the undo list; it clears the redo list. Changes that change nothing are dropped. */
export function labelHistoryRecord(h: LabelHistory, step: LabelStep): LabelHistory {
  const changes = step.changes.filter((c) => c.before !== c.after);
  if (changes.length === 0) return h;
  return { past: [...h.past, { changes }].slice(-HISTORY_LIMIT), future: [] };
}

export const nextUndo = (h: LabelHistory): LabelStep | undefined => h.past.at(-1);
export const nextRedo = (h: LabelHistory): LabelStep | undefined => h.future[0];

/**
 * The writes that undo (`before`) or redo (`after`) a step: one PUT with If-Match for a step of
 * one sample; for a bulk step, one bulk write per label to restore.
 */
export function labelWrites(step: LabelStep, direction: "undo" | "redo"): LabelWrite[] {
  const target = (c: LabelChange) => (direction === "undo" ? c.before : c.after);
  if (step.changes.length === 1) {
    const [change] = step.changes as [LabelChange];
    return [{ sampleIds: [change.sampleId], classLabelId: target(change), etag: change.etag }];
  }
  const groups = new Map<string | null, string[]>();
  for (const change of step.changes) {
    const ids = groups.get(target(change)) ?? [];
    ids.push(change.sampleId);
    groups.set(target(change), ids);
  }
  return [...groups].map(([classLabelId, sampleIds]) => ({ sampleIds, classLabelId }));
}

const withEtags = (step: LabelStep, etags: ReadonlyMap<string, string>): LabelStep => ({
  changes: step.changes.map((c) => ({ ...c, etag: etags.get(c.sampleId) })),
});

/** `step` was undone on the server: it moves to the redo list, with the etags the writes answered. */
export function labelHistoryUndone(h: LabelHistory, step: LabelStep, etags: ReadonlyMap<string, string>): LabelHistory {
  if (!h.past.includes(step)) return h;
  return { past: h.past.filter((s) => s !== step), future: [withEtags(step, etags), ...h.future] };
}

/** `step` was redone on the server: it moves back to the undo list. */
export function labelHistoryRedone(h: LabelHistory, step: LabelStep, etags: ReadonlyMap<string, string>): LabelHistory {
  if (!h.future.includes(step)) return h;
  return { past: [...h.past, withEtags(step, etags)].slice(-HISTORY_LIMIT), future: h.future.filter((s) => s !== step) };
}
