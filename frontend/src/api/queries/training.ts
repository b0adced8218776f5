// Training jobs, their evaluation reports and the model versions they produce
// (platform/sampan/training, platform/sampan/registry).
import { keepPreviousData, useMutation, useQuery, useQueryClient } from "@tanstack/react-query";

import { api, type Schemas } from "../client";
import { unwrap } from "../errors";
import { TERMINAL_JOB_STATES } from "./datasets";

export type TrainingJob = Schemas["TrainingJobOutput"];
export type EvaluationReport = Schemas["EvaluationReportOutput"];
export type ModelVersion = Schemas["ModelVersionOutput"];

/**
 * The engines' phases, in order (workers/ml): "features" and "head" train a classifier's output
 * layer on a frozen backbone; "train" is an object detector's training (workers/ml/detection).
 */
export const PHASES = ["decode", "features", "head", "finetune", "train", "export", "evaluate", "done"] as const;
export type Phase = (typeof PHASES)[number];

/** `progress` as the worker reports it (workers/ml/classification.py); keys present when known. */
export interface TrainingProgress {
  phase?: string;
  /** 0..1, share of the whole job done, never decreasing (absent on older jobs) */
  fraction?: number;
  epoch?: number;
  epochs?: number;
  step?: number;
  steps?: number;
  loss?: number;
  val_loss?: number;
  val_accuracy?: number;
  /** object detection, at a validation: mAP at IoU 0.5 and 0.5:0.95 on the validation split */
  val_map50?: number;
  val_map?: number;
  /** seconds left for the whole job, when the engine knows */
  eta_s?: number;
  elapsed_s?: number;
}
/**
 * One `history` entry per evaluated epoch; an object detector's per validation, at a training
 * step (`step`, `val_map50`, `val_map`, `losses`; no `epoch` and no `val_accuracy`).
 */
export interface EpochRecord {
  /** "head" (output layer on a frozen backbone) or "finetune" (all layers); each counts epochs from 1; a detector's "train" */
  phase?: string;
  /** absent in a detector's entries, which have `step` */
  epoch?: number;
  step?: number;
  steps?: number;
  val_map50?: number;
  val_map?: number;
  /** a detector's loss terms (classification, bbox_regression, bbox_ctrness), summed in `loss` */
  losses?: Record<string, number>;
  epochs?: number;
  loss?: number;
  val_loss?: number;
  val_accuracy?: number;
  elapsed_s?: number;
  lr?: number;
}

/** "no_finetune_time": the budget left no step for training all layers (the output layer only) */
export type StopReason = "no_improvement" | "deadline" | "no_finetune_time";
/** `recipe` of a job as the engine records it; after the end it says why training stopped and what it used. */
export interface TrainingRecipe {
  stop_reason?: StopReason | null;
  /** steps of training all layers actually run (0: the model is the output layer only) */
  finetune_steps_done?: number;
  /** epochs without improvement that ended training (with stop_reason "no_improvement") */
  patience?: number;
  /** the resolved preset: "none", "light" or "strong" ("auto" resolved from the data) */
  augmentation?: string;
  /** why that preset (and whether with flips), in the engine's words */
  augmentation_reason?: string;
  /** the same reason as data, translated by the console: code none_requested | photos | grayscale | small */
  augmentation_why?: { code?: string; shorter_side?: number };
  /** whether the preset flipped images horizontally (never for digits or text) */
  augmentation_flip?: boolean;
  /** px */
  resolution?: number;
  resolution_reason?: string;
  /** the same reason as data, translated by the console: code shorter_side | budget | smallest */
  resolution_why?: { code?: string; shorter_side?: number; target?: number; faster_cap?: boolean; budget_s?: number; min_epochs?: number };
  model_preference?: string;
  /** where the worker trained: "cpu", or a GPU as "cuda:0 <its name>" (SAMPAN_TRAINING_DEVICE) */
  device?: string;
  /** images in the training and validation splits (finished jobs) */
  n_train?: number;
  n_val?: number;
}

