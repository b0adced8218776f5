import { screen } from "@testing-library/react";
import { describe, expect, it, vi } from "vitest";

import { json, renderRoutes } from "../../test/render";
import { ReportPage } from "./ReportPage";

// ECharts needs a canvas: the chart is not what this test reads
vi.mock("../../components/charts/Chart", () => ({ Chart: (props: { ariaLabel: string }) => <div role="img" aria-label={props.ariaLabel} /> }));

const routes = [{ path: "/projects/:projectId/training/:jobId/report", element: <ReportPage /> }];

const row = (label: string, index: number, recall: number, support: number) => ({ label, index, precision: 0.9, recall, f1: 0.8, support });

function api(report: Record<string, unknown>, split: string) {
  return async (request: Request) => {
    const url = new URL(request.url);
    if (url.pathname.endsWith("/report/")) {
      return json(200, {
        training_job_id: "j1",
        split,
        labels: ["cat", "dog"],
        report: { accuracy: 0.9, macro_f1: 0.7, confusion_matrix: [[100, 0], [10, 20]], misclassified: [], predictions: [], ...report },
        parity: {},
        pretrained: true,
        weights_note: "",
        created_at: "2026-11-29T00:00:00Z",
      });
    }
    if (url.pathname.endsWith("/training-jobs/j1/")) return json(200, { id: "j1", status: "SUCCEEDED", model_name: "pets", dataset_version_id: "v1" });
    return json(404, { error: { code: "not_found", message: url.pathname } });
  };
}

function statisticTitles(): string[] {
  return [...document.querySelectorAll(".ant-statistic-title")].map((el) => el.textContent ?? "");
}

describe("ReportPage", () => {
  it("says the figures are on the test split, shows validation beside them, and leads with recall and macro-F1 when classes are imbalanced", async () => {
    const report = { split: "test", n: 130, per_class: [row("cat", 0, 1, 100), row("dog", 1, 0.667, 30)], validation: { accuracy: 0.95, macro_f1: 0.9, n: 120 } };
    renderRoutes(routes, "/projects/p1/training/j1/report", api(report, "test") as unknown as typeof globalThis.fetch);
    expect(await screen.findByTestId("report-split")).toHaveTextContent("Computed on the test split: 130 images never used to choose the model.");
    expect(screen.getByTestId("report-validation")).toHaveTextContent("accuracy 95.0%, macro-F1 90.0% (120 images)");
    expect(screen.getByTestId("report-imbalanced")).toHaveTextContent("3.3×");
    expect(screen.getByTestId("report-recall")).toHaveTextContent("dog66.7% (30)");
    expect(statisticTitles().slice(0, 2)).toEqual(["Macro-F1", "Accuracy"]);
  });

  it("on the validation split says it chose the model; balanced classes keep accuracy first", async () => {
    const report = { n: 60, per_class: [row("cat", 0, 1, 30), row("dog", 1, 0.9, 30)] };
    renderRoutes(routes, "/projects/p1/training/j1/report", api(report, "val") as unknown as typeof globalThis.fetch);
    expect(await screen.findByTestId("report-split")).toHaveTextContent(/^Computed on the validation split: 60 images, the same that chose the kept epoch/);
    expect(screen.queryByTestId("report-validation")).toBeNull();
    expect(screen.queryByTestId("report-imbalanced")).toBeNull();
    expect(statisticTitles().slice(0, 2)).toEqual(["Accuracy", "Macro-F1"]);
  });
});
