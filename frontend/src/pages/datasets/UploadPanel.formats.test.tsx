import { fireEvent, screen } from "@testing-library/react";
import { describe, expect, it } from "vitest";

import { json, renderRoutes } from "../../test/render";
import { UploadPanel } from "./UploadPanel";

const routes = [{ path: "/p/:projectId", element: <UploadPanel projectId="p1" datasetId="d1" /> }];

function server(taskType: string) {
  return async (request: Request) => {
    const url = new URL(request.url);
    if (url.pathname === "/api/v1/projects/p1/datasets/d1/")
      return json(200, { id: "d1", name: "d", task_type: taskType, description: "", created_at: "2026-12-01T10:00:00Z", class_labels: [] });
    if (url.pathname === "/api/v1/projects/") return json(200, []);
    return json(404, { error: { code: "not_found", message: url.pathname } });
  };
}

function choose(container: HTMLElement) {
  const file = new File([new Uint8Array(10)], "a.png", { type: "image/png" });
  fireEvent.change(container.querySelector("input[type=file]") as HTMLInputElement, { target: { files: [file] } });
}

describe("UploadPanel accepted formats", () => {
  it("explains the COCO, Pascal VOC and YOLO layouts on an object detection dataset, with no class for loose images", async () => {
    const { container } = renderRoutes(routes, "/p/p1", server("object_detection") as unknown as typeof globalThis.fetch);
    const help = await screen.findByTestId("detection-formats");
    expect(help).toHaveTextContent("Zip layouts for object detection");
    expect(help.querySelector('[data-format="coco"]')).toHaveTextContent("train/_annotations.coco.json");
    expect(help.querySelector('[data-format="voc"]')).toHaveTextContent("Annotations/0001.xml");
    expect(help.querySelector('[data-format="yolo"]')).toHaveTextContent("labels/train/0001.txt");
    expect(screen.getByText(/with their boxes in COCO, Pascal VOC or YOLO format/)).toBeInTheDocument();
    expect(screen.queryByText(/ImageNet-folder layout/)).toBeNull();
    choose(container);
    expect(await screen.findByTestId("pending-files")).toBeInTheDocument();
    expect(screen.queryByText("Class for loose images")).toBeNull();
  });

  it("keeps the class-folder explanation on an image classification dataset", async () => {
    const { container } = renderRoutes(routes, "/p/p1", server("image_classification") as unknown as typeof globalThis.fetch);
    expect(await screen.findByText(/ImageNet-folder layout/)).toBeInTheDocument();
    choose(container);
    expect(await screen.findByText("Class for loose images")).toBeInTheDocument();
    expect(screen.queryByTestId("detection-formats")).toBeNull();
  });
});
