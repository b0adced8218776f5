// Compression jobs: a float model version made smaller and faster for one device, every candidate
// measured on that device, the fastest within the accuracy budget registered
// (platform/sampan/compression, workers/ml/compression).
import { keepPreviousData, useMutation, useQuery, useQueryClient } from "@tanstack/react-query";

import { api, type Schemas } from "../client";
import { unwrap } from "../errors";
import { TERMINAL_JOB_STATES } from "./datasets";

export type CompressionJob = Schemas["CompressionJobOutput"];
export type StartCompressionRequest = Schemas["CompressionJobInputRequest"];
export type CompressionMethod = Schemas["MethodsEnum"];
/** The candidate families the form offers, in the order the engine tries them. */
export const COMPRESSION_METHODS = ["int8", "resolution", "pruning", "fp16"] as const satisfies readonly CompressionMethod[];
/** What applies to a text classifier (workers/ml/compression/text.py: graph-level candidates only; the
 * students of "resolution" and "pruning" are image networks), the API's default for one. */
export const TEXT_COMPRESSION_METHODS = ["int8", "fp16"] as const satisfies readonly CompressionMethod[];

/** The methods the form offers for a model version of `task`. */
export function compressionMethodsFor(task: string | null | undefined): readonly CompressionMethod[] {
  return task === "text_classification" ? TEXT_COMPRESSION_METHODS : COMPRESSION_METHODS;
}

/** The API's defaults (CompressionJobInputRequest). */
export const DEFAULT_ACCURACY_BUDGET_PT = 1.0;
export const DEFAULT_COMPRESSION_BUDGET_S = 600;
export const MIN_COMPRESSION_BUDGET_S = 120;
export const MAX_COMPRESSION_BUDGET_S = 21_600;
export const MAX_ACCURACY_BUDGET_PT = 50;

/** The engine's phases (workers/ml/compression/engine.py), then the task's "measure". */
export const COMPRESSION_PHASES = ["decode", "reference", "int8", "student", "measure", "done"] as const;
export type CompressionPhase = (typeof COMPRESSION_PHASES)[number];

/** `progress` of a compression job; keys present when known. */
export interface CompressionProgress {
  phase?: string;
  /** the candidate being made */
  candidate?: string;
  /** a student's distillation epoch (0: its starting point is being evaluated) and the planned total */
  epoch?: number;
  epochs?: number;
  val_accuracy?: number;
  /** 0..1 of the compression budget (the measuring reports 0.9) */
  fraction?: number;
  elapsed_s?: number;
  message?: string;
}

export type BenchmarkStatus = Schemas["BenchmarkStatusEnum"];

/** The device's (or the compression worker's) measurement of one candidate. */
export interface CandidateLatency {
  p50_ms?: number | null;
  p99_ms?: number | null;
  mean_ms?: number | null;
  throughput_ips?: number | null;
  load_s?: number | null;
  peak_memory_bytes?: number | null;
  serving_p99_ms?: number | null;
  serving_requests?: number | null;
  runs?: number | null;
}

/** One entry of a job's `candidates` (the database's copy is the truth; events only say "refetch"). */
export interface Candidate {
  /** "fp32" is the float reference; "int8", "res64", "pruned50", "res64-int8", "int8-percentile", "fp16" ... */
  key: string;
  method?: "fp32" | "int8" | "distilled" | "fp16" | string;
  params?: {
    resolution?: number;
    pruning_ratio?: number;
    calibration_method?: string;
    calibration_images?: number;
    per_channel?: boolean;
    epochs?: number;
    [name: string]: unknown;
  };
  parent?: string | null;
  status?: "ready" | "failed" | "skipped" | string;
  reason?: string;
  /** 0..1 on `evaluated_on` */
  accuracy?: number | null;
  evaluated_on?: "test" | "val" | string;
  /** how many images `accuracy` is measured on */
  n_evaluated?: number;
  val_accuracy?: number | null;
  /** points lost against fp32 (negative: better than fp32) */
  accuracy_drop_pt?: number | null;
  within_budget?: boolean;
  size_bytes?: number | null;
  macs?: number | null;
  preprocessing?: { size?: number[] } | null;
  benchmark?: { id?: string | null; status?: BenchmarkStatus | string; error?: string } | null;
  latency?: CandidateLatency | null;
  compatible?: boolean;
  incompatibilities?: string[];
}

