import type { Sample } from "../../api/queries/datasets";
import { describe, expect, it } from "vitest";

import { drawStyle, drawTransform, IDENTITY, previewRanges, previewSamples } from "./augmentation";

/** A deterministic [0, 1) sequence (a linear congruential generator). */
function seeded(seed: number) {
  let x = seed;
  return () => {
    x = (1103515245 * x + 12345) % 2 ** 31;
    return x / 2 ** 31;
  };
}

function draws(preset: "auto" | "none" | "light" | "strong", n = 2000) {
  const random = seeded(7);
  return Array.from({ length: n }, () => drawTransform(preset, random));
}

describe("augmentation preview", () => {
  it("light: rotate ±10°, translate ±8%, scale 0.9-1.1, brightness 0.8-1.2, no flip in the preview", () => {
    const d = draws("light");
    expect(Math.max(...d.map((x) => Math.abs(x.rotate)))).toBeLessThanOrEqual(10);
    expect(Math.max(...d.map((x) => Math.abs(x.rotate)))).toBeGreaterThan(9);
    expect(Math.max(...d.flatMap((x) => [Math.abs(x.translateX), Math.abs(x.translateY)]))).toBeLessThanOrEqual(0.08);
    expect(Math.min(...d.map((x) => x.scale))).toBeGreaterThanOrEqual(0.9);
    expect(Math.max(...d.map((x) => x.scale))).toBeLessThanOrEqual(1.1);
    expect(Math.min(...d.map((x) => x.brightness))).toBeGreaterThanOrEqual(0.8);
    expect(Math.max(...d.map((x) => x.brightness))).toBeLessThanOrEqual(1.2);
    expect(d.every((x) => !drawStyle(x).transform.includes("scale(-"))).toBe(true);
  });

  it("strong: rotate ±20°, translate ±12%, scale 0.8-1.2, brightness 0.6-1.4, no flip in the preview (the data decides)", () => {
    const d = draws("strong");
    expect(Math.max(...d.map((x) => Math.abs(x.rotate)))).toBeLessThanOrEqual(20);
    expect(Math.max(...d.map((x) => Math.abs(x.rotate)))).toBeGreaterThan(18);
    expect(Math.max(...d.flatMap((x) => [Math.abs(x.translateX), Math.abs(x.translateY)]))).toBeLessThanOrEqual(0.12);
    expect(Math.min(...d.map((x) => x.scale))).toBeGreaterThanOrEqual(0.8);
    expect(Math.max(...d.map((x) => x.scale))).toBeLessThanOrEqual(1.2);
    expect(Math.min(...d.map((x) => x.brightness))).toBeGreaterThanOrEqual(0.6);
    expect(Math.max(...d.map((x) => x.brightness))).toBeLessThanOrEqual(1.4);
    expect(d.every((x) => !drawStyle(x).transform.includes("scale(-"))).toBe(true);
  });

  it("auto previews as light; none leaves images unchanged", () => {
    expect(previewRanges("auto")).toEqual(previewRanges("light"));
    expect(draws("auto").every((x) => !drawStyle(x).transform.includes("scale(-"))).toBe(true);
    expect(draws("none", 10).every((x) => x === IDENTITY)).toBe(true);
    expect(drawStyle(IDENTITY)).toEqual({ transform: "translate(0.0%, 0.0%) rotate(0.0deg) scale(1.000, 1.000)", filter: "brightness(1.00)" });
    expect(drawStyle({ ...IDENTITY, scale: 1.1 }).transform).toContain("scale(1.100, 1.100)");
  });
});

describe("previewSamples", () => {
  const sample = (id: string, label: string | null) =>
    ({ id, annotations: label === null ? [] : [{ kind: "class", class_label: label }] }) as unknown as Sample;

  it("shows different classes first, then fills in storage order", () => {
    const pool = [sample("a", "0"), sample("b", "0"), sample("c", "0"), sample("d", "1"), sample("e", "2"), sample("f", "1")];
    expect(previewSamples(pool, 4).map((s) => s.id)).toEqual(["a", "d", "e", "b"]);
    expect(previewSamples(pool.slice(0, 2), 4).map((s) => s.id)).toEqual(["a", "b"]);
  });
});
