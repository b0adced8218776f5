import { describe, expect, it } from "vitest";

import { DETECTION_REPORT } from "./detectionReport.fixture";
import { boxPercent, cropAround, filterErrors, kindCounts, PALETTE, prCurvesOption, predictionsBySample, thumbLayout, totalErrors, worstFirst } from "./detection";

const texts = { recall: "Recall", precision: "Precision", atRecall: (r: string) => `Recall ${r}` };
const errors = DETECTION_REPORT.errors;
const who = (list: typeof errors) => list.map((e) => `${e.kind}:${e.sample_id}:${e.score ?? e.box.join(",")}`);

describe("the error filter", () => {
  it("puts confident wrong detections first, then missed objects, the largest first", () => {
    expect(who(worstFirst(errors))).toEqual([
      "wrong_class:s2:0.81",
      "false_positive:s1:0.62",
      "false_positive:s2:0.4",
      "missed:s1:60,60,160,140", // 100 x 80 px, before the 20 x 40 one the report listed first
      "missed:s3:100,20,120,60",
    ]);
  });

  it("keeps one kind, worst first", () => {
    expect(who(filterErrors(errors, "false_positive", null))).toEqual(["false_positive:s1:0.62", "false_positive:s2:0.4"]);
    expect(who(filterErrors(errors, "missed", null))).toEqual(["missed:s1:60,60,160,140", "missed:s3:100,20,120,60"]);
  });

  it("keeps a class as predicted or as true: a wrong class is an error of both", () => {
    expect(who(filterErrors(errors, "all", "car"))).toEqual(["wrong_class:s2:0.81", "false_positive:s1:0.62", "missed:s1:60,60,160,140"]);
    expect(who(filterErrors(errors, "wrong_class", "person"))).toEqual(["wrong_class:s2:0.81"]);
    expect(filterErrors(errors, "missed", "bike")).toEqual([]);
  });

  it("counts each kind for the filter's labels, and the errors the report did not list", () => {
    expect(kindCounts(errors, null)).toEqual({ false_positive: 2, missed: 2, wrong_class: 1 });
    expect(kindCounts(errors, "person")).toEqual({ false_positive: 1, missed: 1, wrong_class: 1 });
    expect(totalErrors(DETECTION_REPORT)).toBe(5);
    expect(totalErrors({ errors, error_counts: { false_positive: 700, missed: 120, wrong_class: 3 } })).toBe(823);
  });
});

describe("boxes in pictures", () => {
  it("crops a square twice the box's side around a box, inside the image", () => {
    // a 20 x 40 box at the right edge of a 200 x 150 image: 80 px square, moved left to fit
    expect(cropAround([170, 20, 190, 60], 200, 150)).toEqual({ x: 120, y: 0, w: 80, h: 80 });
    // a 4 px box keeps a quarter of the shorter side around it (37.5 px)
    expect(cropAround([98, 73, 102, 77], 200, 150)).toEqual({ x: 81.25, y: 56.25, w: 37.5, h: 37.5 });
    // a box as large as the image: the whole image, centred where it is narrower than the square
    expect(cropAround([0, 0, 200, 150], 200, 150)).toEqual({ x: 0, y: -25, w: 200, h: 200 });
  });

  it("lays the image and the box out in a thumbnail", () => {
    const layout = thumbLayout({ x: 120, y: 0, w: 80, h: 80 }, 200, 150, 104);
    expect(layout.image).toEqual({ left: -156, top: 0, width: 260, height: 195 });
    expect(layout.box([170, 20, 190, 60])).toEqual({ left: 65, top: 26, width: 26, height: 52 });
  });

  it("places a box over the large image in percentages", () => {
    expect(boxPercent([50, 30, 150, 120], 200, 150)).toEqual({ left: "25%", top: "20%", width: "50%", height: "60%" });
  });

  it("reads the predictions of each image", () => {
    const bySample = predictionsBySample(DETECTION_REPORT);
    expect(bySample.get("s2")).toEqual([
      { box: [50, 40, 90, 120], classIndex: 1, score: 0.81 },
      { box: [0, 0, 5, 5], classIndex: 1, score: 0.4 },
    ]);
    expect(bySample.get("s3")).toEqual([]);
  });
});

describe("the precision-recall chart", () => {
  const option = prCurvesOption(DETECTION_REPORT, texts);
  type Series = { name: string; type: string; color: string; data: [number, number | null][] };
  const series = option.series as Series[];

  it("draws one curve per class with true boxes, with a gap where the class never reaches the recall", () => {
    const lines = series.filter((s) => s.type === "line");
    expect(lines.map((s) => s.name)).toEqual(["car", "person"]); // no bike: no true box
    expect(lines[0]!.data).toHaveLength(101);
    expect(lines[0]!.data[67]).toEqual([0.67, 1]);
    expect(lines[0]!.data[68]).toEqual([0.68, null]);
    expect(lines[1]!.data[50]).toEqual([0.5, 0.5]);
  });

  it("marks each class's operating point at the serving threshold, in its curve's colour and name", () => {
    const points = series.filter((s) => s.type === "scatter");
    expect(points.map((s) => [s.name, s.color, s.data])).toEqual([
      ["car", PALETTE[0], [[0.667, 0.75]]],
      ["person", PALETTE[1], [[0.5, 0.333]]],
    ]);
    expect(series.find((s) => s.type === "line" && s.name === "person")!.color).toBe(PALETTE[1]);
  });

  it("has recall and precision axes from 0 to 1 and a tooltip of the curves at a recall", () => {
    expect(option.xAxis).toMatchObject({ type: "value", name: "Recall", min: 0, max: 1 });
    expect(option.yAxis).toMatchObject({ type: "value", name: "Precision", min: 0, max: 1 });
    const text = option.tooltip.formatter([
      { seriesType: "line", seriesName: "person", marker: "", value: [0.5, 0.5] },
      { seriesType: "line", seriesName: "car", marker: "", value: [0.5, 1] },
      { seriesType: "scatter", seriesName: "car", marker: "", value: [0.667, 0.75] },
    ]);
    expect(text).toBe("Recall 0.50<br/>car: Precision 1.00<br/>person: Precision 0.50");
  });
});