export function recipeOf(job: { recipe?: unknown }): TrainingRecipe {
  return (job.recipe && typeof job.recipe === "object" ? job.recipe : {}) as TrainingRecipe;
}
export interface PerClassRow {
  label: string;
  index: number;
  precision: number;
  recall: number;
  f1: number;
  support: number;
}
export interface Misclassified {
  sample_id: string;
  true: string;
  predicted: string;
  probability: number | null;
}
export interface Prediction {
  sample_id: string;
  /** index into the report's labels */
  predicted: number;
  probability: number;
}
/** Figures on the validation split, beside a report computed on the test split. */
export interface SplitFigures {
  accuracy: number;
  macro_f1: number;
  n: number;
}
/** `report` of an evaluation (workers/ml/evaluation.py): rows of the matrix are true classes. */
export interface ClassificationReport {
  /** the split the figures were computed on: "test" (never used to choose the model) or "val" */
  split?: string;
  validation?: SplitFigures | null;
  n: number;
  accuracy: number;
  macro_f1: number;
  per_class: PerClassRow[];
  confusion_matrix: number[][];
  misclassified: Misclassified[];
  predictions: Prediction[];
  /** judged on the training split's class counts (newer reports; else judged here from the supports) */
  imbalanced?: boolean;
  /** images per class in the training split, in label order (newer reports) */
  train_class_counts?: number[];
}

/** `metrics` of a finished job: which split the report used and the figures on it. */
export interface TrainingMetrics {
  /** "test" or "val" (newer jobs) */
  evaluated_on?: string;
  val_accuracy?: number;
  macro_f1?: number;
  /** text classification jobs name the validation macro-F1 so (image jobs: `macro_f1`) */
  val_macro_f1?: number;
  test_accuracy?: number;
  test_macro_f1?: number;
  /** classes with training images but none in the evaluated split (newer jobs) */
  classes_not_evaluated?: string[];
  /** object detection: mAP@0.5 and mAP@0.5:0.95 on validation, and on test when there is one */
  val_map50?: number;
  val_map?: number;
  test_map50?: number;
  test_map?: number;
  /** object detection: the serving score threshold (best F1 on validation) and the step kept */
  score_threshold?: number;
  best_step?: number;
}

export function metricsOf(job: { metrics?: unknown }): TrainingMetrics {
  return (job.metrics && typeof job.metrics === "object" ? job.metrics : {}) as TrainingMetrics;
}

/** The figures a finished job (or its model version) is judged by. */
export interface Headline {
  /** the split they were computed on: "test" (never used to choose the model) or "val" */
  split: "test" | "val";
  accuracy: number;
  macroF1: number | null;
  /** classes the model learned that the split holds no image of: the figures say nothing about them */
  notEvaluated: string[];
}

/** The accuracy a finished job is judged by: on the test split when the report used it, else on validation. */
export function headlineAccuracy(metrics: TrainingMetrics): Headline | null {
  const notEvaluated = Array.isArray(metrics.classes_not_evaluated) ? metrics.classes_not_evaluated : [];
  const number = (x: unknown) => (typeof x === "number" ? x : null);
  if (metrics.evaluated_on === "test" && typeof metrics.test_accuracy === "number") {
    return { split: "test", accuracy: metrics.test_accuracy, macroF1: number(metrics.test_macro_f1), notEvaluated };
  }
  if (typeof metrics.val_accuracy !== "number") return null;
  return { split: "val", accuracy: metrics.val_accuracy, macroF1: number(metrics.macro_f1 ?? metrics.val_macro_f1), notEvaluated };
}

export function trainingProgressOf(job: { progress?: unknown }): TrainingProgress {
  return (job.progress && typeof job.progress === "object" ? job.progress : {}) as TrainingProgress;
}

export function historyOf(job: { history?: unknown }): EpochRecord[] {
  return Array.isArray(job.history) ? (job.history as EpochRecord[]) : [];
}

export function classificationReportOf(report: EvaluationReport): ClassificationReport {
  const raw = (report.report && typeof report.report === "object" ? report.report : {}) as Partial<ClassificationReport>;
  return {
    ...(typeof raw.split === "string" ? { split: raw.split } : {}),
    ...(raw.validation && typeof raw.validation === "object" ? { validation: raw.validation } : {}),
    n: raw.n ?? 0,
    accuracy: raw.accuracy ?? 0,
    macro_f1: raw.macro_f1 ?? 0,
    per_class: raw.per_class ?? [],
    confusion_matrix: raw.confusion_matrix ?? [],
    misclassified: raw.misclassified ?? [],
    predictions: raw.predictions ?? [],
    ...(typeof raw.imbalanced === "boolean" ? { imbalanced: raw.imbalanced } : {}),
    ...(Array.isArray(raw.train_class_counts) ? { train_class_counts: raw.train_class_counts } : {}),
  };
}

