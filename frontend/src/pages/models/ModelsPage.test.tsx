import { screen, within } from "@testing-library/react";
import { describe, expect, it } from "vitest";

import { json, renderRoutes } from "../../test/render";
import { ModelsPage } from "./ModelsPage";

const routes = [{ path: "/projects/:projectId/models", element: <ModelsPage /> }];
const mv = (id: string, version: number, metrics: unknown, pretrained: boolean) => ({
  id, model_id: "m1", model_name: "digits", version, task_type: "image_classification", labels: [], metrics, pretrained,
  dataset_version_id: null, dataset_version: null, training_job_id: null, parent_id: null, model_sha256: "", model_size: 1536, files: {},
  manifest: {}, created_at: "2026-11-29T00:00:00Z",
});

const fetcher = async (request: Request) => {
  const url = new URL(request.url);
  if (url.pathname.endsWith("/models/"))
    return json(200, [{ id: "m1", name: "digits", task_type: "image_classification", description: "", version_count: 2, created_at: "2026-11-29T00:00:00Z" }]);
  if (url.pathname.endsWith("/model-versions/") && url.searchParams.get("model") === "m1")
    return json(200, [
      mv("a", 1, { val_accuracy: 0.9, macro_f1: 0.875 }, true),
      mv("b", 2, { val_accuracy: 0.99, macro_f1: 0.99, evaluated_on: "test", test_accuracy: 1, test_macro_f1: 1, classes_not_evaluated: ["8"] }, false),
    ]);
  return json(404, { error: { code: "not_found", message: url.pathname } });
};

describe("ModelsPage", () => {
  it("shows each model with its versions, newest first, linking to the version page", async () => {
    renderRoutes(routes, "/projects/p1/models", fetcher as unknown as typeof globalThis.fetch);
    expect(await screen.findByText("2 versions")).toBeInTheDocument();
    expect(screen.getAllByTestId("model-card")).toHaveLength(1);
    const links = await screen.findAllByRole("link", { name: /^v\d$/ });
    expect(links.map((a) => a.textContent)).toEqual(["v2", "v1"]);
    expect(links[1]).toHaveAttribute("href", "/projects/p1/models/versions/a");
    const v1 = links[1]!.closest("tr") as HTMLElement;
    expect(within(v1).getByText("90.0%")).toBeInTheDocument();
    expect(within(v1).getByText("87.5%")).toBeInTheDocument();
    expect(within(v1).getByText("pretrained")).toBeInTheDocument();
    expect(within(v1).getByText("1.5 KB")).toBeInTheDocument();
    const v2 = links[0]!.closest("tr") as HTMLElement;
    expect(within(v2).getByText("trained from scratch")).toBeInTheDocument();
    // the test split's figures, named, not the validation that chose the model; and the class
    // the test split held no image of, beside its 100 %
    expect(within(v2).getByTestId("version-accuracy")).toHaveTextContent("100.0% test1 class not in the test split");
    expect(within(v1).getByTestId("version-accuracy")).toHaveTextContent("90.0% validation");
    expect(within(v2).queryByText("99.0%")).toBeNull();
  });

  it("an object detector's versions show mAP@0.5 and mAP@0.5:0.95, under columns that say so", async () => {
    const detector = async (request: Request) => {
      const url = new URL(request.url);
      if (url.pathname.endsWith("/models/"))
        return json(200, [{ id: "m1", name: "boxes", task_type: "object_detection", description: "", version_count: 2, created_at: "2026-11-29T00:00:00Z" }]);
      if (url.pathname.endsWith("/model-versions/") && url.searchParams.get("model") === "m1")
        return json(200, [
          { ...mv("a", 1, { evaluated_on: "val", val_map50: 0.62, val_map: 0.41, score_threshold: 0.3 }, true), task_type: "object_detection" },
          { ...mv("b", 2, { evaluated_on: "test", val_map50: 0.7, val_map: 0.5, test_map50: 0.58, test_map: 0.35, score_threshold: 0.3 }, true), task_type: "object_detection" },
        ]);
      return json(404, { error: { code: "not_found", message: url.pathname } });
    };
    renderRoutes(routes, "/projects/p1/models", detector as unknown as typeof globalThis.fetch);
    const links = await screen.findAllByRole("link", { name: /^v\d$/ });
    expect(screen.getByRole("columnheader", { name: "mAP@0.5" })).toBeInTheDocument();
    expect(screen.getByRole("columnheader", { name: "mAP@0.5:0.95" })).toBeInTheDocument();
    expect(screen.queryByRole("columnheader", { name: "Accuracy" })).toBeNull();
    const v2 = links[0]!.closest("tr") as HTMLElement;
    expect(within(v2).getByTestId("version-accuracy")).toHaveTextContent("58.0% test");
    expect(within(v2).getByTestId("version-accuracy")).toHaveAttribute("title", "Test mAP@0.5");
    expect(within(v2).getByText("35.0%")).toBeInTheDocument();
    expect(within(v2).queryByText("70.0%")).toBeNull();
    const v1 = links[1]!.closest("tr") as HTMLElement;
    expect(within(v1).getByTestId("version-accuracy")).toHaveTextContent("62.0% validation");
    expect(within(v1).getByText("41.0%")).toBeInTheDocument();
  });
});
