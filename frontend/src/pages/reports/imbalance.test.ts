import { describe, expect, it } from "vitest";

import { imbalanceRatio } from "./imbalance";

const row = (label: string, support: number) => ({ label, index: 0, precision: 1, recall: 1, f1: 1, support });

describe("imbalanceRatio", () => {
  it("is the largest / smallest support from 3x on, else null", () => {
    expect(imbalanceRatio([row("a", 90), row("b", 30)])).toBe(3);
    expect(imbalanceRatio([row("a", 89), row("b", 30)])).toBeNull();
    expect(imbalanceRatio([row("a", 100), row("b", 10), row("c", 0)])).toBe(10); // c not evaluated
    expect(imbalanceRatio([row("a", 100)])).toBeNull();
  });
});
