import { screen, waitFor, within } from "@testing-library/react";
import userEvent from "@testing-library/user-event";
import i18n from "i18next";
import { afterEach, describe, expect, it, vi } from "vitest";

import { json, renderRoutes } from "../../test/render";
import { ReportPage } from "./ReportPage";

// ECharts needs a canvas: the mock offers two cells of the matrix to click, as ECharts reports
// a click ([predicted column, true row, count])
vi.mock("../../components/charts/Chart", () => ({
  Chart: (props: { ariaLabel: string; onClick?: (p: { data: number[] }) => void }) => (
    <div role="img" aria-label={props.ariaLabel}>
      <button type="button" onClick={() => props.onClick?.({ data: [1, 0, 2] })}>
        cell negative→positive
      </button>
      <button type="button" onClick={() => props.onClick?.({ data: [0, 0, 1] })}>
        cell negative→negative
      </button>
    </div>
  ),
}));

const routes = [{ path: "/projects/:projectId/training/:jobId/report", element: <ReportPage /> }];

const LONG = `${"This phone is great for the first week. ".repeat(10)}Then the battery died and support never answered.`;
const TEXTS: Record<string, string> = {
  t1: "Not bad at all, I would buy it again.",
  t2: "<b>Terrible</b> <img src=x onerror=alert(1)> service",
  t3: LONG,
  c1: "Awful. Broke on day two.",
};

// the text engine's report (workers/ml/evaluation.py classification_report, plus truncated and
// skipped_samples): no `predictions`, so a cell on the diagonal lists the split's samples
const report = {
  split: "test",
  n: 200,
  accuracy: 0.985,
  macro_f1: 0.985,
  per_class: [
    { label: "negative", index: 0, precision: 0.99, recall: 0.98, f1: 0.985, support: 100 },
    { label: "positive", index: 1, precision: 0.98, recall: 0.99, f1: 0.985, support: 100 },
  ],
  confusion_matrix: [[98, 2], [1, 99]],
  misclassified: [
    { sample_id: "t2", true: "negative", predicted: "positive", probability: 0.61 },
    { sample_id: "t3", true: "negative", predicted: "positive", probability: 0.55 },
    { sample_id: "t1", true: "positive", predicted: "negative", probability: 0.97 },
  ],
  validation: { accuracy: 0.99, macro_f1: 0.99, n: 180 },
  truncated: { val: 0, test: 3 },
  skipped_samples: [{ sample_id: "e1", split: "test", reason: "empty text: nothing is left after removing whitespace" }],
};

function api(requests: string[]) {
  return async (request: Request) => {
    const url = new URL(request.url);
    requests.push(url.pathname);
    if (url.pathname.endsWith("/training-jobs/j1/report/")) {
      return json(200, { training_job_id: "j1", split: "test", labels: ["negative", "positive"], report, parity: {}, pretrained: false, weights_note: "", created_at: "2026-12-02T00:00:00Z" });
    }
    if (url.pathname.endsWith("/training-jobs/j1/")) {
      return json(200, { id: "j1", status: "SUCCEEDED", model_name: "reviews", dataset_version_id: "v1", task_type: "text_classification" });
    }
    if (url.pathname.endsWith("/dataset-versions/v1/")) return json(200, { id: "v1", dataset_id: "d1", number: 1, task_type: "text_classification", labels: ["negative", "positive"] });
    if (url.pathname.endsWith("/datasets/d1/samples/")) {
      // the test split's samples with their class (the true label) and text
      expect(url.searchParams.get("version")).toBe("v1");
      expect(url.searchParams.get("split")).toBe("test");
      const row = (id: string, label: string) => ({ id, dataset_id: "d1", original_name: "reviews.csv", text: TEXTS[id], text_length: TEXTS[id]!.length, image_url: null, annotations: [{ kind: "class", class_label: label }] });
      return json(200, { count: 4, next: null, previous: null, results: [row("c1", "negative"), row("t2", "negative"), row("t3", "negative"), row("t1", "positive")] });
    }
    const sample = /\/samples\/([^/]+)\/$/.exec(url.pathname);
    if (sample && TEXTS[sample[1]!] !== undefined) {
      const text = TEXTS[sample[1]!]!;
      return json(200, { id: sample[1], dataset_id: "d1", original_name: "reviews.csv", text, text_length: text.length, image_url: null, annotations: [] });
    }
    return json(404, { error: { code: "not_found", message: url.pathname } });
  };
}

const open = (requests: string[] = []) => renderRoutes(routes, "/projects/p1/training/j1/report", api(requests) as unknown as typeof globalThis.fetch);

