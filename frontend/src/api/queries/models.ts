// Models, their versions and trying a version on one image (platform/sampan/registry).
import { useMutation, useQuery } from "@tanstack/react-query";

import { api, type Schemas } from "../client";
import { unwrap } from "../errors";

export type Model = Schemas["ModelOutput"];
export type Prediction = Schemas["PredictionOutput"];
export type PredictResult = Schemas["PredictOutput"];
export type Wheelhouse = Schemas["WheelhouseOutput"];

export const modelKeys = {
  list: (projectId: string) => ["projects", projectId, "models"] as const,
  versions: (projectId: string, modelId: string) => ["projects", projectId, "models", modelId, "versions"] as const,
  wheelhouses: (projectId: string) => ["projects", projectId, "agent-wheelhouses"] as const,
};

export function useModels(projectId: string) {
  return useQuery({
    queryKey: modelKeys.list(projectId),
    queryFn: async () =>
      unwrap(await api().GET("/api/v1/projects/{project_id}/models/", { params: { path: { project_id: projectId } } })),
  });
}

/** The versions of one model (fetched when its row is shown). */
export function useModelVersions(projectId: string, modelId: string) {
  return useQuery({
    queryKey: modelKeys.versions(projectId, modelId),
    queryFn: async () =>
      unwrap(
        await api().GET("/api/v1/projects/{project_id}/model-versions/", {
          params: { path: { project_id: projectId }, query: { model: modelId } },
        }),
      ),
  });
}

/**
 * The device targets (platform, Python) this server can build offline bundles for; empty until
 * an administrator runs `manage.py sampan_wheelhouse`. Fetched only when `enabled` (the dialog
 * is open).
 */
export function useAgentWheelhouses(projectId: string, enabled = true) {
  return useQuery({
    queryKey: modelKeys.wheelhouses(projectId),
    queryFn: async () =>
      unwrap(await api().GET("/api/v1/projects/{project_id}/agent-wheelhouses/", { params: { path: { project_id: projectId } } })),
    enabled,
  });
}

/**
 * Runs a model version on one image (multipart `file`; `top_k` for a classifier,
 * `score_threshold` for a detector). The answer is the agent's for the version's task.
 */
export function usePredict(projectId: string, versionId: string) {
  return useMutation({
    mutationFn: async (vars: { file: File; topK?: number; scoreThreshold?: number }) =>
      unwrap(
        await api().POST("/api/v1/projects/{project_id}/model-versions/{version_id}/predict/", {
          params: { path: { project_id: projectId, version_id: versionId } },
          // the schema types the binary as a string; the serializer sends the File itself
          body: { file: vars.file as unknown as string, top_k: vars.topK, score_threshold: vars.scoreThreshold },
          // the File itself from `vars` (the schema's body is optional, every field too, since a text model takes `text`)
          bodySerializer: () => {
            const form = new FormData();
            form.append("file", vars.file);
            if (vars.topK !== undefined) form.append("top_k", String(vars.topK));
            if (vars.scoreThreshold !== undefined) form.append("score_threshold", String(vars.scoreThreshold));
            return form;
          },
        }),
      ),
  });
}

/** A text model's answer: the top-k classes (`score`: the probability, 0..1) and whether the text was cut. */
export type TextPredictResult = Schemas["TextPredictOutput"];

/** Runs a text model version on one text: multipart `text` and `top_k` (the answer is the text model's). */
export function usePredictText(projectId: string, versionId: string) {
  return useMutation({
    mutationFn: async (vars: { text: string; topK?: number }) => {
      const answer = unwrap(
        await api().POST("/api/v1/projects/{project_id}/model-versions/{version_id}/predict/", {
          params: { path: { project_id: projectId, version_id: versionId } },
          body: { text: vars.text, top_k: vars.topK },
          bodySerializer: () => {
            const form = new FormData();
            form.append("text", vars.text);
            if (vars.topK !== undefined) form.append("top_k", String(vars.topK));
            return form;
          },
        }),
      );
      // a text model answers as one (the API answers by the version's task)
      return answer as TextPredictResult;
    },
  });
}
