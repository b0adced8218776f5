import { screen, within } from "@testing-library/react";
import i18n from "i18next";
import { afterEach, describe, expect, it, vi } from "vitest";

import { json, renderRoutes } from "../../test/render";
import { ReportPage } from "./ReportPage";

// ECharts needs a canvas: the chart is not what this test reads
vi.mock("../../components/charts/Chart", () => ({ Chart: (props: { ariaLabel: string }) => <div role="img" aria-label={props.ariaLabel} /> }));

const routes = [{ path: "/projects/:projectId/training/:jobId/report", element: <ReportPage /> }];

const row = (label: string, index: number, recall: number, support: number) => ({ label, index, precision: 0.9, recall, f1: 0.8, support });

function api(report: Record<string, unknown>, split: string, labels = ["cat", "dog"]) {
  return async (request: Request) => {
    const url = new URL(request.url);
    if (url.pathname.endsWith("/report/")) {
      return json(200, {
        training_job_id: "j1",
        split,
        labels,
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
  afterEach(async () => {
    await i18n.changeLanguage("en");
  });

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
    expect(screen.queryByTestId("report-missing-classes")).toBeNull();
    expect(statisticTitles().slice(0, 2)).toEqual(["Accuracy", "Macro-F1"]);
  });

  // a version with classes 40/4/20 in training (flag class_imbalance 10×): the test split left class "1" out
  const leftOut = {
    split: "test",
    n: 9,
    accuracy: 0.889,
    per_class: [row("0", 0, 1, 6), { label: "1", index: 1, precision: 0, recall: 0, f1: 0, support: 0 }, row("2", 2, 0.667, 3)],
    confusion_matrix: [[6, 0, 0], [0, 0, 0], [1, 0, 2]],
    imbalanced: true,
    train_class_counts: [40, 4, 20],
  };

  it("says the classes are imbalanced from the training split, though the test supports look balanced", async () => {
    renderRoutes(routes, "/projects/p1/training/j1/report", api(leftOut, "test", ["0", "1", "2"]) as unknown as typeof globalThis.fetch);
    expect(await screen.findByTestId("report-imbalanced")).toHaveTextContent("in the training split the largest has 10.0× the images of the smallest");
    expect(statisticTitles().slice(0, 2)).toEqual(["Macro-F1", "Accuracy"]);
    // the recall bars: the class left out reads so, after the others
    expect(screen.getByTestId("report-recall")).toHaveTextContent(/1not in the test split$/);
  });

  it("warns that the figures say nothing about a class the test split holds no image of", async () => {
    renderRoutes(routes, "/projects/p1/training/j1/report", api(leftOut, "test", ["0", "1", "2"]) as unknown as typeof globalThis.fetch);
    expect(await screen.findByTestId("report-missing-classes")).toHaveTextContent(
      "The test split holds no image of 1: these figures say nothing about how the model does on it.");
  });

  it("a one-class test split of a two-class model: 100 % is not taken at its word", async () => {
    // 25 photos, one class too small for a test split: the model answered the other every time
    const oneClass = { split: "test", n: 4, accuracy: 1, macro_f1: 1, per_class: [row("cat", 0, 1, 4), { label: "dog", index: 1, precision: 0, recall: 0, f1: 0, support: 0 }],
      confusion_matrix: [[4, 0], [0, 0]], imbalanced: true, train_class_counts: [14, 3] };
    renderRoutes(routes, "/projects/p1/training/j1/report", api(oneClass, "test") as unknown as typeof globalThis.fetch);
    expect(await screen.findByTestId("report-missing-classes")).toHaveTextContent("The test split holds no image of dog");
  });

  it("reads a class with no image in the split as not in it, with — for its figures", async () => {
    renderRoutes(routes, "/projects/p1/training/j1/report", api(leftOut, "test", ["0", "1", "2"]) as unknown as typeof globalThis.fetch);
    const table = await screen.findByTestId("per-class");
    const rows = within(table).getAllByRole("row").slice(1);
    expect(rows.map((r) => r.textContent)).toEqual(["00.9001.0000.8006", "1 (not in the test split)———0", "20.9000.6670.8003"]);
  });

  it("trusts the report when it says the classes are balanced, and says so in Chinese", async () => {
    await i18n.changeLanguage("zh-CN");
    const balanced = { ...leftOut, imbalanced: false, train_class_counts: [40, 36, 38], per_class: [row("0", 0, 1, 30), leftOut.per_class[1], row("2", 2, 1, 3)] };
    renderRoutes(routes, "/projects/p1/training/j1/report", api(balanced, "test", ["0", "1", "2"]) as unknown as typeof globalThis.fetch);
    const table = await screen.findByTestId("per-class");
    expect(screen.queryByTestId("report-imbalanced")).toBeNull(); // the test supports (30 vs 3) alone would say 10×
    expect(within(table).getAllByRole("row")[2]).toHaveTextContent("1 (不在测试集中)———0");
  });
});
