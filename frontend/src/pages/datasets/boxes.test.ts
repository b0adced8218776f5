import { describe, expect, it } from "vitest";

import type { Sample } from "../../api/queries/datasets";
import { annotationOfBox, rectOfAnnotation } from "./boxAnnotations";
import { boxesOfSample, clampRect, diffRects, isTooSmall, toApiBoxes, withClass, withoutBox, withRect, type Box } from "./boxes";
import { canRedo, canUndo, historyCommit, historyInit, historyRedo, historyUndo, HISTORY_LIMIT } from "./boxHistory";

const box = (id: string, x1: number, y1: number, x2: number, y2: number, classLabelId = "car"): Box => ({ id, classLabelId, x1, y1, x2, y2 });

describe("boxesOfSample", () => {
  it("takes the box annotations (xyxy px) and leaves the image-level class out", () => {
    const sample = {
      id: "s",
      width: 320,
      height: 240,
      annotations: [
        { id: "a", kind: "box", class_label: "car", class_label_id: "c1", x1: 10, y1: 20, x2: 110.5, y2: 80 },
        { id: "b", kind: "class", class_label: "street", class_label_id: "c2", x1: null, y1: null, x2: null, y2: null },
      ],
    } as unknown as Sample;
    expect(boxesOfSample(sample)).toEqual([{ id: "a", classLabelId: "c1", x1: 10, y1: 20, x2: 110.5, y2: 80 }]);
  });
});

describe("toApiBoxes", () => {
  it("sends every box, rounded to 0.01 px, with its class id", () => {
    expect(toApiBoxes([box("a", 10.123, 20.456, 110.999, 80), box("b", 0, 0, 5, 5, "person")], 320, 240)).toEqual([
      { x1: 10.12, y1: 20.46, x2: 111, y2: 80, class_label_id: "car" },
      { x1: 0, y1: 0, x2: 5, y2: 5, class_label_id: "person" },
    ]);
  });

  it("keeps a box the mouse pushed past an edge inside the image (the API refuses it otherwise)", () => {
    expect(toApiBoxes([box("a", -3.2, 100, 330, 250)], 320, 240)).toEqual([{ x1: 0, y1: 100, x2: 320, y2: 240, class_label_id: "car" }]);
  });
});

describe("clampRect and isTooSmall", () => {
  it("orders the corners and clamps them to the image", () => {
    expect(clampRect({ x1: 50, y1: 60, x2: -10, y2: 10 }, 40, 40)).toEqual({ x1: 0, y1: 10, x2: 40, y2: 40 });
  });

  it("calls a box under 2 px on either side a slip of the mouse", () => {
    expect(isTooSmall({ x1: 10, y1: 10, x2: 11.5, y2: 50 })).toBe(true);
    expect(isTooSmall({ x1: 10, y1: 10, x2: 12, y2: 12 })).toBe(false);
  });
});

describe("list edits", () => {
  const list = [box("a", 0, 0, 10, 10), box("b", 5, 5, 20, 20)];

  it("changes one box's corners or class, or removes it, and leaves the others as they were", () => {
    const moved = withRect(list, "b", { x1: 6, y1: 7, x2: 21, y2: 22 });
    expect(moved[1]).toEqual(box("b", 6, 7, 21, 22));
    expect(moved[0]).toBe(list[0]);
    expect(withClass(list, "a", "person")[0]?.classLabelId).toBe("person");
    expect(withoutBox(list, "a").map((b) => b.id)).toEqual(["b"]);
  });
});

describe("diffRects", () => {
  it("says which boxes the annotator must add, remove and redraw", () => {
    const shown = [
      { id: "a", rect: { x1: 0, y1: 0, x2: 10, y2: 10 } },
      { id: "b", rect: { x1: 5, y1: 5, x2: 20, y2: 20 } },
      { id: "gone", rect: { x1: 1, y1: 1, x2: 3, y2: 3 } },
    ];
    const desired = [box("a", 0, 0, 10, 10), box("b", 6, 5, 20, 20), box("new", 30, 30, 40, 40)];
    const diff = diffRects(shown, desired);
    expect(diff.remove).toEqual(["gone"]);
    expect(diff.add.map((b) => b.id)).toEqual(["new"]);
    expect(diff.update.map((b) => b.id)).toEqual(["b"]);
  });

  it("does not redraw a box whose corners went through x/y/w/h and back", () => {
    const b = box("a", 0.1, 0.2, 0.3, 0.7);
    const rect = rectOfAnnotation(annotationOfBox(b));
    expect(rect).not.toBeNull();
    expect(diffRects([{ id: "a", rect: rect! }], [b]).update).toEqual([]);
  });
});

