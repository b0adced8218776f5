import { keepPreviousData, useInfiniteQuery, useMutation, useQuery, useQueryClient } from "@tanstack/react-query";

import { api, type Schemas } from "../client";
import { unwrap } from "../errors";
import type { Split } from "./versions";

export type Dataset = Schemas["DatasetOutput"];
export type Sample = Schemas["SampleOutput"];
export type ImportJob = Schemas["ImportJobOutput"];
export type TaskType = Schemas["TaskTypeEnum"];
export const TASK_TYPES: readonly TaskType[] = ["image_classification", "object_detection", "text_classification"];

/** Job states (platform/sampan/core/jobs.py); the terminal ones end polling. */
export const TERMINAL_JOB_STATES = new Set(["SUCCEEDED", "FAILED", "CANCELLED"]);

/** What the import job writes into `report` and `progress` (platform/sampan/datasets/services.py). */
export interface ImportFileOutcome {
  name: string;
  reason: string;
}
export interface ImportReport {
  imported: number;
  duplicates: ImportFileOutcome[];
  ignored: ImportFileOutcome[];
  rejected: ImportFileOutcome[];
}
export interface JobProgress {
  fraction?: number;
  done?: number;
  total?: number;
  message?: string;
}

export function importReportOf(job: ImportJob): ImportReport | null {
  const report = job.report as Partial<ImportReport> | null | undefined;
  if (!report || typeof report !== "object" || !("imported" in report)) return null;
  return {
    imported: report.imported ?? 0,
    duplicates: report.duplicates ?? [],
    ignored: report.ignored ?? [],
    rejected: report.rejected ?? [],
  };
}

export function progressOf(job: { progress?: unknown }): JobProgress {
  return (job.progress && typeof job.progress === "object" ? job.progress : {}) as JobProgress;
}

export const datasetKeys = {
  list: (projectId: string) => ["projects", projectId, "datasets"] as const,
  detail: (projectId: string, datasetId: string) => ["projects", projectId, "datasets", datasetId] as const,
  samples: (projectId: string, datasetId: string) => ["projects", projectId, "datasets", datasetId, "samples"] as const,
  importJob: (projectId: string, jobId: string) => ["projects", projectId, "imports", jobId] as const,
};

export function useDatasets(projectId: string) {
  return useQuery({
    queryKey: datasetKeys.list(projectId),
    queryFn: async () =>
      unwrap(
        await api().GET("/api/v1/projects/{project_id}/datasets/", { params: { path: { project_id: projectId } } }),
      ),
  });
}

/** The project's archived datasets only (the list's "Show archived" toggle). */
export function useArchivedDatasets(projectId: string, enabled: boolean) {
  return useQuery({
    queryKey: [...datasetKeys.list(projectId), "archived"] as const,
    enabled,
    queryFn: async () =>
      unwrap(
        await api().GET("/api/v1/projects/{project_id}/datasets/", {
          params: { path: { project_id: projectId }, query: { archived: "true" } },
        }),
      ),
  });
}

/** Rename, describe, archive or unarchive a dataset (editors). */
export function useUpdateDataset(projectId: string, datasetId: string) {
  const queryClient = useQueryClient();
  return useMutation({
    mutationFn: async (body: Schemas["PatchedDatasetUpdateInputRequest"]) =>
      unwrap(
        await api().PATCH("/api/v1/projects/{project_id}/datasets/{dataset_id}/", {
          params: { path: { project_id: projectId, dataset_id: datasetId } },
          body,
        }),
      ),
    onSuccess: () => queryClient.invalidateQueries({ queryKey: datasetKeys.list(projectId) }),
  });
}

/** Delete a dataset (editors); refused with 409 delete_blocked while a job runs on it. */
export function useDeleteDataset(projectId: string, datasetId: string) {
  const queryClient = useQueryClient();
  return useMutation({
    mutationFn: async () =>
      unwrap(
        await api().DELETE("/api/v1/projects/{project_id}/datasets/{dataset_id}/", {
          params: { path: { project_id: projectId, dataset_id: datasetId } },
        }),
      ),
    onSuccess: () => {
      queryClient.removeQueries({ queryKey: datasetKeys.detail(projectId, datasetId) });
      return queryClient.invalidateQueries({ queryKey: datasetKeys.list(projectId), exact: false });
    },
  });
}

export function useDataset(projectId: string, datasetId: string) {
  return useQuery({
    queryKey: datasetKeys.detail(projectId, datasetId),
    queryFn: async () =>
      unwrap(
        await api().GET("/api/v1/projects/{project_id}/datasets/{dataset_id}/", {
          params: { path: { project_id: projectId, dataset_id: datasetId } },
        }),
      ),
  });
}

