import { fireEvent, screen, waitFor, within } from "@testing-library/react";
import userEvent from "@testing-library/user-event";
import i18n from "i18next";
import { afterEach, describe, expect, it, vi } from "vitest";

import { json, renderRoutes } from "../../test/render";
import { DETECTION_REPORT, LABELS, VERSION_ITEMS } from "./detectionReport.fixture";
import { ReportPage } from "./ReportPage";

// ECharts needs a canvas: the chart's option is tested in detection.test.ts
vi.mock("../../components/charts/Chart", () => ({ Chart: (props: { ariaLabel: string }) => <div role="img" aria-label={props.ariaLabel} /> }));

const routes = [{ path: "/projects/:projectId/training/:jobId/report", element: <ReportPage /> }];

function api(report: Record<string, unknown> = {}, itemRequests: string[][] = []) {
  return async (request: Request) => {
    const url = new URL(request.url);
    if (url.pathname.endsWith("/training-jobs/j1/report/")) {
      return json(200, {
        training_job_id: "j1",
        split: "test",
        labels: LABELS,
        report: { ...DETECTION_REPORT, ...report },
        parity: {},
        pretrained: true,
        weights_note: "",
        created_at: "2026-12-01T00:00:00Z",
      });
    }
    if (url.pathname.endsWith("/training-jobs/j1/")) {
      return json(200, { id: "j1", status: "SUCCEEDED", model_name: "street", dataset_version_id: "v1", task_type: "object_detection" });
    }
    if (url.pathname.endsWith("/dataset-versions/v1/items/")) {
      const ids = url.searchParams.getAll("sample_id");
      itemRequests.push(ids);
      return json(200, VERSION_ITEMS.filter((item) => ids.includes(item.sample_id)));
    }
    return json(404, { error: { code: "not_found", message: url.pathname } });
  };
}

const open = (report: Record<string, unknown> = {}, itemRequests: string[][] = []) =>
  renderRoutes(routes, "/projects/p1/training/j1/report", api(report, itemRequests) as unknown as typeof globalThis.fetch);

const captions = () => screen.getAllByTestId("error-thumb").map((el) => el.getAttribute("title"));