describe("a text classifier's report", () => {
  afterEach(async () => {
    await i18n.changeLanguage("en");
  });

  it("shows the misclassified texts with their true and predicted class, as text, never an image", async () => {
    const requests: string[] = [];
    open(requests);
    expect(await screen.findByTestId("report-split")).toHaveTextContent("Computed on the test split: 200 texts never used to choose the model.");
    expect(screen.getByTestId("report-validation")).toHaveTextContent("accuracy 99.0%, macro-F1 99.0% (180 texts)");
    expect(screen.getByTestId("report-text-notes")).toHaveTextContent(
      "3 texts are longer than the model reads: they were classified by their first characters. 1 empty text was left out.",
    );
    // no "trained from scratch" warning: a text model has no pretrained start to compare with
    expect(screen.queryByText(/Trained from scratch/)).toBeNull();

    const misclassified = screen.getByText("3 misclassified samples").closest(".ant-card") as HTMLElement;
    await waitFor(() => expect(within(misclassified).getAllByTestId("text-content")).toHaveLength(3));
    const items = within(misclassified).getAllByTestId("report-text");
    expect(items.map((item) => within(item).getByTestId("text-predicted").textContent)).toEqual([
      "predicted positive · 61%",
      "predicted positive · 55%",
      "predicted negative · 97%",
    ]);
    expect(items.map((item) => within(item).getByTestId("text-true").textContent)).toEqual(["true: negative", "true: negative", "true: positive"]);
    // the text as it was written, markup included, not interpreted
    expect(within(items[0]!).getByTestId("text-content").textContent).toBe(TEXTS.t2);
    expect(within(items[2]!).getByTestId("text-content").textContent).toBe(TEXTS.t1);
    expect(document.querySelector("b")).toBeNull();
    expect(document.querySelectorAll("img")).toHaveLength(0);
    expect(requests.filter((path) => path.includes("/image/"))).toEqual([]);
    // each text read once at most: by id, unless the split's list (for the diagonal) brought it first
    for (const id of ["t1", "t2", "t3"]) {
      expect(requests.filter((path) => path === `/api/v1/projects/p1/samples/${id}/`).length).toBeLessThanOrEqual(1);
    }
  });

  it("cuts a long text with an ellipsis and shows it whole on demand", async () => {
    open();
    const misclassified = (await screen.findByText("3 misclassified samples")).closest(".ant-card") as HTMLElement;
    await waitFor(() => expect(within(misclassified).getAllByTestId("text-content")).toHaveLength(3));
    const long = within(misclassified).getAllByTestId("report-text")[1]!;
    const content = within(long).getByTestId("text-content");
    expect(content.textContent).toMatch(/…$/);
    expect(content.textContent!.length).toBeLessThan(LONG.length);
    await userEvent.click(within(long).getByRole("button", { name: "Show all" }));
    expect(within(long).getByTestId("text-content").textContent).toBe(LONG);
    expect(within(long).getByRole("button", { name: "Show less" })).toHaveAttribute("aria-expanded", "true");
  });

  it("lists a confusion cell's texts: the errors off the diagonal, the correct ones on it", async () => {
    const requests: string[] = [];
    open(requests);
    await screen.findByTestId("report-split");
    await userEvent.click(screen.getByRole("button", { name: "cell negative→positive" }));
    const cell = screen.getByTestId("cell-samples");
    expect(within(cell).getByText("True negative, predicted positive: 2 samples")).toBeInTheDocument();
    await waitFor(() => expect(within(cell).getAllByTestId("text-content").map((el) => el.textContent)).toEqual([TEXTS.t2, expect.stringMatching(/…$/)]));
    await userEvent.click(screen.getByRole("button", { name: "cell negative→negative" }));
    await waitFor(() => expect(within(cell).getAllByTestId("text-content").map((el) => el.textContent)).toEqual([TEXTS.c1]));
    // the split's samples: correct, no probability recorded for it
    expect(within(cell).getByTestId("text-predicted")).toHaveTextContent(/^predicted negative$/);
    expect(within(cell).queryByTestId("text-true")).toBeNull();
    // its text came with the split's list: not read again by id
    expect(requests).not.toContain("/api/v1/projects/p1/samples/c1/");
  });

  it("speaks of texts in Chinese too", async () => {
    await i18n.changeLanguage("zh-CN");
    open();
    expect(await screen.findByTestId("report-split")).toHaveTextContent("在测试集上计算：200 条从未用于选择模型的文本。");
    await waitFor(() => expect(screen.getAllByTestId("text-true")[0]).toHaveTextContent("真实：negative"));
  });
});
