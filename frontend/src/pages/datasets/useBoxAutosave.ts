// Autosave of bounding boxes, without a save button: every change schedules a PUT of the sample's
// whole box list, sent once the person pauses for SAVE_DELAY_MS (a drag fires a change per pointer
// move). PUTs go one at a time, in order, so an older list never lands after a newer one. A failed
// list stays queued until the next change or Retry. Switching samples or closing the panel sends
// what is pending at once.
import { useQueryClient, type QueryClient } from "@tanstack/react-query";
import { useCallback, useEffect, useRef, useState } from "react";

import { datasetKeys, putSampleBoxes, type Sample } from "../../api/queries/datasets";
import type { ApiBox } from "./boxes";

export const SAVE_DELAY_MS = 400;

export type SaveStatus = "idle" | "pending" | "saving" | "saved" | "error";

export interface BoxAutosave {
  status: SaveStatus;
  /** The last failure (an ApiError with the server's message), until a save succeeds. */
  error: unknown;
  /** Queues the sample's whole box list; sent SAVE_DELAY_MS after the last call. */
  schedule: (sampleId: string, boxes: ApiBox[]) => void;
  /** Sends what is queued now; resolves when every queued list has been answered. */
  flush: () => Promise<void>;
}

export function useBoxAutosave(projectId: string, datasetId: string, delayMs = SAVE_DELAY_MS): BoxAutosave {
  const queryClient = useQueryClient();
  const [status, setStatus] = useState<SaveStatus>("idle");
  const [error, setError] = useState<unknown>(null);
  const pending = useRef(new Map<string, ApiBox[]>());
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
      for (const [sampleId, boxes] of batch) {
        try {
          replaceCachedSample(queryClient, projectId, datasetId, await putSampleBoxes(projectId, sampleId, boxes));
        } catch (e) {
          failure = e;
          // kept for the next try, unless a newer list of that sample is already waiting
          if (!pending.current.has(sampleId)) pending.current.set(sampleId, boxes);
        }
      }
      inFlight.current -= 1;
      if (failure !== null) {
        setError(failure);
        setStatus("error");
      } else if (pending.current.size === 0 && inFlight.current === 0) {
        setError(null);
        setStatus("saved");
      }
    });
    return queue.current;
  }, [queryClient, projectId, datasetId]);

  const schedule = useCallback(
    (sampleId: string, boxes: ApiBox[]) => {
      pending.current.set(sampleId, boxes);
      setStatus("pending");
      if (timer.current !== null) clearTimeout(timer.current);
      timer.current = setTimeout(() => void flush(), delayMs);
    },
    [flush, delayMs],
  );

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

  return { status, error, schedule, flush };
}

/**
 * Puts the sample the API answered into every cached page of samples, so that reopening it shows
 * what was saved without a refetch (a refetch would drop the sample from a filtered page while it
 * is being labeled). Pages are `{results: Sample[]}`; an infinite query's are in `pages`.
 */
function replaceCachedSample(queryClient: QueryClient, projectId: string, datasetId: string, saved: Sample) {
  const replaceIn = (page: unknown): unknown => {
    if (!page || typeof page !== "object" || !Array.isArray((page as { results?: unknown }).results)) return page;
    const results = (page as { results: Sample[] }).results;
    if (!results.some((s) => s.id === saved.id)) return page;
    return { ...page, results: results.map((s) => (s.id === saved.id ? saved : s)) };
  };
  queryClient.setQueriesData({ queryKey: datasetKeys.samples(projectId, datasetId) }, (old: unknown) => {
    if (old && typeof old === "object" && Array.isArray((old as { pages?: unknown }).pages)) {
      return { ...old, pages: (old as { pages: unknown[] }).pages.map(replaceIn) };
    }
    return replaceIn(old);
  });
}