/** An object detector's error at the serving threshold, IoU 0.5 (workers/ml/detection/evaluation.py). */
export type DetectionErrorKind = "false_positive" | "wrong_class" | "missed";
export interface DetectionError {
  sample_id: string;
  kind: DetectionErrorKind;
  /** x1, y1, x2, y2 px of the upright image: the predicted box, or the missed true box */
  box: [number, number, number, number];
  /** the predicted class (null for a missed object) */
  label: string | null;
  /** the true class (wrong_class, missed; null for a false positive) */
  true_label: string | null;
  /** the prediction's score (null for a missed object) */
  score: number | null;
}
export interface DetectionPerClassRow {
  label: string;
  index: number;
  /** null for a class with no true box in the split (support 0) */
  ap50: number | null;
  ap: number | null;
  /** true boxes of the class in the split */
  support: number;
  /** at the serving threshold, IoU 0.5 */
  precision: number;
  recall: number;
}
/** COCO's interpolated precision at 101 recall points (IoU 0.5); null where the class never reaches that recall. */
export interface PrCurve {
  label: string;
  index: number;
  recall: number[];
  precision: (number | null)[];
}
export interface DetectionPrediction {
  sample_id: string;
  /** [x1, y1, x2, y2, class index, score] at the serving threshold */
  boxes: number[][];
}
/** Images or boxes the engine could not use (undecodable file, a box under 1 px), with the reason. */
export interface SkippedSample {
  sample_id: string;
  error: string;
  path?: string;
  box?: number;
}
/** `report` of an object detector's evaluation (workers/ml/detection/evaluation.py `detection_report`). */
export interface DetectionReport {
  task: "object_detection";
  split?: string;
  /** images */
  n: number;
  /** true boxes */
  boxes: number;
  map50: number;
  map: number;
  score_threshold: number;
  /** all classes together at the serving threshold, IoU 0.5 */
  precision: number;
  recall: number;
  f1: number;
  per_class: DetectionPerClassRow[];
  pr_curves: PrCurve[];
  /** at most 500, worst first; `error_counts` counts them all */
  errors: DetectionError[];
  error_counts: Partial<Record<DetectionErrorKind, number>>;
  predictions: DetectionPrediction[];
  /** the validation split's figures: the split that chose the training step kept and the threshold */
  validation?: { map50: number; map: number; n: number; f1?: number } | null;
  skipped_samples?: SkippedSample[];
}

/** Whether an evaluation is an object detector's (`report.task`); every other report is a classifier's. */
export function isDetectionReport(report: EvaluationReport): boolean {
  const raw = report.report as { task?: unknown } | null;
  return Boolean(raw && typeof raw === "object" && raw.task === "object_detection");
}

export function detectionReportOf(report: EvaluationReport): DetectionReport {
  const raw = (report.report && typeof report.report === "object" ? report.report : {}) as Partial<DetectionReport>;
  const list = <T,>(x: T[] | undefined): T[] => (Array.isArray(x) ? x : []);
  const num = (x: number | undefined) => (typeof x === "number" && Number.isFinite(x) ? x : 0);
  return {
    task: "object_detection",
    ...(typeof raw.split === "string" ? { split: raw.split } : {}),
    n: num(raw.n),
    boxes: num(raw.boxes),
    map50: num(raw.map50),
    map: num(raw.map),
    score_threshold: num(raw.score_threshold),
    precision: num(raw.precision),
    recall: num(raw.recall),
    f1: num(raw.f1),
    per_class: list(raw.per_class),
    pr_curves: list(raw.pr_curves),
    errors: list(raw.errors),
    error_counts: raw.error_counts && typeof raw.error_counts === "object" ? raw.error_counts : {},
    predictions: list(raw.predictions),
    ...(raw.validation && typeof raw.validation === "object" ? { validation: raw.validation } : {}),
    skipped_samples: list(raw.skipped_samples),
  };
}

