import { describe, expect, it } from "vitest";

import type { Sample } from "../../api/queries/datasets";
import { nextUnlabeledId, undoRedoOfKey } from "./labeling";

function sample(id: string, label: string | null): Sample {
  return {
    id,
    dataset_id: "d",
    original_name: `${id}.png`,
    width: 28,
    height: 28,
    content_sha256: id,
    source: "upload",
    created_at: "2026-11-29T12:00:00Z",
    image_url: `/img/${id}`,
    text: "",
    text_length: 0,
    etag: `etag-${id}`,
    no_objects: false,
    suggestions: [],
    uncertainty: null,
    annotations: label
      ? [{ id: `a-${id}`, kind: "class", class_label: label, class_label_id: "c", x1: null, y1: null, x2: null, y2: null }]
      : [],
  };
}

describe("undoRedoOfKey", () => {
  const key = (key: string, mods: { ctrl?: boolean; meta?: boolean; shift?: boolean; alt?: boolean } = {}) =>
    undoRedoOfKey({ key, ctrlKey: !!mods.ctrl, metaKey: !!mods.meta, shiftKey: !!mods.shift, altKey: !!mods.alt });

  it("undoes with Ctrl+Z or Cmd+Z and redoes with Ctrl+Shift+Z or Ctrl+Y", () => {
    expect(key("z", { ctrl: true })).toBe("undo");
    expect(key("z", { meta: true })).toBe("undo");
    expect(key("Z", { ctrl: true, shift: true })).toBe("redo");
    expect(key("y", { ctrl: true })).toBe("redo");
  });

  it("leaves plain letters (class keys) and other combinations alone", () => {
    expect(key("z")).toBeNull();
    expect(key("y")).toBeNull();
    expect(key("z", { ctrl: true, alt: true })).toBeNull();
    expect(key("c", { ctrl: true })).toBeNull();
  });
});

describe("nextUnlabeledId", () => {
  const page = [sample("a", null), sample("b", "cat"), sample("c", null), sample("d", "dog")];

  it("moves forward to the next unlabeled sample", () => {
    expect(nextUnlabeledId(page, "a")).toBe("c");
  });

  it("wraps around to the start of the page", () => {
    expect(nextUnlabeledId(page, "c")).toBe("a");
  });

  it("is null when no other sample is unlabeled", () => {
    expect(nextUnlabeledId([sample("a", null), sample("b", "cat")], "a")).toBeNull();
  });
});
