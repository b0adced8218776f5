// Devices, their telemetry, enrollment tokens and deployments (platform/sampan/fleet).
import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";

import { api, type Schemas } from "../client";
import { unwrap } from "../errors";

export type Device = Schemas["DeviceOutput"];
export type Deployment = Schemas["DeploymentOutput"];
// the deployment's own field, not the enum's generated name (that changes when another serializer shares the choices)
export type DeploymentState = Deployment["state"];
export type Telemetry = Schemas["TelemetryOutput"];
export type ModelVersionRef = Schemas["ModelVersionRefOutput"];

/** What the agent reports as `metrics` (requests, errors and detections count since the agent started). */
export interface DeviceMetrics {
  requests?: number;
  errors?: number;
  latency_ms?: { p50?: number | null; p95?: number | null; p99?: number | null } | null;
  /** the seconds latency_ms covers (null percentiles: no request in them) */
  latency_window_s?: number | null;
  /** the agent's CPU use in % of all the device's cores (cpu_count) */
  cpu_percent?: number | null;
  cpu_count?: number | null;
  memory_bytes?: number | null;
  /** objects detected since the agent started (detection models only) */
  detections?: number | null;
  /** the same per class label: the 20 most frequent */
  detections_by_class?: Record<string, number> | null;
}

/** `deployment` of a device: the active deployment's summary (fleet/serializers.py). */
export interface DeploymentSummary {
  id: string;
  state: DeploymentState;
  error: string;
  model_version: ModelVersionRef;
  state_changed_at: string;
}

export function metricsOf(value: unknown): DeviceMetrics {
  return (value && typeof value === "object" ? value : {}) as DeviceMetrics;
}

export function deploymentOf(device: Device): DeploymentSummary | null {
  return device.deployment && typeof device.deployment === "object" ? (device.deployment as unknown as DeploymentSummary) : null;
}

/** States after which a deployment no longer changes by itself. */
export const SETTLED_DEPLOYMENT_STATES: ReadonlySet<DeploymentState> = new Set(["running", "failed", "superseded"]);

/** Whether a list of deployments still needs polling: some deployment is on its way. */
export function deploymentsInFlight(deployments: readonly { state: DeploymentState }[] | undefined): boolean {
  return Boolean(deployments?.some((d) => !SETTLED_DEPLOYMENT_STATES.has(d.state)));
}

export const DEPLOYMENT_POLL_MS = 2000;
export const FLEET_POLL_MS = 5000;

export const fleetKeys = {
  devices: (projectId: string) => ["projects", projectId, "devices"] as const,
  device: (projectId: string, deviceId: string) => ["projects", projectId, "devices", deviceId] as const,
  telemetry: (projectId: string, deviceId: string) => ["projects", projectId, "devices", deviceId, "telemetry"] as const,
  deployments: (projectId: string) => ["projects", projectId, "deployments"] as const,
};

export function useDevices(projectId: string, refetchInterval: number | false = FLEET_POLL_MS) {
  return useQuery({
    queryKey: fleetKeys.devices(projectId),
    queryFn: async () =>
      unwrap(await api().GET("/api/v1/projects/{project_id}/devices/", { params: { path: { project_id: projectId } } })),
    refetchInterval,
  });
}

export function useDevice(projectId: string, deviceId: string) {
  return useQuery({
    queryKey: fleetKeys.device(projectId, deviceId),
    queryFn: async () =>
      unwrap(
        await api().GET("/api/v1/projects/{project_id}/devices/{device_id}/", {
          params: { path: { project_id: projectId, device_id: deviceId } },
        }),
      ),
    refetchInterval: FLEET_POLL_MS,
  });
}

/** The device's newest telemetry (oldest first), refreshed every 5 s. */
export function useTelemetry(projectId: string, deviceId: string, limit = 360) {
  return useQuery({
    queryKey: [...fleetKeys.telemetry(projectId, deviceId), limit],
    queryFn: async () =>
      unwrap(
        await api().GET("/api/v1/projects/{project_id}/devices/{device_id}/telemetry/", {
          params: { path: { project_id: projectId, device_id: deviceId }, query: { limit } },
        }),
      ),
    refetchInterval: FLEET_POLL_MS,
  });
}

/** Rename a device or replace its tags (its groups). */
export function useUpdateDevice(projectId: string, deviceId: string) {
  const queryClient = useQueryClient();
  return useMutation({
    mutationFn: async (body: Schemas["PatchedDeviceUpdateInputRequest"]) =>
      unwrap(
        await api().PATCH("/api/v1/projects/{project_id}/devices/{device_id}/", {
          params: { path: { project_id: projectId, device_id: deviceId } },
          body,
        }),
      ),
    onSuccess: (device) => {
      // the reply is the device as saved: shown at once, not after the next poll
      queryClient.setQueryData(fleetKeys.device(projectId, deviceId), device);
      void queryClient.invalidateQueries({ queryKey: fleetKeys.devices(projectId), exact: true });
    },
  });
}

/** Every tag used in the fleet, sorted. */
export function fleetTags(devices: readonly { tags: string[] }[] | undefined): string[] {
  return [...new Set((devices ?? []).flatMap((d) => d.tags))].sort();
}

export function useCreateEnrollmentToken(projectId: string) {
  return useMutation({
    mutationFn: async (body: Schemas["EnrollmentTokenInputRequest"]) =>
      unwrap(
        await api().POST("/api/v1/projects/{project_id}/enrollment-tokens/", {
          params: { path: { project_id: projectId } },
          body,
        }),
      ),
  });
}

/** Active deployments (newest first); polled every 2 s while any is still on its way. */
export function useActiveDeployments(projectId: string) {
  return useQuery({
    queryKey: [...fleetKeys.deployments(projectId), "active"],
    queryFn: async () =>
      unwrap(
        await api().GET("/api/v1/projects/{project_id}/deployments/", {
          params: { path: { project_id: projectId }, query: { active: true } },
        }),
      ),
    refetchInterval: (query) => (deploymentsInFlight(query.state.data) ? DEPLOYMENT_POLL_MS : false),
  });
}

export function useDeploy(projectId: string) {
  const queryClient = useQueryClient();
  return useMutation({
    mutationFn: async (body: Schemas["DeploymentInputRequest"]) =>
      unwrap(
        await api().POST("/api/v1/projects/{project_id}/deployments/", {
          params: { path: { project_id: projectId } },
          body,
        }),
      ),
    onSuccess: () => {
      void queryClient.invalidateQueries({ queryKey: fleetKeys.deployments(projectId) });
      void queryClient.invalidateQueries({ queryKey: fleetKeys.devices(projectId) });
    },
  });
}
