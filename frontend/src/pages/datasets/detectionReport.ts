// The `detection` part of an import job's report (platform/sampan/datasets/detection_imports.py):
// what a COCO, Pascal VOC or YOLO zip gave, and every annotation or image that was left out.
import type { ImportFileOutcome } from "../../api/queries/datasets";

export type DetectionFormat = "coco" | "voc" | "yolo";
export const DETECTION_LISTS = ["skipped_annotations", "missing_images", "unannotated_images"] as const;
export type DetectionList = (typeof DETECTION_LISTS)[number];

export interface DetectionReport {
  formats: DetectionFormat[];
  images: number;
  boxes: number;
  background_images: number;
  clipped_boxes: number;
  /** in class order, only classes with boxes */
  classes: { name: string; boxes: number }[];
  skipped_annotations: ImportFileOutcome[];
  missing_images: ImportFileOutcome[];
  unannotated_images: ImportFileOutcome[];
  /** how many of each list there were (a list keeps at most 50,000) */
  totals: Partial<Record<DetectionList, number>>;
  warnings: string[];
}

function list<T>(value: unknown): T[] {
  return Array.isArray(value) ? (value as T[]) : [];
}

function count(value: unknown): number {
  return typeof value === "number" && Number.isFinite(value) ? value : 0;
}

/** The report's `detection` part, or null for an import without an annotated zip. */
export function detectionReportOf(report: unknown): DetectionReport | null {
  if (!report || typeof report !== "object") return null;
  const raw = (report as { detection?: unknown }).detection;
  if (!raw || typeof raw !== "object") return null;
  const d = raw as Record<string, unknown>;
  const totals = (d.totals && typeof d.totals === "object" ? d.totals : {}) as DetectionReport["totals"];
  return {
    formats: list<DetectionFormat>(d.formats),
    images: count(d.images),
    boxes: count(d.boxes),
    background_images: count(d.background_images),
    clipped_boxes: count(d.clipped_boxes),
    classes: list<{ name: string; boxes: number }>(d.classes),
    skipped_annotations: list<ImportFileOutcome>(d.skipped_annotations),
    missing_images: list<ImportFileOutcome>(d.missing_images),
    unannotated_images: list<ImportFileOutcome>(d.unannotated_images),
    totals,
    warnings: list<string>(d.warnings),
  };
}

/** How many entries of `kind` the import had, listed or not. */
export function totalOf(report: DetectionReport, kind: DetectionList): number {
  return Math.max(report.totals[kind] ?? 0, report[kind].length);
}

/** The export formats a dataset version of `taskType` can be downloaded in, default first. */
export function exportFormatsFor(taskType: string): ("coco" | "voc" | "yolo" | "imagenet" | "csv")[] {
  // a text version is one CSV table (text, label, split: platform/sampan/datasets/formats/export.py)
  return taskType === "object_detection" ? ["coco", "voc", "yolo"] : taskType === "text_classification" ? ["csv"] : ["imagenet"];
}

export function exportUrl(projectId: string, versionId: string, format: string): string {
  return `/api/v1/projects/${projectId}/dataset-versions/${versionId}/export/?format=${encodeURIComponent(format)}`;
}
