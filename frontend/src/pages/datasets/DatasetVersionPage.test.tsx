import { screen } from "@testing-library/react";
import userEvent from "@testing-library/user-event";
import { describe, expect, it, vi } from "vitest";

import { json, renderRoutes } from "../../test/render";
import { DatasetVersionPage } from "./DatasetVersionPage";

// ECharts needs a canvas: the chart is not what these tests read
vi.mock("../../components/charts/Chart", () => ({ Chart: (props: { ariaLabel: string }) => <div role="img" aria-label={props.ariaLabel} /> }));

const routes = [{ path: "/projects/:projectId/datasets/:datasetId/versions/:versionId", element: <DatasetVersionPage /> }];

function api(taskType: string) {
  return async (request: Request) => {
    const url = new URL(request.url);
    if (url.pathname === "/api/v1/projects/p1/dataset-versions/v1/")
      return json(200, {
        id: "v1",
        dataset_id: "d1",
        number: 2,
        task_type: taskType,
        labels: ["cat", "dog"],
        seed: 0,
        split_fractions: { val: 0.15, test: 0.15 },
        digest: "sha256:ab",
        flags: [],
        stats: { samples: 3, splits: { train: 2, val: 1 }, classes: { cat: { train: 1 }, dog: { train: 1, val: 1 } } },
        note: "",
        created_at: "2026-12-01T10:00:00Z",
        min_budget_s: 16,
      });
    if (url.pathname === "/api/v1/projects/p1/datasets/d1/")
      return json(200, { id: "d1", name: "pets", task_type: taskType, description: "", created_at: "2026-12-01T10:00:00Z", class_labels: [] });
    if (url.pathname === "/api/v1/projects/") return json(200, []);
    return json(404, { error: { code: "not_found", message: url.pathname } });
  };
}

async function openMenu(taskType: string) {
  renderRoutes(routes, "/projects/p1/datasets/d1/versions/v1", api(taskType) as unknown as typeof globalThis.fetch);
  await userEvent.click(await screen.findByTestId("version-export"));
  return Array.from(document.querySelectorAll<HTMLAnchorElement>("a[data-format]")).map((a) => [a.textContent, a.getAttribute("href")]);
}

describe("DatasetVersionPage download", () => {
  it("offers COCO, Pascal VOC and YOLO for an object detection version", async () => {
    expect(await openMenu("object_detection")).toEqual([
      ["COCO (a JSON per split)", "/api/v1/projects/p1/dataset-versions/v1/export/?format=coco"],
      ["Pascal VOC (an XML per image)", "/api/v1/projects/p1/dataset-versions/v1/export/?format=voc"],
      ["YOLO (txt labels and data.yaml)", "/api/v1/projects/p1/dataset-versions/v1/export/?format=yolo"],
    ]);
    expect(screen.getByText("Download")).toBeInTheDocument();
  });

  it("offers folders per class for an image classification version", async () => {
    expect(await openMenu("image_classification")).toEqual([
      ["A folder per class (ImageNet)", "/api/v1/projects/p1/dataset-versions/v1/export/?format=imagenet"],
    ]);
  });
});
