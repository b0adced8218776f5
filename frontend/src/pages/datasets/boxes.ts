// Pure rules of detection labeling: the box list of one sample, its undo history, and the body of
// `PUT samples/{id}/boxes/`. No React and no Annotorious here (boxAnnotations.ts converts to and
// from Annotorious), so this module is tested alone and costs the classification path nothing.
import type { Schemas } from "../../api/client";
import type { Sample } from "../../api/queries/datasets";

/**
 * One bounding box as the console holds it: xyxy in pixels of the upright image (the API's
 * convention, platform/sampan/datasets/services.py `_check_box`: 0 <= x1 < x2 <= width,
 * 0 <= y1 < y2 <= height). `id` is the console's own (the API replaces every box on each PUT).
 */
export interface Box {
  id: string;
  classLabelId: string;
  x1: number;
  y1: number;
  x2: number;
  y2: number;
}

export type Rect = Pick<Box, "x1" | "y1" | "x2" | "y2">;
export type ApiBox = Schemas["BoxInputRequest"];

/** Boxes smaller than this (px, either side) are a slip of the mouse, not a box. */
export const MIN_BOX_PX = 2;

/** The sample's bounding boxes as the API stored them. */
export function boxesOfSample(sample: Sample): Box[] {
  const boxes: Box[] = [];
  for (const a of sample.annotations) {
    if (a.kind !== "box" || a.x1 == null || a.y1 == null || a.x2 == null || a.y2 == null) continue;
    boxes.push({ id: a.id, classLabelId: a.class_label_id, x1: a.x1, y1: a.y1, x2: a.x2, y2: a.y2 });
  }
  return boxes;
}

/** `rect` with its corners ordered and kept inside a `width` x `height` image. */
export function clampRect(rect: Rect, width: number, height: number): Rect {
  const clamp = (v: number, max: number) => Math.min(Math.max(v, 0), max);
  return {
    x1: clamp(Math.min(rect.x1, rect.x2), width),
    y1: clamp(Math.min(rect.y1, rect.y2), height),
    x2: clamp(Math.max(rect.x1, rect.x2), width),
    y2: clamp(Math.max(rect.y1, rect.y2), height),
  };
}

export function isTooSmall(rect: Rect): boolean {
  return rect.x2 - rect.x1 < MIN_BOX_PX || rect.y2 - rect.y1 < MIN_BOX_PX;
}

/** Same corners within `tolerance` px (geometry goes through x/y/w/h and back in Annotorious). */
export function sameRect(a: Rect, b: Rect, tolerance = 1e-6): boolean {
  return (
    Math.abs(a.x1 - b.x1) <= tolerance &&
    Math.abs(a.y1 - b.y1) <= tolerance &&
    Math.abs(a.x2 - b.x2) <= tolerance &&
    Math.abs(a.y2 - b.y2) <= tolerance
  );
}

const round2 = (v: number) => Math.round(v * 100) / 100;

/**
 * The body of `PUT samples/{id}/boxes/`: every box of the sample (the API replaces them all),
 * corners rounded to 0.01 px and clamped into the image so the server never refuses a box that
 * the mouse pushed a fraction of a pixel past the edge.
 */
export function toApiBoxes(boxes: Box[], width: number, height: number): ApiBox[] {
  return boxes.map((box) => {
    const r = clampRect(box, width, height);
    return { x1: round2(r.x1), y1: round2(r.y1), x2: round2(r.x2), y2: round2(r.y2), class_label_id: box.classLabelId };
  });
}

export function withRect(boxes: Box[], id: string, rect: Rect): Box[] {
  return boxes.map((b) => (b.id === id ? { ...b, ...rect } : b));
}

export function withClass(boxes: Box[], id: string, classLabelId: string): Box[] {
  return boxes.map((b) => (b.id === id ? { ...b, classLabelId } : b));
}

export function withoutBox(boxes: Box[], id: string): Box[] {
  return boxes.filter((b) => b.id !== id);
}

/** What to change in the annotator so that it shows `desired`, given what it shows now. */
export function diffRects(shown: { id: string; rect: Rect }[], desired: Box[]) {
  const shownById = new Map(shown.map((s) => [s.id, s.rect]));
  const desiredIds = new Set(desired.map((b) => b.id));
  return {
    remove: shown.filter((s) => !desiredIds.has(s.id)).map((s) => s.id),
    add: desired.filter((b) => !shownById.has(b.id)),
    update: desired.filter((b) => {
      const rect = shownById.get(b.id);
      return rect !== undefined && !sameRect(rect, b);
    }),
  };
}

// Ten distinct colours (antd's palette), one per class in position order, repeating after ten.
const COLOURS = ["#1677ff", "#fa541c", "#52c41a", "#eb2f96", "#13c2c2", "#722ed1", "#faad14", "#2f54eb", "#a0d911", "#f5222d"];

export function classColour(position: number): string {
  return COLOURS[((position % COLOURS.length) + COLOURS.length) % COLOURS.length] as string;
}
