// Samples read one by one by id (GET samples/{id}/), for pages that list samples named elsewhere:
// an evaluation report's texts. The API has no batch read that carries a sample's text (a
// version's `items/` answers split, size, class and boxes only), so a page asks for the ids it
// shows, each once: a sample's text never changes, so it is kept for good.
import { useQueries } from "@tanstack/react-query";

import type { Sample } from "./datasets";
import { getSample } from "./labeling";

/** The cache key of one sample read by id: a page that lists samples with their text anyway may fill it. */
export const sampleKey = (projectId: string, sampleId: string) => ["projects", projectId, "samples", sampleId] as const;

export interface SamplesById {
  /** the samples read so far, by id */
  samples: Map<string, Sample>;
  /** ids whose read failed, with the error */
  errors: Map<string, unknown>;
  /** reads the failed ones again */
  retry: () => void;
}

export function useSamplesById(projectId: string, sampleIds: string[]): SamplesById {
  const ids = [...new Set(sampleIds)];
  return useQueries({
    queries: ids.map((id) => ({
      queryKey: sampleKey(projectId, id),
      queryFn: () => getSample(projectId, id),
      staleTime: Infinity,
    })),
    combine: (results) => {
      const samples = new Map<string, Sample>();
      const errors = new Map<string, unknown>();
      results.forEach((r, i) => {
        if (r.data) samples.set(ids[i]!, r.data);
        else if (r.isError) errors.set(ids[i]!, r.error);
      });
      return {
        samples,
        errors,
        retry: () => results.forEach((r) => void (r.isError ? r.refetch() : undefined)),
      };
    },
  });
}
