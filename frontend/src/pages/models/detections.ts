// Object detection answers (POST .../predict/ of a detection version, as the agent answers):
// where each box lies over the displayed image, which ones pass the score slider.
import type { Schemas } from "../../api/client";

export type Detection = Schemas["DetectionOutput"];

/** The lowest score the try-it panel asks the server for: the slider filters from there on. */
export const SCORE_FLOOR = 0.05;
/** The agent's default when a manifest names no threshold (edge_agent.detection.DetectionSettings). */
export const DEFAULT_SCORE_THRESHOLD = 0.3;

/** A box as percentages of the image's width and height (left, top, width, height). */
export interface BoxPercent {
  left: number;
  top: number;
  width: number;
  height: number;
}

const clamp = (value: number, low: number, high: number) => Math.min(high, Math.max(low, value));

/**
 * A box [x1, y1, x2, y2] in px of the upright `width` x `height` image -> its place in % of the
 * image, clipped to it. Percentages make the overlay follow the image at any displayed size: the
 * boxes' container has the image's aspect ratio and exactly its displayed size.
 */
export function boxPercent(box: readonly number[], width: number, height: number): BoxPercent {
  const [x1 = 0, y1 = 0, x2 = 0, y2 = 0] = box;
  const left = clamp(Math.min(x1, x2) / width, 0, 1);
  const top = clamp(Math.min(y1, y2) / height, 0, 1);
  const right = clamp(Math.max(x1, x2) / width, 0, 1);
  const bottom = clamp(Math.max(y1, y2) / height, 0, 1);
  return { left: 100 * left, top: 100 * top, width: 100 * (right - left), height: 100 * (bottom - top) };
}

/** A label is drawn above its box, or inside it when the box starts this near the image's top (%). */
export const LABEL_INSIDE_BELOW_TOP = 8;

export function labelInside(place: BoxPercent): boolean {
  return place.top < LABEL_INSIDE_BELOW_TOP;
}

/** The detections that pass `threshold` (score >= threshold), in the server's order (best first). */
export function visibleDetections(detections: readonly Detection[], threshold: number): Detection[] {
  return detections.filter((d) => d.score >= threshold);
}

/** How many of each class, most first (ties by label). */
export function classCounts(detections: readonly Detection[]): [string, number][] {
  const counts = new Map<string, number>();
  for (const d of detections) counts.set(d.label, (counts.get(d.label) ?? 0) + 1);
  return [...counts.entries()].sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0]));
}

/** The slider's start: the manifest's `detection.score_threshold` (what a device answers with), else 0.3. */
export function defaultScoreThreshold(manifest: unknown): number {
  const detection = manifest && typeof manifest === "object" ? (manifest as { detection?: unknown }).detection : undefined;
  const value = detection && typeof detection === "object" ? (detection as { score_threshold?: unknown }).score_threshold : undefined;
  return typeof value === "number" && Number.isFinite(value) ? clamp(value, SCORE_FLOOR, 1) : DEFAULT_SCORE_THRESHOLD;
}

/**
 * The CSS size of the overlay's frame: the image's aspect ratio, at most `maxHeight` px tall and
 * as wide as its column allows (`min(100%, ...)`), so image and boxes scale together.
 */
export function frameSize(width: number, height: number, maxHeight: number): { width: string; aspectRatio: string } {
  return { width: `min(100%, ${Math.round((maxHeight * width) / height)}px)`, aspectRatio: `${width} / ${height}` };
}
