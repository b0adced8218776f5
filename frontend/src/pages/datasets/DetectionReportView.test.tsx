import { screen, within } from "@testing-library/react";
import userEvent from "@testing-library/user-event";
import { describe, expect, it } from "vitest";

import { renderWithProviders } from "../../test/render";
import { detectionReportOf, exportFormatsFor, totalOf } from "./detectionReport";
import { DetectionReportView } from "./DetectionReportView";

const REPORT = {
  imported: 3,
  duplicates: [],
  ignored: [],
  rejected: [],
  detection: {
    formats: ["yolo"],
    images: 3,
    boxes: 5,
    background_images: 1,
    clipped_boxes: 2,
    classes: [
      { name: "traffic light", boxes: 4 },
      { name: "6", boxes: 1 },
    ],
    skipped_annotations: [{ name: "labels/train/a.txt:3", reason: "class id 7 is out of range: the class names list 2 classes (ids 0 to 1)" }],
    missing_images: [{ name: "labels/train/b.txt", reason: "a label file with no image of the same name" }],
    unannotated_images: [],
    totals: { skipped_annotations: 60001, missing_images: 1, unannotated_images: 0 },
    warnings: ["classes without any box are not created: 'vehicles'"],
    source: null,
  },
};

describe("DetectionReportView", () => {
  it("counts images, boxes, background images and names every skipped annotation with its line", async () => {
    const report = detectionReportOf(REPORT)!;
    renderWithProviders(<DetectionReportView report={report} />);
    const view = screen.getByTestId("detection-report");
    expect(within(view).getByText("YOLO")).toBeInTheDocument();
    expect(within(view).getByText("Background images").closest(".ant-statistic")).toHaveTextContent("1");
    expect(within(view).getByText("Boxes clipped to the image").closest(".ant-statistic")).toHaveTextContent("2");
    expect(screen.getByTestId("detection-classes")).toHaveTextContent("traffic light · 4");
    // the lists that need acting on are open
    const row = screen.getByText("labels/train/a.txt:3").closest("tr")!;
    expect(within(row).getByText(/class id 7 is out of range/)).toBeInTheDocument();
    expect(screen.getByText("60000 more not listed")).toBeInTheDocument();
    expect(screen.getByText("labels/train/b.txt")).toBeInTheDocument();
    expect(screen.getByText("classes without any box are not created: 'vehicles'")).toBeInTheDocument();
    await userEvent.click(screen.getByText("Missing images (1)"));
    expect(screen.getByText("Skipped annotations (60001)")).toBeInTheDocument();
  });

  it("reads only reports that have a detection part", () => {
    expect(detectionReportOf({ imported: 3, duplicates: [], ignored: [], rejected: [] })).toBeNull();
    expect(detectionReportOf(null)).toBeNull();
    const partial = detectionReportOf({ detection: { formats: ["coco"], boxes: "x" } })!;
    expect(partial.boxes).toBe(0);
    expect(totalOf(partial, "skipped_annotations")).toBe(0);
    expect(exportFormatsFor("object_detection")).toEqual(["coco", "voc", "yolo"]);
    expect(exportFormatsFor("image_classification")).toEqual(["imagenet"]);
    expect(exportFormatsFor("text_classification")).toEqual(["csv"]);
  });
});