export function candidatesOf(job: { candidates?: unknown }): Candidate[] {
  return Array.isArray(job.candidates)
    ? (job.candidates as unknown[]).filter((c): c is Candidate => Boolean(c) && typeof c === "object" && typeof (c as Candidate).key === "string")
    : [];
}

export function compressionProgressOf(job: { progress?: unknown }): CompressionProgress {
  return (job.progress && typeof job.progress === "object" ? job.progress : {}) as CompressionProgress;
}

export const compressionKeys = {
  all: (projectId: string) => ["projects", projectId, "compression-jobs"] as const,
  list: (projectId: string, sourceId: string) => ["projects", projectId, "compression-jobs", "list", sourceId] as const,
  detail: (projectId: string, jobId: string) => ["projects", projectId, "compression-jobs", jobId] as const,
};

export const COMPRESSION_LIST_POLL_MS = 3000;

/** The compression jobs of one model version (newest first), refreshed while any is not finished. */
export function useCompressionJobs(projectId: string, sourceId: string, page = 1, pageSize = 20) {
  return useQuery({
    queryKey: [...compressionKeys.list(projectId, sourceId), page, pageSize],
    queryFn: async () =>
      unwrap(
        await api().GET("/api/v1/projects/{project_id}/compression-jobs/", {
          params: { path: { project_id: projectId }, query: { source: sourceId, page, page_size: pageSize } },
        }),
      ),
    placeholderData: keepPreviousData,
    refetchInterval: (query) =>
      query.state.data?.results?.some((job) => !TERMINAL_JOB_STATES.has(job.status)) ? COMPRESSION_LIST_POLL_MS : false,
  });
}

/**
 * One job. While it is not finished it is refetched every `pollMs` (2 s without a live
 * websocket, 5 s with one; every socket event also refetches it at once).
 */
export function useCompressionJob(projectId: string, jobId: string, pollMs: number) {
  return useQuery({
    queryKey: compressionKeys.detail(projectId, jobId),
    queryFn: async () =>
      unwrap(
        await api().GET("/api/v1/projects/{project_id}/compression-jobs/{job_id}/", {
          params: { path: { project_id: projectId, job_id: jobId } },
        }),
      ),
    refetchInterval: (query) => (query.state.data && TERMINAL_JOB_STATES.has(query.state.data.status) ? false : pollMs),
  });
}

export function useStartCompression(projectId: string) {
  const queryClient = useQueryClient();
  return useMutation({
    mutationFn: async (body: StartCompressionRequest) =>
      unwrap(
        await api().POST("/api/v1/projects/{project_id}/compression-jobs/", {
          params: { path: { project_id: projectId } },
          body,
        }),
      ),
    onSuccess: (job) => {
      queryClient.setQueryData(compressionKeys.detail(projectId, job.id), job);
      void queryClient.invalidateQueries({ queryKey: compressionKeys.all(projectId) });
    },
  });
}

export function useCancelCompression(projectId: string, jobId: string) {
  const queryClient = useQueryClient();
  return useMutation({
    mutationFn: async () =>
      unwrap(
        await api().POST("/api/v1/projects/{project_id}/compression-jobs/{job_id}/cancel/", {
          params: { path: { project_id: projectId, job_id: jobId } },
        }),
      ),
    onSuccess: (job) => {
      queryClient.setQueryData(compressionKeys.detail(projectId, jobId), job);
      void queryClient.invalidateQueries({ queryKey: compressionKeys.all(projectId) });
    },
  });
}
