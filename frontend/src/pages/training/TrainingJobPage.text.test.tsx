import { screen, within } from "@testing-library/react";
import i18n from "i18next";
import { afterEach, describe, expect, it, vi } from "vitest";

import type { TrainingJob } from "../../api/queries/training";
import { renderWithProviders } from "../../test/render";
import { applyMessage, type LiveJob } from "./jobState";
import { CandidatesCard } from "./TextCandidates";
import { CurvesCard, ProgressCard } from "./TrainingJobPage";

// ECharts needs a canvas: the chart is not what these tests read
vi.mock("../../components/charts/Chart", () => ({ Chart: (props: { ariaLabel: string }) => <div role="img" aria-label={props.ariaLabel} /> }));

const start: LiveJob = { status: "RUNNING", progress: {}, error: "", history: [], budgetS: 60, shown: { percent: 0, etaS: null } };

function statistic(title: string): string {
  const titles = [...document.querySelectorAll(".ant-statistic-title")].filter((el) => el.textContent === title);
  return titles[0]?.closest(".ant-statistic")?.querySelector(".ant-statistic-content")?.textContent ?? "";
}

// events and the recipe as the text engine sends them (workers/ml/text/train.py)
const epochEnd = (family: string, epoch: number, val_accuracy: number) => ({
  phase: "train", family, epoch, step: 40 * epoch, loss: 0.31, val_accuracy, val_balanced_accuracy: val_accuracy, val_loss: 0.4, elapsed_s: 10 + epoch,
});
const recipe = {
  schema: "sampan.text-recipe/1",
  winner: "fasttext",
  family: "fasttext",
  candidates: {
    linear: { family: "linear", val_accuracy: 0.861, val_balanced_accuracy: 0.84, val_loss: 0.41, kept_epoch: 3, epochs_done: 4, train_s: 12.4, parameters: 524290 },
    fasttext: { family: "fasttext", val_accuracy: 0.883, val_balanced_accuracy: 0.871, val_loss: 0.35, kept_epoch: 2, epochs_done: 3, train_s: 31.9, parameters: 16777344 },
  },
};
const metrics = { evaluated_on: "val", family: "fasttext", val_accuracy: 0.883, val_macro_f1: 0.87 };

describe("a text job's progress", () => {
  afterEach(async () => {
    await i18n.changeLanguage("en");
  });

  it("says which model family is training, its epoch and planned steps", async () => {
    let live = applyMessage(start, { progress: epochEnd("linear", 4, 0.86) });
    live = applyMessage(live, { progress: { phase: "train", family: "fasttext", epoch: 1, step: 25, steps: 120, elapsed_s: 20, fraction: 0.4 } });
    const view = renderWithProviders(<ProgressCard live={live} budget={60} task="text_classification" />);
    expect(statistic("Phase")).toBe("Training the fastText-style model");
    expect(screen.getByTestId("text-family")).toHaveTextContent("fastText-style model");
    expect(statistic("Epoch")).toBe("1");
    expect(screen.getByTestId("text-steps")).toHaveTextContent("step 25 of 120 planned");
    expect(statistic("Validation accuracy")).toBe("86.0%");
    expect(screen.getByTestId("val-epoch")).toHaveTextContent("after epoch 4 (linear model)");
    // not taken for a detector's steps, nor an image classifier's planned epochs
    expect(screen.queryByTestId("training-step")).toBeNull();
    view.unmount();
    await i18n.changeLanguage("zh-CN");
    renderWithProviders(<ProgressCard live={live} budget={60} task="text_classification" />);
    expect(screen.getByTestId("text-family")).toHaveTextContent("fastText 式模型");
  });

  it("names the text phases before training", () => {
    const live = applyMessage(start, { progress: { phase: "featurize", elapsed_s: 1 } });
    renderWithProviders(<ProgressCard live={live} budget={60} task="text_classification" />);
    expect(statistic("Phase")).toBe("Turning the texts into n-gram features");
    expect(statistic("Epoch")).toBe("—");
  });

  it("once done: the family kept, its kept epoch's validation figure, and the kept epoch on the curves", () => {
    const history = [epochEnd("linear", 1, 0.8), epochEnd("linear", 2, 0.85), epochEnd("fasttext", 1, 0.82), epochEnd("fasttext", 2, 0.883), epochEnd("fasttext", 3, 0.87)];
    const live: LiveJob = { ...start, status: "SUCCEEDED", progress: { phase: "done" }, history };
    renderWithProviders(
      <>
        <ProgressCard live={live} budget={60} metrics={metrics} task="text_classification" recipe={recipe} />
        <CurvesCard live={live} metrics={metrics} recipe={recipe} />
      </>,
    );
    expect(screen.getByTestId("text-family")).toHaveTextContent("fastText-style model (chosen)");
    // the kept epoch (fastText-style, epoch 2), not the last one (epoch 3, 87.0 %)
    expect(statistic("Validation accuracy")).toBe("88.3%");
    expect(screen.getByTestId("val-epoch")).toHaveTextContent("of the model kept: epoch 2 (fastText-style model)");
    expect(screen.getByTestId("kept-epoch")).toHaveTextContent("The model kept is from epoch 2 (fastText-style model, validation accuracy 88.3%)");
  });
});

describe("CandidatesCard", () => {
  afterEach(async () => {
    await i18n.changeLanguage("en");
  });

  it("lists each family's validation figures and marks the one kept", () => {
    renderWithProviders(<CandidatesCard job={{ recipe } as unknown as TrainingJob} />);
    const card = screen.getByTestId("text-candidates");
    expect(within(card).getByText("Candidates on validation")).toBeInTheDocument();
    const rows = within(card).getAllByRole("row").slice(1);
    expect(rows.map((r) => [...r.querySelectorAll("td")].map((td) => td.textContent))).toEqual([
      ["linear model ", "86.1%", "84.0%", "3 of 4", "0:12"],
      ["fastText-style model chosen", "88.3%", "87.1%", "2 of 3", "0:32"],
    ]);
    expect(within(rows[1]!).getByTestId("candidate-winner")).toBeInTheDocument();
    expect(within(rows[0]!).queryByTestId("candidate-winner")).toBeNull();
  });

  it("says why a family was not trained, and in Chinese", async () => {
    const skipped = { family: "linear", candidates: { linear: recipe.candidates.linear, fasttext: { family: "fasttext", skipped: "budget: not even one epoch fits after calibration" } } };
    const view = renderWithProviders(<CandidatesCard job={{ recipe: skipped } as unknown as TrainingJob} />);
    expect(screen.getByTestId("candidate-skipped")).toHaveTextContent("Not trained: budget: not even one epoch fits after calibration");
    expect(screen.getAllByTestId("candidate-winner")).toHaveLength(1);
    view.unmount();
    await i18n.changeLanguage("zh-CN");
    renderWithProviders(<CandidatesCard job={{ recipe: skipped } as unknown as TrainingJob} />);
    expect(screen.getByText("验证集上的候选模型")).toBeInTheDocument();
    expect(screen.getByTestId("candidate-winner")).toHaveTextContent("已选用");
  });

  it("shows nothing for an image job", () => {
    renderWithProviders(<CandidatesCard job={{ recipe: { stop_reason: "deadline", resolution: 96 } } as unknown as TrainingJob} />);
    expect(screen.queryByTestId("text-candidates")).toBeNull();
  });
});
