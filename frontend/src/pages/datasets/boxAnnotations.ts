// Boxes to and from Annotorious' own annotation format (not W3C: no adapter, no parsing). Its
// rectangle geometry is x, y, w, h in pixels of the image's natural size (the SVG layer's viewBox
// is the image's natural size), which are the upright image's pixels the API stores.
// Only types come from Annotorious here, so this module loads nothing of it.
import type { ImageAnnotation, RectangleGeometry, ShapeType } from "@annotorious/react";

import type { Box, Rect } from "./boxes";

/** The axis-aligned corners of an Annotorious rectangle; null for any other shape. */
export function rectOfAnnotation(annotation: ImageAnnotation): Rect | null {
  const selector = annotation.target.selector;
  if ((selector.type as string) !== "RECTANGLE") return null;
  const g = selector.geometry as RectangleGeometry;
  if (g.rot) {
    // a rotated rectangle (Annotorious' rotation handle is hidden, but a rotation can still come
    // in): its axis-aligned bounds, the only kind of box the API stores
    return { x1: g.bounds.minX, y1: g.bounds.minY, x2: g.bounds.maxX, y2: g.bounds.maxY };
  }
  return {
    x1: Math.min(g.x, g.x + g.w),
    y1: Math.min(g.y, g.y + g.h),
    x2: Math.max(g.x, g.x + g.w),
    y2: Math.max(g.y, g.y + g.h),
  };
}

/** The Annotorious annotation that draws `box` (the class lives in the console's state). */
export function annotationOfBox(box: Box): ImageAnnotation {
  const geometry: RectangleGeometry = {
    x: box.x1,
    y: box.y1,
    w: box.x2 - box.x1,
    h: box.y2 - box.y1,
    bounds: { minX: box.x1, minY: box.y1, maxX: box.x2, maxY: box.y2 },
  };
  return {
    id: box.id,
    bodies: [],
    target: { annotation: box.id, selector: { type: "RECTANGLE" as ShapeType.RECTANGLE, geometry } },
  };
}