describe("the detection report", () => {
  afterEach(async () => {
    await i18n.changeLanguage("en");
  });

  it("leads with mAP on the test split named, validation beside it for model selection, and the serving threshold's figures", async () => {
    open();
    expect(await screen.findByTestId("report-split")).toHaveTextContent("Computed on the test split: 3 images with 5 objects, never used to choose the model.");
    expect(screen.getByTestId("report-map50")).toHaveTextContent("mAP@0.572.5%");
    expect(screen.getByTestId("report-map")).toHaveTextContent("mAP@0.5:0.9541.0%");
    expect(screen.getByTestId("report-validation")).toHaveTextContent("On the validation split (used for model selection)mAP@0.5 80.0%, mAP@0.5:0.95 45.0% (4 images)");
    const threshold = screen.getByTestId("report-threshold");
    expect(threshold).toHaveTextContent("At the serving threshold 0.35 (IoU 0.5)");
    expect(within(threshold).getByTestId("report-precision")).toHaveTextContent("60.0%");
    expect(within(threshold).getByTestId("report-f1")).toHaveTextContent("60.0%");
    expect(screen.getByRole("img", { name: "Precision-recall curves (IoU 0.5)" })).toBeInTheDocument();
    // no classification parts
    expect(screen.queryByTestId("report-accuracy")).toBeNull();
    expect(screen.queryByRole("img", { name: "Confusion matrix" })).toBeNull();
  });

  it("lists AP per class, and a class with no true box in the split as not evaluated", async () => {
    open();
    const table = await screen.findByTestId("per-class");
    const rows = within(table).getAllByRole("row").slice(1);
    expect(rows.map((r) => r.textContent)).toEqual(["car0.9000.55030.7500.667", "person0.5500.27020.3330.500", "bike (not in the test split)——0——"]);
    expect(screen.getByTestId("not-evaluated")).toHaveTextContent("1 class not in the test split");
    expect(screen.getByTestId("report-missing-classes")).toHaveTextContent("The test split holds no box of bike: mAP leaves it out");
  });

  it("browses the errors worst first, by kind and by class, reading the true boxes of the page once", async () => {
    const itemRequests: string[][] = [];
    open({}, itemRequests);
    await screen.findByTestId("error-browser");
    expect(captions()).toEqual(["person · 0.81, true car", "car · 0.62", "person · 0.40", "car not found", "person not found"]);
    await waitFor(() => expect(screen.getAllByTestId("thumb-error-box")).toHaveLength(5));
    expect(itemRequests).toEqual([["s2", "s1", "s3"]]);

    const user = userEvent.setup();
    await user.click(screen.getByText("Missed objects (2)"));
    expect(captions()).toEqual(["car not found", "person not found"]);
    await user.click(screen.getByText("All (5)"));

    fireEvent.mouseDown(within(screen.getByTestId("error-class")).getByRole("combobox"));
    await user.click(await screen.findByTitle("person"));
    expect(captions()).toEqual(["person · 0.81, true car", "person · 0.40", "person not found"]);
    expect(screen.getByText("False positives (1)")).toBeInTheDocument();
  });

  it("opens an error large with predicted and true boxes; arrows move between errors, Esc closes", async () => {
    open();
    await screen.findByTestId("error-browser");
    await waitFor(() => expect(screen.getAllByTestId("thumb-error-box")).toHaveLength(5));
    const user = userEvent.setup();
    await user.click(screen.getAllByTestId("error-thumb")[0]!);

    const title = await screen.findByTestId("lightbox-title");
    expect(title).toHaveTextContent("Wrong classperson · 0.81, true car1 of 5");
    expect(screen.getByTestId("lightbox-sentence")).toHaveTextContent("Predicted person (score 0.81) on an object labelled car.");
    expect(screen.getAllByTestId("predicted-box").map((b) => b.textContent)).toEqual(["person 0.81", "person 0.40"]);
    expect(screen.getAllByTestId("true-box").map((b) => b.textContent)).toEqual(["car"]);
    // the error's box, where the image is 200 x 150 px
    expect(screen.getByTestId("error-box")).toHaveStyle({ left: "25%", top: "26.666666666666668%", width: "20%" });

    fireEvent.keyDown(window, { key: "ArrowRight" });
    await waitFor(() => expect(screen.getByTestId("lightbox-title")).toHaveTextContent("False positivecar · 0.622 of 5"));
    expect(screen.getAllByTestId("true-box")).toHaveLength(2);
    expect(screen.getAllByTestId("predicted-box").map((b) => b.textContent)).toEqual(["car 0.62", "car 0.90"]);

    fireEvent.keyDown(window, { key: "ArrowLeft" });
    await waitFor(() => expect(screen.getByTestId("lightbox-title")).toHaveTextContent("1 of 5"));
    fireEvent.keyDown(window, { key: "ArrowLeft" }); // the first stays
    expect(screen.getByTestId("lightbox-title")).toHaveTextContent("1 of 5");

    // a missed object: its true box is the highlighted one, dashed
    await user.click(screen.getByTestId("lightbox-next"));
    await user.click(screen.getByTestId("lightbox-next"));
    await user.click(screen.getByTestId("lightbox-next"));
    expect(screen.getByTestId("lightbox-title")).toHaveTextContent("Missed objectcar not found4 of 5");
    expect(screen.getByTestId("error-box").style.border).toContain("dashed");

    fireEvent.keyDown(window, { key: "Escape" });
    await waitFor(() => expect(screen.queryByTestId("lightbox-title")).toBeNull());
  });

  it("says when the report lists only the worst errors, and speaks Chinese", async () => {
    await i18n.changeLanguage("zh-CN");
    open({ error_counts: { false_positive: 700, missed: 120, wrong_class: 3 } });
    expect(await screen.findByTestId("report-split")).toHaveTextContent("在测试集上计算：3 张图像、5 个目标，从未用于选择模型。");
    expect(screen.getByTestId("errors-truncated")).toHaveTextContent("报告列出了 823 个错误中最严重的 5 个。");
    expect(screen.getByText("漏检（2）")).toBeInTheDocument();
    expect(within(screen.getByTestId("per-class")).getAllByRole("row")[3]).toHaveTextContent("bike (不在测试集中)——0——");
  });
});
