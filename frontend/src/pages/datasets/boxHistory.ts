// The undo history of one sample's box list: snapshots of the whole list (a sample has tens of
// boxes, so copying the list is cheaper and simpler than inverse operations). One drag of a box
// fires many moves; they share a `mergeKey` and make one undo step.
import type { Box } from "./boxes";

export interface BoxHistory {
  past: Box[][];
  present: Box[];
  future: Box[][];
  /** The merge key of the last commit; a commit with the same key replaces it. */
  mergeKey: string | null;
  /** Counts every change (commit, undo, redo): the autosave runs when it moves. */
  revision: number;
}

/** Undo steps kept per sample. */
export const HISTORY_LIMIT = 200;

export function historyInit(boxes: Box[]): BoxHistory {
  return { past: [], present: boxes, future: [], mergeKey: null, revision: 0 };
}

/**
 * `next` becomes the present. With the `mergeKey` of the previous commit (the same drag going on)
 * it replaces the present without a new undo step. A commit clears the redo list.
 */
export function historyCommit(h: BoxHistory, next: Box[], mergeKey: string | null = null): BoxHistory {
  if (next === h.present) return h;
  if (mergeKey !== null && mergeKey === h.mergeKey && h.future.length === 0) {
    return { ...h, present: next, revision: h.revision + 1 };
  }
  const past = [...h.past, h.present].slice(-HISTORY_LIMIT);
  return { past, present: next, future: [], mergeKey, revision: h.revision + 1 };
}

export function historyUndo(h: BoxHistory): BoxHistory {
  const previous = h.past[h.past.length - 1];
  if (previous === undefined) return h;
  return {
    past: h.past.slice(0, -1),
    present: previous,
    future: [h.present, ...h.future],
    mergeKey: null,
    revision: h.revision + 1,
  };
}

export function historyRedo(h: BoxHistory): BoxHistory {
  const [next, ...rest] = h.future;
  if (next === undefined) return h;
  return { past: [...h.past, h.present], present: next, future: rest, mergeKey: null, revision: h.revision + 1 };
}

export const canUndo = (h: BoxHistory) => h.past.length > 0;
export const canRedo = (h: BoxHistory) => h.future.length > 0;
