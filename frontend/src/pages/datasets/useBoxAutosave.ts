// Autosave of bounding boxes, without a save button: every change schedules a PUT of the sample's
// whole box list (and its "no objects" mark), sent once the person pauses for SAVE_DELAY_MS (a drag fires a change per pointer
// move). PUTs go one at a time, in order, so an older list never lands after a newer one. A failed
// list stays queued until the next change or Retry. Switching samples or closing the panel sends
// what is pending at once.
//
// Each PUT sends If-Match with the etag of the boxes the list was made from: the sample's as the
// panel opened it, then the one each save answered. A list saved meanwhile by someone else makes
// the server refuse ours (412, `stale`); it stays unsent until the person reloads the sample
// (`discard`), and is never written over theirs.
import { useQueryClient } from "@tanstack/react-query";
import { useCallback, useEffect, useRef, useState } from "react";

import { datasetKeys } from "../../api/queries/datasets";
import { isStaleWrite, putSampleBoxes, replaceCachedSample } from "../../api/queries/labeling";
import type { ApiBox } from "./boxes";

export const SAVE_DELAY_MS = 400;

/** What one PUT of a sample sends: its whole box list, and whether it is checked "no objects". */
interface Pending {
  boxes: ApiBox[];
  noObjects: boolean;
  resolvedSuggestionIds: string[];
}

export type SaveStatus = "idle" | "pending" | "saving" | "saved" | "error";

export interface BoxAutosave {
  status: SaveStatus;
  /** The last failure (an ApiError with the server's message), until a save succeeds. */
  error: unknown;
  /** The sample whose list failed last, and whether it failed because it was stale (412). */
  failedSampleId: string | null;
  stale: boolean;
  /** The etag the sample's boxes were read with, unless a save of this panel answered a newer one. */
  base: (sampleId: string, etag: string) => void;
  /**
   * Queues the sample's whole box list (`noObjects`: none, checked; `resolvedSuggestionIds`: the
   * model's suggestions taken in or rejected, deleted with the write); sent SAVE_DELAY_MS after
   * the last call.
   */
  schedule: (sampleId: string, boxes: ApiBox[], noObjects?: boolean, resolvedSuggestionIds?: string[]) => void;
  /** Sends what is queued now; resolves when every queued list has been answered. */
  flush: () => Promise<void>;
  /** Drops the sample's queued list and starts again from the boxes stored under `etag` (a reload). */
  discard: (sampleId: string, etag: string) => void;
}

export function useBoxAutosave(projectId: string, datasetId: string, delayMs = SAVE_DELAY_MS): BoxAutosave {
  const queryClient = useQueryClient();
  const [status, setStatus] = useState<SaveStatus>("idle");
  const [error, setError] = useState<unknown>(null);
  const [failedSampleId, setFailedSampleId] = useState<string | null>(null);
  const failedRef = useRef<string | null>(null);
  const pending = useRef(new Map<string, Pending>());
  const etags = useRef(new Map<string, string>());
  const timer = useRef<ReturnType<typeof setTimeout> | null>(null);
  const queue = useRef<Promise<void>>(Promise.resolve());
  const inFlight = useRef(0);

  const flush = useCallback((): Promise<void> => {
    if (timer.current !== null) clearTimeout(timer.current);
    timer.current = null;
    if (pending.current.size === 0) return queue.current;
    const batch = [...pending.current];
    pending.current.clear();
    setStatus("saving");
    inFlight.current += 1;
    queue.current = queue.current.then(async () => {
      let failure: unknown = null;
      let failed: string | null = null;
      for (const [sampleId, list] of batch) {
        try {
          const saved = await putSampleBoxes(projectId, sampleId, list.boxes, etags.current.get(sampleId), list.noObjects, list.resolvedSuggestionIds);
          etags.current.set(sampleId, saved.etag);
          replaceCachedSample(queryClient, projectId, datasetId, saved);
        } catch (e) {
          failure = e;
          failed = sampleId;
          // kept for the next try, unless a newer list of that sample is already waiting
          if (!pending.current.has(sampleId)) pending.current.set(sampleId, list);
        }
      }
      inFlight.current -= 1;
      if (failure !== null) {
        setError(failure);
        failedRef.current = failed;
        setFailedSampleId(failed);
        setStatus("error");
      } else if (pending.current.size === 0 && inFlight.current === 0) {
        setError(null);
        failedRef.current = null;
        setFailedSampleId(null);
        setStatus("saved");
      }
    });
    return queue.current;
  }, [queryClient, projectId, datasetId]);

  const schedule = useCallback(
    (sampleId: string, boxes: ApiBox[], noObjects = false, resolvedSuggestionIds: string[] = []) => {
      pending.current.set(sampleId, { boxes, noObjects, resolvedSuggestionIds });
      setStatus("pending");
      if (timer.current !== null) clearTimeout(timer.current);
      timer.current = setTimeout(() => void flush(), delayMs);
    },
    [flush, delayMs],
  );

  const base = useCallback((sampleId: string, etag: string) => {
    if (!etags.current.has(sampleId)) etags.current.set(sampleId, etag);
  }, []);

  const discard = useCallback((sampleId: string, etag: string) => {
    pending.current.delete(sampleId);
    etags.current.set(sampleId, etag);
    if (failedRef.current === sampleId) {
      failedRef.current = null;
      setFailedSampleId(null);
      setError(null);
      setStatus(pending.current.size === 0 ? "idle" : "pending");
    }
  }, []);

  // leaving the page with unsaved boxes: send them, and let the browser ask the person to stay
  useEffect(() => {
    const onBeforeUnload = (event: BeforeUnloadEvent) => {
      if (pending.current.size === 0 && inFlight.current === 0) return;
      void flush();
      event.preventDefault();
    };
    window.addEventListener("beforeunload", onBeforeUnload);
    return () => window.removeEventListener("beforeunload", onBeforeUnload);
  }, [flush]);

  // the panel closes: send what is pending, then let the gallery refetch (box counts, filters)
  useEffect(
    () => () => {
      void flush().then(() => queryClient.invalidateQueries({ queryKey: datasetKeys.samples(projectId, datasetId) }));
    },
    [flush, queryClient, projectId, datasetId],
  );

  return { status, error, failedSampleId, stale: failedSampleId !== null && isStaleWrite(error), base, schedule, flush, discard };
}
