// Rollouts: one model version sent to devices in batches (a canary first), observed, and rolled
// back automatically on a regression (platform/sampan/fleet/rollouts.py).
import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";

import { api, type Schemas } from "../client";
import { unwrap } from "../errors";
import { fleetKeys } from "./fleet";

export type Rollout = Schemas["RolloutOutput"];
export type RolloutDetail = Schemas["RolloutDetailOutput"];
export type RolloutDevice = Schemas["RolloutDeviceOutput"];
export type RolloutInput = Schemas["RolloutInputRequest"];
export type RolloutState = Schemas["RolloutStateEnum"];
export type RolloutStrategy = Schemas["StrategyEnum"];
export type RolloutSeriesPoint = Schemas["RolloutSeriesPointOutput"];

export const ROLLOUT_STRATEGIES = ["canary", "all"] as const satisfies readonly RolloutStrategy[];

/** The thresholds' defaults (the API's). */
export const ROLLOUT_DEFAULTS = {
  observe_minutes: 10,
  max_error_rate_increase: 0.02,
  max_latency_ratio: 1.5,
  max_confidence_drop: 0.1,
  max_restarts: 0,
  min_requests: 20,
} as const;

/** One side of the comparison: the new version's devices (candidate) or the previous versions' (baseline). */
export interface ComparisonSide {
  devices: number;
  samples: number;
  requests: number;
  errors: number;
  /** errors / requests; null without requests */
  error_rate: number | null;
  restarts: number;
  /** the median of the reported p95 latencies; null without reports */
  p95_ms: number | null;
  /** the mean of the reported mean top-1 confidences; null without reports */
  confidence: number | null;
}

/** `comparison` of a rollout: the last pass's measurements and what regressed ({} before the first). */
export interface Comparison {
  candidate: ComparisonSide;
  baseline: ComparisonSide;
  regressions: string[];
  at: string | null;
  /** what keeps an idle canary observing (it has not served min_requests yet) */
  waiting_for: string | null;
}

export function comparisonOf(value: unknown): Comparison | null {
  if (!value || typeof value !== "object") return null;
  const c = value as Partial<Comparison>;
  if (!c.candidate || !c.baseline) return null;
  return {
    candidate: c.candidate,
    baseline: c.baseline,
    regressions: Array.isArray(c.regressions) ? c.regressions : [],
    at: c.at ?? null,
    waiting_for: typeof c.waiting_for === "string" ? c.waiting_for : null,
  };
}

export const ROLLOUTS_POLL_MS = 10_000;
export const ROLLOUT_POLL_MS = 5000;

export const rolloutKeys = {
  list: (projectId: string) => ["projects", projectId, "rollouts"] as const,
  detail: (projectId: string, rolloutId: string) => ["projects", projectId, "rollouts", rolloutId] as const,
};

/** The project's rollouts, newest first; refreshed every 10 s while any is rolling. */
export function useRollouts(projectId: string) {
  return useQuery({
    queryKey: rolloutKeys.list(projectId),
    queryFn: async () => unwrap(await api().GET("/api/v1/projects/{project_id}/rollouts/", { params: { path: { project_id: projectId } } })),
    refetchInterval: (query) => (query.state.data?.some((r) => r.state === "rolling") ? ROLLOUTS_POLL_MS : false),
  });
}

/** One rollout with its devices and per-minute series; refreshed every 5 s while it is rolling. */
export function useRollout(projectId: string, rolloutId: string) {
  return useQuery({
    queryKey: rolloutKeys.detail(projectId, rolloutId),
    queryFn: async () =>
      unwrap(
        await api().GET("/api/v1/projects/{project_id}/rollouts/{rollout_id}/", {
          params: { path: { project_id: projectId, rollout_id: rolloutId } },
        }),
      ),
    refetchInterval: (query) => (query.state.data?.state === "rolling" ? ROLLOUT_POLL_MS : false),
  });
}

export function useCreateRollout(projectId: string) {
  const queryClient = useQueryClient();
  return useMutation({
    mutationFn: async (body: RolloutInput) =>
      unwrap(await api().POST("/api/v1/projects/{project_id}/rollouts/", { params: { path: { project_id: projectId } }, body })),
    onSuccess: () => {
      void queryClient.invalidateQueries({ queryKey: rolloutKeys.list(projectId), exact: true });
      void queryClient.invalidateQueries({ queryKey: fleetKeys.devices(projectId), exact: true });
      void queryClient.invalidateQueries({ queryKey: fleetKeys.deployments(projectId) });
    },
  });
}

/** Halt a rolling rollout (409 when it no longer is); the reply is the rollout as it is now. */
export function useRollbackRollout(projectId: string, rolloutId: string) {
  const queryClient = useQueryClient();
  return useMutation({
    mutationFn: async (reason: string | undefined) =>
      unwrap(
        await api().POST("/api/v1/projects/{project_id}/rollouts/{rollout_id}/rollback/", {
          params: { path: { project_id: projectId, rollout_id: rolloutId } },
          // the API refuses a blank reason; without one it records "rolled back by hand"
          body: reason ? { reason } : {},
        }),
      ),
    onSuccess: (rollout) => queryClient.setQueryData(rolloutKeys.detail(projectId, rolloutId), rollout),
    // a 409: the rollout changed under the page (completed or rolled back meanwhile)
    onError: () => void queryClient.invalidateQueries({ queryKey: rolloutKeys.detail(projectId, rolloutId), exact: true }),
    onSettled: () => {
      void queryClient.invalidateQueries({ queryKey: rolloutKeys.list(projectId), exact: true });
      void queryClient.invalidateQueries({ queryKey: fleetKeys.devices(projectId), exact: true });
    },
  });
}
