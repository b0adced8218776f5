import { render, screen } from "@testing-library/react";
import { describe, expect, it } from "vitest";

import type { Dataset, Sample } from "../../api/queries/datasets";
import type { ModelVersion } from "../../api/queries/prelabel";
import { historyCommit, historyInit, historyUndo } from "./boxHistory";
import { resolvedSuggestionIds, type EditorState } from "./DetectionLabelingPanel";
import { SuggestedBoxes } from "./SuggestedBoxes";
import { classSuggestionOf, compatibleVersions, effectiveOrder, percent, sharedClasses, suggestedBoxesOf } from "./suggestions";

const street = {
  task_type: "object_detection",
  class_labels: [
    { id: "car", name: "car", position: 0, hotkey: "" },
    { id: "person", name: "person", position: 1, hotkey: "" },
  ],
} as unknown as Dataset;
const version = (id: string, task_type: string, labels: string[]) => ({ id, task_type, labels, model_name: id, version: 1 }) as unknown as ModelVersion;

describe("which model versions can pre-label a dataset", () => {
  it("the dataset's task and at least one class in common, by the name the server compares", () => {
    const versions = [
      version("detector", "object_detection", ["person", "bicycle", " car"]),
      version("classifier", "image_classification", ["car", "person"]),
      version("animals", "object_detection", ["cat", "dog"]),
    ];
    expect(compatibleVersions(versions, street).map((v) => v.id)).toEqual(["detector"]);
    expect(sharedClasses(versions[0]!, street)).toEqual(["person", "car"]);
  });
});

describe("the gallery's order", () => {
  it("is most uncertain first once a model left suggestions, unless one was chosen", () => {
    expect(effectiveOrder(undefined, { suggested_samples: 3 })).toBe("uncertainty");
    expect(effectiveOrder(undefined, { suggested_samples: 0 })).toBe("oldest");
    expect(effectiveOrder("oldest", { suggested_samples: 3 })).toBe("oldest");
  });
});

describe("a sample's suggestions", () => {
  const sample = {
    suggestions: [
      { id: "b1", kind: "box", class_label: "car", class_label_id: "car", score: 0.5, x1: 1, y1: 2, x2: 3, y2: 4, model_version_id: "m" },
      { id: "c1", kind: "class", class_label: "car", class_label_id: "car", score: 0.875, x1: null, y1: null, x2: null, y2: null, model_version_id: "m" },
    ],
  } as unknown as Sample;

  it("as the panels show them", () => {
    expect(percent(0.875)).toBe("88%");
    expect(classSuggestionOf(sample)?.id).toBe("c1");
    expect(suggestedBoxesOf(sample)).toEqual([{ id: "b1", classLabelId: "car", x1: 1, y1: 2, x2: 3, y2: 4, score: 0.5 }]);
  });

  it("accepted or rejected are the ones some step showed and the present does not", () => {
    const boxes = suggestedBoxesOf(sample);
    let h = historyInit<EditorState>({ boxes: [], noObjects: false, suggestions: boxes });
    expect(resolvedSuggestionIds(h)).toEqual([]);
    h = historyCommit(h, { boxes: [{ ...boxes[0]!, id: "suggested-b1" }], noObjects: false, suggestions: [] });
    expect(resolvedSuggestionIds(h)).toEqual(["b1"]);
    // undone: it shows again, and the next save leaves it alone
    expect(resolvedSuggestionIds(historyUndo(h))).toEqual([]);
  });

  it("draw dashed over the image, in the image's pixels, with class and score", () => {
    render(<SuggestedBoxes boxes={suggestedBoxesOf(sample)} width={320} height={240} colourOf={() => "#fa541c"} nameOf={() => "car"} />);
    const overlay = screen.getByTestId("suggested-boxes");
    expect(overlay.querySelector("svg")?.getAttribute("viewBox")).toBe("0 0 320 240");
    const rect = screen.getByTestId("suggested-box");
    expect(["x", "y", "width", "height", "stroke", "stroke-dasharray"].map((a) => rect.getAttribute(a))).toEqual(["1", "2", "2", "2", "#fa541c", "6 4"]);
    expect(overlay).toHaveTextContent("car 50%");
  });
});
