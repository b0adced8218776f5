// The undo history of one sample's box list: snapshots of the whole list (a sample has tens of
// boxes, so copying the list is cheaper and simpler than inverse operations). One drag of a box
// fires many moves; they share a `mergeKey` and make one undo step. The snapshot may be more
// than the list (the detection panel keeps the "no objects" mark and the model's suggestions in
// it, so that undo covers them too): `T`, compared by identity.
import type { Box } from "./boxes";

export interface BoxHistory<T = Box[]> {
  past: T[];
  present: T;
  future: T[];
  /** The merge key of the last commit; a commit with the same key replaces it. */
  mergeKey: string | null;
  /** Counts every change (commit, undo, redo): the autosave runs when it moves. */
  revision: number;
}

/** Undo steps kept per sample. */
export const HISTORY_LIMIT = 200;

export function historyInit<T = Box[]>(present: T): BoxHistory<T> {
  return { past: [], present, future: [], mergeKey: null, revision: 0 };
}

/**
 * `next` becomes the present. With the `mergeKey` of the previous commit (the same drag going on)
 * it replaces the present without a new undo step. A commit clears the redo list.
 */
export function historyCommit<T>(h: BoxHistory<T>, next: T, mergeKey: string | null = null): BoxHistory<T> {
  if (next === h.present) return h;
  if (mergeKey !== null && mergeKey === h.mergeKey && h.future.length === 0) {
    return { ...h, present: next, revision: h.revision + 1 };
  }
  const past = [...h.past, h.present].slice(-HISTORY_LIMIT);
  return { past, present: next, future: [], mergeKey, revision: h.revision + 1 };
}

export function historyUndo<T>(h: BoxHistory<T>): BoxHistory<T> {
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

export function historyRedo<T>(h: BoxHistory<T>): BoxHistory<T> {
  const [next, ...rest] = h.future;
  if (next === undefined) return h;
  return { past: [...h.past, h.present], present: next, future: rest, mergeKey: null, revision: h.revision + 1 };
}

export const canUndo = <T>(h: BoxHistory<T>) => h.past.length > 0;
export const canRedo = <T>(h: BoxHistory<T>) => h.future.length > 0;
