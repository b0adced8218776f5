// Labeling writes: a sample's class label (one or many), its bounding boxes, and the classes'
// labeling keys. A write of one sample's annotations sends `If-Match` with the sample's etag as
// the console read it, so a change made meanwhile by someone else is refused (412) instead of
// overwritten (platform/sampan/datasets/etags.py).
import { useMutation, useQueryClient, type QueryClient } from "@tanstack/react-query";

import { api, type Schemas } from "../client";
import { isApiError, unwrap } from "../errors";
import { datasetKeys, type Sample } from "./datasets";

/** The `If-Match` header for an etag the API gave (unquoted in the JSON), or none. */
function ifMatch(etag: string | undefined): { "If-Match": string } | undefined {
  return etag ? { "If-Match": `"${etag}"` } : undefined;
}

/** True for the API's answer to a write from a stale copy (someone else changed the sample). */
export function isStaleWrite(error: unknown): boolean {
  return isApiError(error) && error.status === 412;
}

export async function getSample(projectId: string, sampleId: string): Promise<Sample> {
  return unwrap(
    await api().GET("/api/v1/projects/{project_id}/samples/{sample_id}/", {
      params: { path: { project_id: projectId, sample_id: sampleId } },
    }),
  );
}

/** Sets (or with null, clears) a sample's class label; answers the sample as stored. */
export async function putSampleLabel(projectId: string, sampleId: string, classLabelId: string | null, etag?: string): Promise<Sample> {
  return unwrap(
    await api().PUT("/api/v1/projects/{project_id}/samples/{sample_id}/label/", {
      params: { path: { project_id: projectId, sample_id: sampleId }, header: ifMatch(etag) },
      body: { class_label_id: classLabelId },
    }),
  );
}

/** Gives many samples one class label (null clears them), all or nothing; no If-Match. */
export async function postBulkLabel(projectId: string, datasetId: string, sampleIds: string[], classLabelId: string | null): Promise<void> {
  unwrap(
    await api().POST("/api/v1/projects/{project_id}/datasets/{dataset_id}/labels/bulk/", {
      params: { path: { project_id: projectId, dataset_id: datasetId } },
      body: { sample_ids: sampleIds, class_label_id: classLabelId },
    }),
  );
}

/**
 * Replaces every bounding box of a sample (`PUT samples/{id}/boxes/`; xyxy in px of the upright
 * image, each with `class_label_id`); answers the sample as stored. With `etag`, a list saved
 * meanwhile by someone else makes it fail with 412 (see `isStaleWrite`). `noObjects` (with no
 * boxes) marks the image "checked: no objects"; any write without it clears the mark.
 * `resolvedSuggestionIds`: a model's suggestions the list took in or the person rejected, deleted
 * with the write. The detection panel's autosave calls it (pages/datasets/useBoxAutosave.ts).
 */
export async function putSampleBoxes(
  projectId: string,
  sampleId: string,
  boxes: Schemas["BoxInputRequest"][],
  etag?: string,
  noObjects = false,
  resolvedSuggestionIds: string[] = [],
): Promise<Sample> {
  return unwrap(
    await api().PUT("/api/v1/projects/{project_id}/samples/{sample_id}/boxes/", {
      params: { path: { project_id: projectId, sample_id: sampleId }, header: ifMatch(etag) },
      // optional fields go only when set: the server's defaults (false, none) say the rest
      body: {
        boxes,
        ...(noObjects ? { no_objects: true } : {}),
        ...(resolvedSuggestionIds.length > 0 ? { resolved_suggestion_ids: resolvedSuggestionIds } : {}),
      },
    }),
  );
}

/**
 * Puts the sample the API answered into every cached page of samples, so that it shows at once
 * without a refetch (a refetch would drop it from a filtered page while it is being labeled).
 * Pages are `{results: Sample[]}`; an infinite query's are in `pages`.
 */
export function replaceCachedSample(queryClient: QueryClient, projectId: string, datasetId: string, saved: Sample): void {
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

/** Sets (or with null, clears) a sample's class label, sending `If-Match` when `etag` is given. */
export function useLabelSample(projectId: string, datasetId: string) {
  const queryClient = useQueryClient();
  return useMutation({
    mutationFn: (vars: { sampleId: string; classLabelId: string | null; etag?: string }) =>
      putSampleLabel(projectId, vars.sampleId, vars.classLabelId, vars.etag),
    onSuccess: (sample) => {
      // The new label shows at once; which samples match a filter (and how many) comes from a
      // refetch of every loaded page, which is not awaited so that labeling moves on without it.
      replaceCachedSample(queryClient, projectId, datasetId, sample);
      void queryClient.invalidateQueries({ queryKey: datasetKeys.samples(projectId, datasetId) });
    },
  });
}

export function useBulkLabel(projectId: string, datasetId: string) {
  const queryClient = useQueryClient();
  return useMutation({
    mutationFn: (vars: { sampleIds: string[]; classLabelId: string | null }) => postBulkLabel(projectId, datasetId, vars.sampleIds, vars.classLabelId),
    onSuccess: () => queryClient.invalidateQueries({ queryKey: datasetKeys.samples(projectId, datasetId) }),
  });
}

/**
 * Chooses the labeling keys of classes (`PUT class-labels/hotkeys/`; "" = automatic, see
 * pages/datasets/hotkeys.ts); a refused key names its entry (`hotkeys[i].hotkey`).
 */
export function useSetHotkeys(projectId: string, datasetId: string) {
  const queryClient = useQueryClient();
  return useMutation({
    mutationFn: async (hotkeys: Schemas["HotkeyInputRequest"][]) =>
      unwrap(
        await api().PUT("/api/v1/projects/{project_id}/datasets/{dataset_id}/class-labels/hotkeys/", {
          params: { path: { project_id: projectId, dataset_id: datasetId } },
          body: { hotkeys },
        }),
      ),
    onSuccess: () => queryClient.invalidateQueries({ queryKey: datasetKeys.detail(projectId, datasetId) }),
  });
}
