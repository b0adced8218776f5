// Assisted labeling (platform/sampan/datasets/prelabel.py, suggestions.py): pre-labeling runs of a
// model over a dataset, the model versions that can run, and accepting or rejecting a sample's
// suggestions. An accept is a label write: it sends If-Match with the sample's etag, so a sample
// someone else labeled meanwhile is refused (412) instead of overwritten.
import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";

import { api, type Schemas } from "../client";
import { unwrap } from "../errors";
import { datasetKeys, TERMINAL_JOB_STATES, type Sample } from "./datasets";
import { replaceCachedSample } from "./labeling";

export type PrelabelJob = Schemas["PrelabelJobOutput"];
export type ModelVersion = Schemas["ModelVersionOutput"];
export type Suggestion = Schemas["SuggestionOutput"];

/** What a run writes into `report` (platform/sampan/datasets/prelabel.py). */
export interface PrelabelReport {
  model_version?: string;
  samples?: number;
  counts?: { done?: number; suggestions?: number; suggested_samples?: number; labeled_meanwhile?: number; failed?: number };
  failed?: { name: string; reason: string }[];
  other_classes?: Record<string, number>;
  score_threshold?: number | null;
}

export const prelabelKeys = {
  jobs: (projectId: string, datasetId: string) => ["projects", projectId, "datasets", datasetId, "prelabel-jobs"] as const,
  versions: (projectId: string) => ["projects", projectId, "model-versions"] as const,
};

export function reportOf(job: PrelabelJob): PrelabelReport {
  return (job.report && typeof job.report === "object" ? job.report : {}) as PrelabelReport;
}

/** The dataset's runs, newest first; polled every second while the newest has not ended. */
export function usePrelabelJobs(projectId: string, datasetId: string) {
  return useQuery({
    queryKey: prelabelKeys.jobs(projectId, datasetId),
    queryFn: async () =>
      unwrap(
        await api().GET("/api/v1/projects/{project_id}/datasets/{dataset_id}/prelabel-jobs/", {
          params: { path: { project_id: projectId, dataset_id: datasetId } },
        }),
      ),
    refetchInterval: (query) => {
      const newest = query.state.data?.[0];
      return newest && !TERMINAL_JOB_STATES.has(newest.status) ? 1000 : false;
    },
  });
}

/** Every model version of the project (the pre-label dialog picks among them). */
export function useProjectModelVersions(projectId: string, enabled = true) {
  return useQuery({
    queryKey: prelabelKeys.versions(projectId),
    enabled,
    queryFn: async () =>
      unwrap(await api().GET("/api/v1/projects/{project_id}/model-versions/", { params: { path: { project_id: projectId } } })),
  });
}

export function useStartPrelabel(projectId: string, datasetId: string) {
  const queryClient = useQueryClient();
  return useMutation({
    mutationFn: async (body: Schemas["PrelabelJobInputRequest"]) =>
      unwrap(
        await api().POST("/api/v1/projects/{project_id}/datasets/{dataset_id}/prelabel-jobs/", {
          params: { path: { project_id: projectId, dataset_id: datasetId } },
          body,
        }),
      ),
    onSuccess: () => queryClient.invalidateQueries({ queryKey: prelabelKeys.jobs(projectId, datasetId) }),
  });
}

export function useCancelPrelabel(projectId: string, datasetId: string, jobId: string) {
  const queryClient = useQueryClient();
  return useMutation({
    mutationFn: async () =>
      unwrap(
        await api().POST("/api/v1/projects/{project_id}/prelabel-jobs/{job_id}/cancel/", {
          params: { path: { project_id: projectId, job_id: jobId } },
        }),
      ),
    onSuccess: () => {
      void queryClient.invalidateQueries({ queryKey: prelabelKeys.jobs(projectId, datasetId) });
      void queryClient.invalidateQueries({ queryKey: datasetKeys.samples(projectId, datasetId) });
    },
  });
}

/**
 * Accepts suggestions of a sample (`suggestionIds` empty: all of them): a class suggestion
 * becomes its label, box suggestions are added to its boxes. Answers the sample as stored.
 */
export async function acceptSuggestions(projectId: string, sampleId: string, suggestionIds: string[], etag?: string): Promise<Sample> {
  return unwrap(
    await api().POST("/api/v1/projects/{project_id}/samples/{sample_id}/suggestions/accept/", {
      params: { path: { project_id: projectId, sample_id: sampleId }, header: etag ? { "If-Match": `"${etag}"` } : undefined },
      body: { suggestion_ids: suggestionIds },
    }),
  );
}

/** Rejects suggestions of a sample (`suggestionIds` empty: all of them); its labels stay. */
export async function rejectSuggestions(projectId: string, sampleId: string, suggestionIds: string[]): Promise<Sample> {
  return unwrap(
    await api().POST("/api/v1/projects/{project_id}/samples/{sample_id}/suggestions/reject/", {
      params: { path: { project_id: projectId, sample_id: sampleId } },
      body: { suggestion_ids: suggestionIds },
    }),
  );
}

/** Accepts suggestions of a sample (If-Match with `etag`); the sample as stored shows at once. */
export function useAcceptSuggestions(projectId: string, datasetId: string) {
  const queryClient = useQueryClient();
  return useMutation({
    mutationFn: (vars: { sampleId: string; suggestionIds: string[]; etag?: string }) => acceptSuggestions(projectId, vars.sampleId, vars.suggestionIds, vars.etag),
    onSuccess: (sample) => {
      replaceCachedSample(queryClient, projectId, datasetId, sample);
      void queryClient.invalidateQueries({ queryKey: datasetKeys.samples(projectId, datasetId) });
    },
  });
}

export function useRejectSuggestions(projectId: string, datasetId: string) {
  const queryClient = useQueryClient();
  return useMutation({
    mutationFn: (vars: { sampleId: string; suggestionIds: string[] }) => rejectSuggestions(projectId, vars.sampleId, vars.suggestionIds),
    onSuccess: (sample) => replaceCachedSample(queryClient, projectId, datasetId, sample),
  });
}