export function useCreateDataset(projectId: string) {
  const queryClient = useQueryClient();
  return useMutation({
    mutationFn: async (body: Schemas["DatasetInputRequest"]) =>
      unwrap(
        await api().POST("/api/v1/projects/{project_id}/datasets/", {
          params: { path: { project_id: projectId } },
          body,
        }),
      ),
    onSuccess: () => queryClient.invalidateQueries({ queryKey: datasetKeys.list(projectId) }),
  });
}

export function useAddClassLabels(projectId: string, datasetId: string) {
  const queryClient = useQueryClient();
  return useMutation({
    mutationFn: async (names: string[]) =>
      unwrap(
        await api().POST("/api/v1/projects/{project_id}/datasets/{dataset_id}/class-labels/", {
          params: { path: { project_id: projectId, dataset_id: datasetId } },
          body: { names },
        }),
      ),
    onSuccess: () => queryClient.invalidateQueries({ queryKey: datasetKeys.detail(projectId, datasetId) }),
  });
}

/** Polls an import job every second until it ends. */
export function useImportJob(projectId: string, jobId: string) {
  return useQuery({
    queryKey: datasetKeys.importJob(projectId, jobId),
    queryFn: async () =>
      unwrap(
        await api().GET("/api/v1/projects/{project_id}/imports/{job_id}/", {
          params: { path: { project_id: projectId, job_id: jobId } },
        }),
      ),
    refetchInterval: (query) => (query.state.data && TERMINAL_JOB_STATES.has(query.state.data.status) ? false : 1000),
  });
}

/** What the gallery filters on; `split` applies only together with a dataset `version`. */
export interface SampleFilter {
  label?: string;
  /** no annotation, and not checked "no objects" */
  unlabeled?: boolean;
  /** object detection: checked "no objects" (background images) */
  noObjects?: boolean;
  /** "uncertainty": most uncertain first (a model's pre-labeling); else oldest first */
  order?: "oldest" | "uncertainty";
  version?: string;
  split?: Split;
  /** text or original file name holds this, case-insensitive (the text list's search box) */
  search?: string;
}

/** Samples a page: the API's largest page (platform/sampan/core/pagination.py allows up to 500). */
export const SAMPLE_PAGE_SIZE = 500;

export type SamplePage = Schemas["PaginatedSampleOutputList"];

/**
 * A dataset's samples matching `filter`, page after page (`fetchNextPage`), in the API's order
 * (created_at, id; or most uncertain first with `order: "uncertainty"`). Every page reports the
 * total `count` of matching samples.
 */
export function useSampleList(projectId: string, datasetId: string, filter: SampleFilter, pageSize = SAMPLE_PAGE_SIZE, enabled = true) {
  return useInfiniteQuery({
    queryKey: [...datasetKeys.samples(projectId, datasetId), filter, pageSize],
    enabled,
    initialPageParam: 1,
    queryFn: async ({ pageParam }) =>
      unwrap(
        await api().GET("/api/v1/projects/{project_id}/datasets/{dataset_id}/samples/", {
          params: {
            path: { project_id: projectId, dataset_id: datasetId },
            query: {
              page: pageParam,
              page_size: pageSize,
              ...(filter.label ? { label: filter.label } : {}),
              ...(filter.unlabeled ? { unlabeled: true } : {}),
              ...(filter.noObjects ? { no_objects: true } : {}),
              ...(filter.order === "uncertainty" ? { ordering: "-uncertainty" as const } : {}),
              ...(filter.version && filter.split ? { version: filter.version, split: filter.split } : {}),
              ...(filter.search ? { search: filter.search } : {}),
            },
          },
        }),
      ),
    getNextPageParam: (last, _pages, lastPageParam) => (last.next ? lastPageParam + 1 : undefined),
    placeholderData: keepPreviousData,
  });
}

/**
 * One page of a dataset's samples matching `filter` (the text list pages through them, 1-based
 * `page`); the previous page stays shown while the next one loads. Under `datasetKeys.samples`,
 * so label writes (`replaceCachedSample`) and their refetches reach it.
 */
export function useSamplePage(projectId: string, datasetId: string, filter: SampleFilter, page: number, pageSize: number) {
  return useQuery({
    queryKey: [...datasetKeys.samples(projectId, datasetId), "page", filter, page, pageSize],
    queryFn: async () =>
      unwrap(
        await api().GET("/api/v1/projects/{project_id}/datasets/{dataset_id}/samples/", {
          params: {
            path: { project_id: projectId, dataset_id: datasetId },
            query: {
              page,
              page_size: pageSize,
              ...(filter.label ? { label: filter.label } : {}),
              ...(filter.unlabeled ? { unlabeled: true } : {}),
              ...(filter.order === "uncertainty" ? { ordering: "-uncertainty" as const } : {}),
              ...(filter.search ? { search: filter.search } : {}),
            },
          },
        }),
      ),
    placeholderData: keepPreviousData,
  });
}
