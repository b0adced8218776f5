import { describe, expect, it } from "vitest";

import { boxPercent, type BoxPercent, classCounts, defaultScoreThreshold, frameSize, labelInside, SCORE_FLOOR, visibleDetections, type Detection } from "./detections";

/** Each side within 1e-9 %. */
function expectPlace(found: BoxPercent, expected: BoxPercent) {
  for (const key of ["left", "top", "width", "height"] as const) expect(found[key]).toBeCloseTo(expected[key], 9);
}

const det = (label: string, index: number, score: number, box: number[] = [0, 0, 1, 1]): Detection => ({ label, index, score, box });

describe("boxPercent", () => {
  it("places a box in % of the image, so it follows the image at any displayed size", () => {
    // a 640 x 360 image: x over 640, y over 360
    expectPlace(boxPercent([20, 40, 120, 200], 640, 360), { left: 3.125, top: (100 * 40) / 360, width: 15.625, height: (100 * 160) / 360 });
    // drawn 320 px wide (180 tall) it lands on the same pixels halved: 10..60 x 20..100
    const p = boxPercent([20, 40, 120, 200], 640, 360);
    const drawn = [(p.left / 100) * 320, (p.top / 100) * 180, ((p.left + p.width) / 100) * 320, ((p.top + p.height) / 100) * 180];
    [10, 20, 60, 100].forEach((px, i) => expect(drawn[i]).toBeCloseTo(px, 9));
  });
  it("uses the upright size the server measured (a portrait photo)", () => {
    const p = boxPercent([28.57, 56.25, 171.43, 281.25], 300, 900);
    expect(p.left).toBeCloseTo(9.523, 3);
    expect(p.top).toBeCloseTo(6.25, 6);
    expect(p.width).toBeCloseTo(47.62, 3);
    expect(p.height).toBeCloseTo(25, 6);
  });
  it("clips to the image and orders the corners", () => {
    expectPlace(boxPercent([-10, 300, 700, 400], 640, 360), { left: 0, top: (100 * 300) / 360, width: 100, height: 100 - (100 * 300) / 360 });
    expect(boxPercent([120, 200, 20, 40], 640, 360)).toEqual(boxPercent([20, 40, 120, 200], 640, 360));
  });
  it("puts the label inside a box that starts at the image's top", () => {
    expect(labelInside(boxPercent([0, 5, 10, 50], 100, 100))).toBe(true);
    expect(labelInside(boxPercent([0, 30, 10, 50], 100, 100))).toBe(false);
  });
});

describe("frameSize", () => {
  it("keeps the image's aspect ratio, at most the given height", () => {
    expect(frameSize(640, 360, 360)).toEqual({ width: "min(100%, 640px)", aspectRatio: "640 / 360" });
    expect(frameSize(300, 900, 360)).toEqual({ width: "min(100%, 120px)", aspectRatio: "300 / 900" });
  });
});

describe("the score slider", () => {
  const found = [det("person", 0, 0.9), det("car", 1, 0.8), det("person", 0, 0.3), det("person", 0, 0.2)];
  it("keeps the detections scoring at least the threshold, best first as the server sent them", () => {
    expect(visibleDetections(found, 0.3).map((d) => d.score)).toEqual([0.9, 0.8, 0.3]);
    expect(visibleDetections(found, 0.85).map((d) => d.label)).toEqual(["person"]);
    expect(visibleDetections(found, 1)).toEqual([]);
  });
  it("counts each class, most first", () => {
    expect(classCounts(found)).toEqual([
      ["person", 3],
      ["car", 1],
    ]);
  });
  it("starts at the manifest's threshold", () => {
    expect(defaultScoreThreshold({ detection: { score_threshold: 0.42 } })).toBe(0.42);
    expect(defaultScoreThreshold({ detection: { score_threshold: 0.01 } })).toBe(SCORE_FLOOR);
    expect(defaultScoreThreshold({})).toBe(0.3);
    expect(defaultScoreThreshold(null)).toBe(0.3);
  });
});