export const trainingKeys = {
  list: (projectId: string) => ["projects", projectId, "training-jobs"] as const,
  detail: (projectId: string, jobId: string) => ["projects", projectId, "training-jobs", jobId] as const,
  report: (projectId: string, jobId: string) => ["projects", projectId, "training-jobs", jobId, "report"] as const,
  modelVersion: (projectId: string, versionId: string) => ["projects", projectId, "model-versions", versionId] as const,
};

export function useTrainingJobs(projectId: string, page: number, pageSize: number) {
  return useQuery({
    queryKey: [...trainingKeys.list(projectId), page, pageSize],
    queryFn: async () =>
      unwrap(
        await api().GET("/api/v1/projects/{project_id}/training-jobs/", {
          params: { path: { project_id: projectId }, query: { page, page_size: pageSize } },
        }),
      ),
    placeholderData: keepPreviousData,
    // the list shows running jobs' status: refresh while any is not finished
    refetchInterval: (query) =>
      query.state.data?.results.some((job) => !TERMINAL_JOB_STATES.has(job.status)) ? 3000 : false,
  });
}

/**
 * One job. While it is not finished it is refetched every `pollMs` (2 s without a live
 * websocket, 5 s with one: the socket carries progress, the refetch keeps history exact).
 */
export function useTrainingJob(projectId: string, jobId: string, pollMs: number) {
  return useQuery({
    queryKey: trainingKeys.detail(projectId, jobId),
    queryFn: async () =>
      unwrap(
        await api().GET("/api/v1/projects/{project_id}/training-jobs/{job_id}/", {
          params: { path: { project_id: projectId, job_id: jobId } },
        }),
      ),
    refetchInterval: (query) => (query.state.data && TERMINAL_JOB_STATES.has(query.state.data.status) ? false : pollMs),
  });
}

export type Augmentation = Schemas["AugmentationEnum"];
export const AUGMENTATIONS = ["auto", "none", "light", "strong"] as const satisfies readonly Augmentation[];
export type ModelPreference = Schemas["ModelPreferenceEnum"];
export const MODEL_PREFERENCES = ["more_accurate", "faster"] as const satisfies readonly ModelPreference[];
export type StartTrainingRequest = Schemas["TrainingJobInputRequest"];

export function useStartTraining(projectId: string) {
  const queryClient = useQueryClient();
  return useMutation({
    mutationFn: async (body: StartTrainingRequest) =>
      unwrap(
        await api().POST("/api/v1/projects/{project_id}/training-jobs/", {
          params: { path: { project_id: projectId } },
          body,
        }),
      ),
    onSuccess: () => queryClient.invalidateQueries({ queryKey: trainingKeys.list(projectId) }),
  });
}

export function useCancelTraining(projectId: string, jobId: string) {
  const queryClient = useQueryClient();
  return useMutation({
    mutationFn: async () =>
      unwrap(
        await api().POST("/api/v1/projects/{project_id}/training-jobs/{job_id}/cancel/", {
          params: { path: { project_id: projectId, job_id: jobId } },
        }),
      ),
    onSuccess: (job) => {
      queryClient.setQueryData(trainingKeys.detail(projectId, jobId), job);
      void queryClient.invalidateQueries({ queryKey: trainingKeys.list(projectId) });
    },
  });
}

export function useTrainingReport(projectId: string, jobId: string) {
  return useQuery({
    queryKey: trainingKeys.report(projectId, jobId),
    queryFn: async () =>
      unwrap(
        await api().GET("/api/v1/projects/{project_id}/training-jobs/{job_id}/report/", {
          params: { path: { project_id: projectId, job_id: jobId } },
        }),
      ),
  });
}

export function useModelVersion(projectId: string, versionId: string | null | undefined) {
  return useQuery({
    queryKey: trainingKeys.modelVersion(projectId, versionId ?? ""),
    enabled: Boolean(versionId),
    queryFn: async () =>
      unwrap(
        await api().GET("/api/v1/projects/{project_id}/model-versions/{version_id}/", {
          params: { path: { project_id: projectId, version_id: versionId ?? "" } },
        }),
      ),
  });
}
