// Devices, their telemetry, enrollment tokens and deployments (platform/sampan/fleet).
import { keepPreviousData, useMutation, useQuery, useQueryClient } from "@tanstack/react-query";

import { api, type Schemas } from "../client";
import type { operations } from "../schema";
import { unwrap } from "../errors";

export type Device = Schemas["DeviceOutput"];
export type Deployment = Schemas["DeploymentOutput"];
// the deployment's own field, not the enum's generated name (that changes when another serializer shares the choices)
export type DeploymentState = Deployment["state"];
export type Telemetry = Schemas["TelemetryOutput"];
export type ModelVersionRef = Schemas["ModelVersionRefOutput"];
/** "Use this machine as a device" (fleet/local.py): whether this server runs agents, and this project's. */
export type LocalDevice = Schemas["LocalDeviceOutput"];

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
/** while the local agent is being started (the supervisor of `make run` polls every 0.5 s) */
export const LOCAL_DEVICE_POLL_MS = 1000;

export const fleetKeys = {
  devices: (projectId: string) => ["projects", projectId, "devices"] as const,
  /** pages of the devices list (under `devices`: what invalidates the list invalidates them too) */
  devicePages: (projectId: string) => ["projects", projectId, "devices", "page"] as const,
  device: (projectId: string, deviceId: string) => ["projects", projectId, "devices", deviceId] as const,
  telemetry: (projectId: string, deviceId: string) => ["projects", projectId, "devices", deviceId, "telemetry"] as const,
  deployments: (projectId: string) => ["projects", projectId, "deployments"] as const,
  /** not under `devices`: invalidating the fleet does not ask for it again */
  localDevice: (projectId: string) => ["projects", projectId, "local-device"] as const,
};

async function fetchAllDevices(projectId: string) {
  return unwrap(await api().GET("/api/v1/projects/{project_id}/devices/", { params: { path: { project_id: projectId } } }));
}

/** Every device of the project (no paging): for pickers and counts, not for the fleet table. */
export function useDevices(projectId: string, refetchInterval: number | false = FLEET_POLL_MS) {
  return useQuery({
    queryKey: fleetKeys.devices(projectId),
    queryFn: () => fetchAllDevices(projectId),
    refetchInterval,
  });
}

/**
 * Every tag used in the fleet, sorted, from the full device list: fetched only while `enabled`
 * (the fleet table turns it on when its tag picker opens) and not polled.
 */
export function useFleetTags(projectId: string, enabled: boolean) {
  return useQuery({
    queryKey: fleetKeys.devices(projectId),
    queryFn: () => fetchAllDevices(projectId),
    enabled,
    select: fleetTags,
  });
}

export type DeviceStatus = NonNullable<NonNullable<operations["devices_list"]["parameters"]["query"]>["status"]>;

/** Which page of the devices list (ordered by name), and the filters it is taken from. */
export interface DevicePageQuery {
  offset: number;
  limit: number;
  status?: DeviceStatus;
  tag?: string;
  /** a model version's id: devices that run it */
  modelVersion?: string;
  /** part of the name, case-insensitive */
  search?: string;
}

export interface DevicePage {
  devices: Device[];
  /** how many devices match the filters (X-Total-Count) */
  total: number;
}

/**
 * One page of devices, by name, filtered on the server; polled every 5 s. The previous page stays
 * shown while the next one loads.
 */
export function useDevicePage(projectId: string, page: DevicePageQuery) {
  const { offset, limit, status, tag, modelVersion, search } = page;
  return useQuery({
    queryKey: [...fleetKeys.devicePages(projectId), { offset, limit, status, tag, modelVersion, search }],
    queryFn: async (): Promise<DevicePage> => {
      const result = await api().GET("/api/v1/projects/{project_id}/devices/", {
        params: {
          path: { project_id: projectId },
          query: {
            limit,
            offset,
            ...(status ? { status } : {}),
            ...(tag ? { tag } : {}),
            ...(modelVersion ? { model_version: modelVersion } : {}),
            ...(search ? { search } : {}),
          },
        },
      });
      const devices = unwrap(result);
      const header = Number.parseInt(result.response.headers.get("X-Total-Count") ?? "", 10);
      // a server without the header: at least what came
      return { devices, total: Number.isNaN(header) ? offset + devices.length : header };
    },
    refetchInterval: FLEET_POLL_MS,
    placeholderData: keepPreviousData,
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
      void queryClient.invalidateQueries({ queryKey: fleetKeys.devicePages(projectId) });
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

/**
 * Whether this server can run an agent for the project on its own machine, and where that agent
 * is; read only while `enabled`, asked for again on each mount, polled every second while the
 * agent is starting. When it has enrolled, the fleet is asked for again, so the device shows up.
 */
export function useLocalDevice(projectId: string, enabled = true) {
  const queryClient = useQueryClient();
  return useQuery({
    queryKey: fleetKeys.localDevice(projectId),
    queryFn: async () => {
      const status = unwrap(await api().GET("/api/v1/projects/{project_id}/local-device/", { params: { path: { project_id: projectId } } }));
      const before = queryClient.getQueryData<LocalDevice>(fleetKeys.localDevice(projectId));
      if (status.state === "enrolled" && before?.state !== "enrolled") {
        void queryClient.invalidateQueries({ queryKey: fleetKeys.devices(projectId) });
      }
      return status;
    },
    enabled,
    // asked for again each time the Add device dialog opens
    staleTime: 0,
    refetchInterval: (query) => (query.state.data?.state === "requested" ? LOCAL_DEVICE_POLL_MS : false),
  });
}

/** Ask the server (make run only: 409 `local_agents_unavailable` elsewhere) to start an agent on its own machine. */
export function useRequestLocalDevice(projectId: string) {
  const queryClient = useQueryClient();
  return useMutation({
    mutationFn: async () =>
      unwrap(await api().POST("/api/v1/projects/{project_id}/local-device/", { params: { path: { project_id: projectId } } })),
    // the reply is the new state ("requested", or "enrolled" when it already was): shown, and polled, at once
    onSuccess: (status) => {
      queryClient.setQueryData(fleetKeys.localDevice(projectId), status);
      if (status.state === "enrolled") void queryClient.invalidateQueries({ queryKey: fleetKeys.devices(projectId) });
    },
    onError: () => void queryClient.invalidateQueries({ queryKey: fleetKeys.localDevice(projectId) }),
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