describe("Annotorious rectangles", () => {
  it("round-trips a box through Annotorious' x, y, w, h geometry", () => {
    const a = annotationOfBox(box("a", 40, 120, 160, 190));
    expect(a.target.selector).toEqual({
      type: "RECTANGLE",
      geometry: { x: 40, y: 120, w: 120, h: 70, bounds: { minX: 40, minY: 120, maxX: 160, maxY: 190 } },
    });
    expect(rectOfAnnotation(a)).toEqual({ x1: 40, y1: 120, x2: 160, y2: 190 });
  });

  it("takes a rotated rectangle's axis-aligned bounds", () => {
    const a = annotationOfBox(box("a", 40, 120, 160, 190));
    const rotated = {
      ...a,
      target: {
        ...a.target,
        selector: { type: "RECTANGLE", geometry: { x: 50, y: 100, w: 100, h: 100, rot: 0.5, bounds: { minX: 30, minY: 90, maxX: 170, maxY: 230 } } },
      },
    } as typeof a;
    expect(rectOfAnnotation(rotated)).toEqual({ x1: 30, y1: 90, x2: 170, y2: 230 });
  });

  it("ignores shapes that are not rectangles", () => {
    const a = annotationOfBox(box("a", 0, 0, 1, 1));
    const polygon = { ...a, target: { ...a.target, selector: { type: "POLYGON", geometry: { points: [], bounds: a.target.selector.geometry.bounds } } } } as typeof a;
    expect(rectOfAnnotation(polygon)).toBeNull();
  });
});

describe("box history", () => {
  const one = [box("a", 0, 0, 10, 10)];
  const two = [...one, box("b", 5, 5, 20, 20)];

  it("undoes and redoes whole lists, and a new change drops the redo list", () => {
    let h = historyCommit(historyInit([]), one);
    h = historyCommit(h, two);
    expect(canUndo(h)).toBe(true);
    h = historyUndo(h);
    expect(h.present).toBe(one);
    expect(canRedo(h)).toBe(true);
    h = historyRedo(h);
    expect(h.present).toBe(two);
    h = historyUndo(historyUndo(h));
    expect(h.present).toEqual([]);
    expect(canUndo(h)).toBe(false);
    expect(historyUndo(h)).toBe(h);
    h = historyCommit(h, one);
    expect(canRedo(h)).toBe(false);
  });

  it("makes one undo step of one drag (same merge key) and two of two drags", () => {
    let h = historyCommit(historyInit([]), one);
    for (const x of [1, 2, 3]) h = historyCommit(h, withRect(h.present, "a", { x1: x, y1: 0, x2: 10 + x, y2: 10 }), "move:a:1");
    expect(h.past).toHaveLength(2);
    expect(h.present[0]?.x1).toBe(3);
    h = historyCommit(h, withRect(h.present, "a", { x1: 9, y1: 0, x2: 19, y2: 10 }), "move:a:2");
    expect(historyUndo(h).present[0]?.x1).toBe(3);
    expect(historyUndo(historyUndo(h)).present).toBe(one);
  });

  it("counts every change, so the autosave knows when to run", () => {
    const h = historyCommit(historyInit([]), one);
    expect([historyInit([]).revision, h.revision, historyUndo(h).revision, historyRedo(historyUndo(h)).revision]).toEqual([0, 1, 2, 3]);
    expect(historyCommit(h, h.present)).toBe(h);
  });

  it(`keeps the last ${HISTORY_LIMIT} steps`, () => {
    let h = historyInit<Box[]>([]);
    for (let i = 0; i < HISTORY_LIMIT + 20; i += 1) h = historyCommit(h, [box(`b${i}`, 0, 0, 5, 5)]);
    expect(h.past).toHaveLength(HISTORY_LIMIT);
  });
});
