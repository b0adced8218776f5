import { fireEvent, screen, within } from "@testing-library/react";
import userEvent from "@testing-library/user-event";
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
    linear: {
      family: "linear", fit: "linear_lbfgs", val_accuracy: 0.861, val_balanced_accuracy: 0.84, val_loss: 0.41, kept_epoch: 3, epochs_done: 4, train_s: 12.4, parameters: 524290,
      fits: {
        linear: { fit: "linear", solver: "adam", val_accuracy: 0.852, val_balanced_accuracy: 0.83, kept_epoch: 1, epochs_done: 1 },
        linear_lbfgs: { fit: "linear_lbfgs", solver: "lbfgs", val_accuracy: 0.861, val_balanced_accuracy: 0.84, kept_epoch: 2, epochs_done: 3 },
      },
    },
    fasttext: {
      family: "fasttext", fit: "fasttext", val_accuracy: 0.883, val_balanced_accuracy: 0.871, val_loss: 0.35, kept_epoch: 2, epochs_done: 3, train_s: 31.9, parameters: 16777344,
      fits: { fasttext: { fit: "fasttext", solver: "adam", val_accuracy: 0.883, val_balanced_accuracy: 0.871, kept_epoch: 2, epochs_done: 3 } },
    },
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
    // in one line: which model won on validation, and its validation accuracy
    expect(screen.getByTestId("text-family")).toHaveTextContent("Won on validation: fastText-style model, 88.3%");
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
    // the first cell opens a family trained by several fits (the linear model: Adam and L-BFGS)
    expect(rows.map((r) => [...r.querySelectorAll("td")].map((td) => td.textContent))).toEqual([
      ["", "linear model ", "exact (L-BFGS)", "86.1%", "84.0%", "3 of 4", "0:12"],
      ["", "fastText-style model chosen", "Adam", "88.3%", "87.1%", "2 of 3", "0:32"],
    ]);
    expect(within(rows[0]!).getByRole("button")).toBeInTheDocument();
    // one fit only: nothing to open (antd keeps a hidden placeholder for the alignment)
    fireEvent.click(within(rows[1]!).getByRole("button"));
    expect(screen.queryByTestId("candidate-fits")).toBeNull();
    fireEvent.click(within(rows[0]!).getByRole("button"));
    expect(within(screen.getByTestId("candidate-fits")).getAllByTestId("candidate-fit")).toHaveLength(2);
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

