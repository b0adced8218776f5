// Dataset versions: frozen, immutable snapshots of a dataset's labels and splits
// (platform/sampan/datasets/versions.py).
import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";

import { api, type Schemas } from "../client";
import { unwrap } from "../errors";

/** A version; `min_budget_s` is the shortest training budget the API accepts for it, seconds. */
export type DatasetVersion = Schemas["DatasetVersionOutput"];
export const SPLITS = ["train", "val", "test"] as const;
export type Split = (typeof SPLITS)[number];

/** `stats`: samples, samples per split, and per class the samples in each split. */
export interface VersionStats {
  samples: number;
  /** median of min(width, height) over the samples, px (versions frozen since 2026-12-01) */
  shorter_side_median?: number;
  splits: Partial<Record<Split, number>>;
  classes: Record<string, Partial<Record<Split, number>>>;
}
/** `flags`: warnings found while freezing (a class too small to appear in validation). */
export interface VersionFlag {
  code: string;
  class?: string;
  class_index?: number;
  /** class_imbalance: largest class / smallest class */
  ratio?: number;
  message: string;
}

/** The shortest budget the API accepts for the version, whole seconds; undefined when the API does not say. */
export function minBudgetOf(version: DatasetVersion | undefined): number | undefined {
  const min = version?.min_budget_s;
  return typeof min === "number" && min > 0 ? Math.ceil(min) : undefined;
}

export function statsOf(version: DatasetVersion): VersionStats {
  const raw = (version.stats && typeof version.stats === "object" ? version.stats : {}) as Partial<VersionStats>;
  return {
    samples: raw.samples ?? 0,
    splits: raw.splits ?? {},
    classes: raw.classes ?? {},
    ...(typeof raw.shorter_side_median === "number" && raw.shorter_side_median > 0 ? { shorter_side_median: raw.shorter_side_median } : {}),
  };
}

export function flagsOf(version: DatasetVersion): VersionFlag[] {
  return Array.isArray(version.flags) ? (version.flags as VersionFlag[]) : [];
}

export const versionKeys = {
  list: (projectId: string, datasetId: string) => ["projects", projectId, "datasets", datasetId, "versions"] as const,
  detail: (projectId: string, versionId: string) => ["projects", projectId, "dataset-versions", versionId] as const,
};

export function useDatasetVersions(projectId: string, datasetId: string | undefined) {
  return useQuery({
    queryKey: versionKeys.list(projectId, datasetId ?? ""),
    enabled: Boolean(datasetId),
    queryFn: async () =>
      unwrap(
        await api().GET("/api/v1/projects/{project_id}/datasets/{dataset_id}/versions/", {
          params: { path: { project_id: projectId, dataset_id: datasetId ?? "" } },
        }),
      ),
  });
}

export function useDatasetVersion(projectId: string, versionId: string | undefined) {
  return useQuery({
    queryKey: versionKeys.detail(projectId, versionId ?? ""),
    enabled: Boolean(versionId),
    queryFn: async () =>
      unwrap(
        await api().GET("/api/v1/projects/{project_id}/dataset-versions/{version_id}/", {
          params: { path: { project_id: projectId, version_id: versionId ?? "" } },
        }),
      ),
  });
}

export function useFreezeVersion(projectId: string, datasetId: string) {
  const queryClient = useQueryClient();
  return useMutation({
    mutationFn: async (body: Schemas["DatasetVersionInputRequest"]) =>
      unwrap(
        await api().POST("/api/v1/projects/{project_id}/datasets/{dataset_id}/versions/", {
          params: { path: { project_id: projectId, dataset_id: datasetId } },
          body,
        }),
      ),
    onSuccess: () => queryClient.invalidateQueries({ queryKey: versionKeys.list(projectId, datasetId) }),
  });
}

/** A sample as a version froze it: split, upright size, boxes `[x1, y1, x2, y2, class index]` (px). */
export type VersionItem = Schemas["DatasetVersionItemOutput"];
/** The most sample ids one request of a version's items may name (the API's limit). */
export const MAX_VERSION_ITEMS = 100;

/**
 * The version's frozen items of `sampleIds` (deduplicated, at most MAX_VERSION_ITEMS: the caller
 * asks for a page at a time), by sample id. A version never changes, so they are kept.
 */
export function useVersionItems(projectId: string, versionId: string | undefined, sampleIds: string[]) {
  const ids = [...new Set(sampleIds)].slice(0, MAX_VERSION_ITEMS);
  return useQuery({
    queryKey: [...versionKeys.detail(projectId, versionId ?? ""), "items", ids],
    enabled: Boolean(versionId) && ids.length > 0,
    staleTime: Infinity,
    queryFn: async () => {
      const items = unwrap(
        await api().GET("/api/v1/projects/{project_id}/dataset-versions/{version_id}/items/", {
          params: { path: { project_id: projectId, version_id: versionId ?? "" }, query: { sample_id: ids } },
        }),
      );
      return new Map(items.map((item) => [item.sample_id, item]));
    },
  });
}
