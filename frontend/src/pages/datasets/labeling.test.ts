import { describe, expect, it } from "vitest";

import type { Sample } from "../../api/queries/datasets";
import { classIndexForKey, keyForClassIndex, nextUnlabeledId } from "./labeling";

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
    etag: `etag-${id}`,
    annotations: label
      ? [{ id: `a-${id}`, kind: "class", class_label: label, class_label_id: "c", x1: null, y1: null, x2: null, y2: null }]
      : [],
  };
}

describe("labeling keys", () => {
  it("maps 1..9 to the first nine classes and 0 to the tenth", () => {
    expect(classIndexForKey("1")).toBe(0);
    expect(classIndexForKey("9")).toBe(8);
    expect(classIndexForKey("0")).toBe(9);
    expect(classIndexForKey("a")).toBeNull();
    expect(classIndexForKey("F1")).toBeNull();
    expect([0, 8, 9, 10].map(keyForClassIndex)).toEqual(["1", "9", "0", null]);
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