describe("the four families", () => {
  afterEach(async () => {
    await i18n.changeLanguage("en");
  });

  // the engine's recipe when the sentence encoder won (workers/ml/text/train.py, encoder.py)
  const four = {
    schema: "sampan.text-recipe/1",
    winner: "finetune",
    family: "encoder",
    candidates: {
      linear: {
        family: "linear", fit: "linear", val_accuracy: 0.884, val_balanced_accuracy: 0.879, kept_epoch: 5, epochs_done: 8, train_s: 14.2,
        fits: {
          linear: { fit: "linear", solver: "adam", val_accuracy: 0.884, val_balanced_accuracy: 0.879 },
          linear_lbfgs: { fit: "linear_lbfgs", solver: "lbfgs", val_accuracy: 0.861, val_balanced_accuracy: 0.85 },
        },
      },
      fasttext: { family: "fasttext", fit: "fasttext", val_accuracy: 0.85, val_balanced_accuracy: 0.84, kept_epoch: 3, epochs_done: 3, train_s: 20.5, fits: { fasttext: { fit: "fasttext", val_accuracy: 0.85 } } },
      charcnn: { family: "charcnn", skipped: "budget: 2.1 s left after the other candidates, one epoch needs ~41.0 s" },
      encoder: {
        family: "encoder", fit: "finetune", val_accuracy: 0.912, val_balanced_accuracy: 0.905, val_loss: 0.29, train_s: 96.4,
        fits: { frozen: { val_accuracy: 0.874, val_balanced_accuracy: 0.861, val_loss: 0.41, c: 10 }, finetune: { val_accuracy: 0.912, val_balanced_accuracy: 0.905, val_loss: 0.29, epochs: 2 } },
      },
    },
  };

  it("the candidates table: each family in the engine's order, the fit that won inside it, and each fit's figures on opening", async () => {
    const user = userEvent.setup();
    renderWithProviders(<CandidatesCard job={{ recipe: four } as unknown as TrainingJob} />);
    const card = screen.getByTestId("text-candidates");
    expect(within(card).getByRole("columnheader", { name: "Fit kept" })).toBeInTheDocument();
    const rows = within(card).getAllByRole("row").slice(1);
    expect(rows.map((r) => [...r.querySelectorAll("td")].map((td) => td.textContent))).toEqual([
      ["", "linear model ", "Adam", "88.4%", "87.9%", "5 of 8", "0:14"],
      ["", "fastText-style model ", "Adam", "85.0%", "84.0%", "3 of 3", "0:21"],
      // the family the budget left out: its reason spans the fit's and the figures' columns
      ["", "character CNN ", "Not trained: budget: 2.1 s left after the other candidates, one epoch needs ~41.0 s"],
      ["", "sentence encoder (all-MiniLM-L6-v2) chosen", "fine-tuned", "91.2%", "90.5%", "—", "1:36"],
    ]);
    expect(within(rows[3]!).getByTestId("candidate-winner")).toBeInTheDocument();
    expect(screen.queryByTestId("candidate-fits")).toBeNull();
    await user.click(within(rows[3]!).getByRole("button"));
    const fits = await screen.findByRole("list", { name: "Fits of the sentence encoder (all-MiniLM-L6-v2)" });
    expect(within(fits).getAllByTestId("candidate-fit").map((li) => li.textContent)).toEqual([
      "frozen encoder + head: validation accuracy 87.4%, balanced accuracy 86.1%",
      "fine-tuned: validation accuracy 91.2%, balanced accuracy 90.5% kept",
    ]);
    await user.click(within(rows[0]!).getByRole("button"));
    const linear = await screen.findByRole("list", { name: "Fits of the linear model" });
    expect(within(linear).getAllByTestId("candidate-fit").map((li) => li.textContent)).toEqual([
      "Adam: validation accuracy 88.4%, balanced accuracy 87.9% kept",
      "exact (L-BFGS): validation accuracy 86.1%, balanced accuracy 85.0%",
    ]);
  });

  it("a fit that did not run says why, and the table reads in Chinese", async () => {
    const user = userEvent.setup();
    const frozenOnly = {
      ...four,
      candidates: {
        ...four.candidates,
        encoder: { ...four.candidates.encoder, fit: "frozen", val_accuracy: 0.874, fits: { frozen: four.candidates.encoder.fits.frozen, finetune: { skipped: "budget: an epoch needs ~80 s, 12 s are left" } } },
      },
    };
    await i18n.changeLanguage("zh-CN");
    renderWithProviders(<CandidatesCard job={{ recipe: frozenOnly } as unknown as TrainingJob} />);
    const rows = within(screen.getByTestId("text-candidates")).getAllByRole("row").slice(1);
    expect(within(rows[2]!).getByTestId("candidate-family")).toHaveTextContent("字符级卷积网络");
    expect(within(rows[3]!).getByTestId("candidate-fit-kept")).toHaveTextContent("冻结编码器 + 分类头");
    await user.click(within(rows[3]!).getByRole("button"));
    const items = await screen.findAllByTestId("candidate-fit");
    expect(items.map((li) => li.textContent)).toEqual([
      "冻结编码器 + 分类头：验证准确率 87.4%，平衡准确率 86.1% 保留",
      "全部权重微调：未运行（budget: an epoch needs ~80 s, 12 s are left）",
    ]);
  });

  it("the job page says in one line which model won on validation and its validation accuracy", async () => {
    const history = [epochEnd("linear", 1, 0.88), { ...epochEnd("encoder", 1, 0.874), fit: "frozen" }, { ...epochEnd("encoder", 2, 0.912), fit: "finetune" }];
    const live: LiveJob = { ...start, status: "SUCCEEDED", progress: { phase: "done" }, history };
    const encoderMetrics = { evaluated_on: "test", family: "encoder", winner: "finetune", val_accuracy: 0.912, test_accuracy: 0.9, val_by_family: { encoder: { val_accuracy: 0.912, fit: "finetune" } } };
    const view = renderWithProviders(<ProgressCard live={live} budget={120} metrics={encoderMetrics} task="text_classification" recipe={four} />);
    expect(screen.getByTestId("text-family")).toHaveTextContent("Won on validation: sentence encoder (all-MiniLM-L6-v2), fine-tuned, 91.2%");
    view.unmount();
    await i18n.changeLanguage("zh-CN");
    renderWithProviders(<ProgressCard live={live} budget={120} metrics={encoderMetrics} task="text_classification" recipe={four} />);
    expect(screen.getByTestId("text-family")).toHaveTextContent("验证集上胜出：句向量编码器（all-MiniLM-L6-v2），全部权重微调，91.2%");
  });

  it("while the encoder trains: the family and its fit", () => {
    const live = applyMessage(start, { progress: { phase: "train", family: "encoder", fit: "finetune", epoch: 1, step: 12, steps: 90, elapsed_s: 40 } });
    renderWithProviders(<ProgressCard live={live} budget={120} task="text_classification" />);
    expect(statistic("Phase")).toBe("Training the sentence encoder (all-MiniLM-L6-v2)");
    expect(screen.getByTestId("text-family")).toHaveTextContent("sentence encoder (all-MiniLM-L6-v2), fine-tuned");
  });
});
