import { describe, expect, it } from "vitest";

import { classBalance, imbalance } from "./versionChart";

const stats = {
  samples: 7,
  splits: { train: 5, val: 2 },
  classes: { cat: { train: 3, val: 1 }, dog: { train: 1, val: 1 }, bird: { train: 1 } },
};

describe("classBalance", () => {
  it("keeps the label order and drops empty splits", () => {
    const { classes, series } = classBalance(stats, ["dog", "cat", "bird"]);
    expect(classes).toEqual(["dog", "cat", "bird"]);
    expect(series).toEqual([
      { split: "train", counts: [1, 3, 1] },
      { split: "val", counts: [1, 1, 0] },
    ]);
  });

  it("appends classes the labels do not list", () => {
    expect(classBalance(stats, ["cat"]).classes).toEqual(["cat", "dog", "bird"]);
  });

  it("reports the smallest and largest class", () => {
    expect(imbalance(stats, ["cat", "dog", "bird"])).toEqual({ min: 1, max: 4 });
    expect(imbalance({ samples: 0, splits: {}, classes: {} }, [])).toBeNull();
  });
});
