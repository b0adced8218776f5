import { screen } from "@testing-library/react";
import i18n from "i18next";
import { afterEach, describe, expect, it, vi } from "vitest";

import type { TrainingJob } from "../../api/queries/training";

import { renderWithProviders } from "../../test/render";
import { applyMessage, type LiveJob } from "./jobState";
import { CurvesCard, OutcomeCard, ProgressCard } from "./TrainingJobPage";

// ECharts needs a canvas: the chart is not what these tests read
vi.mock("../../components/charts/Chart", () => ({ Chart: (props: { ariaLabel: string }) => <div role="img" aria-label={props.ariaLabel} /> }));

const start: LiveJob = { status: "RUNNING", progress: {}, error: "", history: [], budgetS: 90, shown: { percent: 0, etaS: null } };

function statistic(title: string): string {
  const titles = [...document.querySelectorAll(".ant-statistic-title")].filter((el) => el.textContent === title);
  return titles[0]?.closest(".ant-statistic")?.querySelector(".ant-statistic-content")?.textContent ?? "";
}

describe("ProgressCard", () => {
  it("says the phase in plain words and which epoch the validation figure is from", () => {
    let live = applyMessage(start, { progress: { phase: "finetune", epoch: 1, epochs: 3, loss: 0.9, val_accuracy: 0.965, elapsed_s: 40, eta_s: 50, fraction: 0.45 } });
    live = applyMessage(live, { progress: { phase: "finetune", epoch: 2, epochs: 3, step: 2, steps: 9, loss: 0.5, elapsed_s: 45, eta_s: 45, fraction: 0.5 } });
    renderWithProviders(<ProgressCard live={live} budget={90} />);
    expect(statistic("Phase")).toBe("Training all layers");
    expect(statistic("Epoch")).toBe("2 / 3");
    expect(screen.getByTestId("epochs-planned")).toHaveTextContent("re-planned after each epoch");
    expect(statistic("Validation accuracy")).toBe("96.5%");
    expect(screen.getByTestId("val-epoch")).toHaveTextContent("after epoch 1 (all layers)");
    expect(screen.getByTestId("val-epoch")).toHaveAttribute("title", "Validation accuracy 96.5% after epoch 1 (all layers)");
    expect(screen.getByTestId("loss-epoch")).toHaveTextContent("during epoch 2");
    expect(statistic("Time left")).toBe("0:45");
    expect(screen.getByTestId("training-progress")).toHaveAttribute("aria-valuenow", "50");
  });

  it("during evaluation keeps the bar and the time left where they were", () => {
    let live = applyMessage(start, { progress: { phase: "finetune", epoch: 3, epochs: 3, loss: 0.2, val_accuracy: 0.9, elapsed_s: 80, eta_s: 8 } });
    live = applyMessage(live, { progress: { phase: "evaluate", elapsed_s: 81 } });
    renderWithProviders(<ProgressCard live={live} budget={90} />);
    expect(statistic("Phase")).toBe("Evaluating on held-out images");
    expect(statistic("Epoch")).toBe("—");
    expect(statistic("Time left")).toBe("0:09"); // min(90 - 81, 8 + tolerance), not "up to 1:30"
    expect(screen.getByTestId("training-progress")).toHaveAttribute("aria-valuenow", "90");
  });
});

describe("ProgressCard once done", () => {
  it("shows the kept epoch's validation figure, not the last epoch's", () => {
    const live: LiveJob = {
      ...start,
      status: "SUCCEEDED",
      progress: { phase: "done" },
      history: [
        { phase: "head", epoch: 40, val_accuracy: 0.867 },
        { phase: "finetune", epoch: 1, val_accuracy: 0.333 },
      ],
    };
    renderWithProviders(<ProgressCard live={live} budget={30} metrics={{ best_epoch: 40, best_phase: "head" }} />);
    expect(statistic("Validation accuracy")).toBe("86.7%");
    expect(screen.getByTestId("val-epoch")).toHaveTextContent("of the model kept: epoch 40 (output layer only)");
  });

  it("shows the test accuracy, said to be on test, when the report used the test split", () => {
    const live: LiveJob = { ...start, status: "SUCCEEDED", progress: { phase: "done" }, history: [{ phase: "finetune", epoch: 3, val_accuracy: 0.95 }] };
    const metrics = { evaluated_on: "test", val_accuracy: 0.95, test_accuracy: 0.912, best_epoch: 3, best_phase: "finetune" };
    renderWithProviders(<ProgressCard live={live} budget={30} metrics={metrics} />);
    expect(statistic("Test accuracy")).toBe("91.2%");
    expect(statistic("Validation accuracy")).toBe("");
  });

  it("keeps validation accuracy when the report used the validation split", () => {
    const live: LiveJob = { ...start, status: "SUCCEEDED", progress: { phase: "done" }, history: [{ phase: "finetune", epoch: 3, val_accuracy: 0.95 }] };
    renderWithProviders(<ProgressCard live={live} budget={30} metrics={{ evaluated_on: "val", val_accuracy: 0.95, best_epoch: 3, best_phase: "finetune" }} />);
    expect(statistic("Validation accuracy")).toBe("95.0%");
    expect(statistic("Test accuracy")).toBe("");
  });
});

describe("an object detector's job", () => {
  const validation = { phase: "train", step: 80, steps: 200, loss: 1.2, val_map50: 0.45, val_map: 0.2, elapsed_s: 31 };

  it("counts steps and shows the newest validation mAP@0.5 with its step", () => {
    let live = applyMessage(start, { progress: validation });
    live = applyMessage(live, { progress: { phase: "train", step: 95, steps: 200, loss: 1.1, elapsed_s: 36 } });
    renderWithProviders(<ProgressCard live={live} budget={120} task="object_detection" />);
    expect(statistic("Phase")).toBe("Training the detector");
    expect(statistic("Step")).toBe("95 / 200");
    expect(statistic("Loss")).toBe("1.1000");
    expect(statistic("Validation mAP@0.5")).toBe("45.0%");
    expect(screen.getByTestId("val-epoch")).toHaveTextContent("after step 80");
    expect(statistic("Epoch")).toBe("");
  });

  it("once done: test mAP@0.5 when evaluated on test, and the kept step on the curves", () => {
    const history = [validation, { ...validation, step: 160, val_map50: 0.62 }, { ...validation, step: 200, val_map50: 0.6 }];
    const live: LiveJob = { ...start, status: "SUCCEEDED", progress: { phase: "done" }, history };
    const metrics = { evaluated_on: "test", val_map50: 0.62, test_map50: 0.58, best_step: 160 };
    renderWithProviders(
      <>
        <ProgressCard live={live} budget={120} metrics={metrics} task="object_detection" />
        <CurvesCard live={live} metrics={metrics} />
      </>,
    );
    expect(statistic("Test mAP@0.5")).toBe("58.0%");
    expect(screen.getByTestId("val-epoch")).toHaveTextContent("of the model kept: step 160");
    expect(screen.getByRole("img", { name: "Loss and validation mAP@0.5 by training step" })).toBeInTheDocument();
    expect(screen.getByTestId("kept-epoch")).toHaveTextContent("The model kept is from step 160 (validation mAP@0.5 62.0%)");
  });
});

describe("OutcomeCard", () => {
  afterEach(async () => {
    await i18n.changeLanguage("en");
  });

  const finished = {
    budget_s: 30,
    started_at: "2026-11-29T00:00:00Z",
    finished_at: "2026-11-29T00:00:25Z",
    recipe: {
      stop_reason: "deadline",
      resolution: 96,
      resolution_reason: "96 px: the images' shorter side is 28 px",
      augmentation: "light",
      augmentation_flip: false,
      augmentation_reason: "grayscale images (digits, text, scans): no flips, a mirror image can change the class",
      model_preference: "more_accurate",
    },
  } as unknown as TrainingJob;
  const done: LiveJob = { ...start, status: "SUCCEEDED" };

  it("gives the engine's reasons once, without repeating the image size", () => {
    renderWithProviders(<OutcomeCard job={finished} live={done} />);
    expect(screen.getByTestId("resolution")).toHaveTextContent(/^96 px — the images' shorter side is 28 px$/);
    expect(screen.getByTestId("augmentation")).toHaveTextContent(/^Light — grayscale images \(digits, text, scans\): no flips/);
  });

  it("says plainly when the budget left no time to train all layers", async () => {
    const headOnly = { ...finished, recipe: { ...(finished.recipe as object), stop_reason: "no_finetune_time", finetune_steps_done: 0 } } as unknown as TrainingJob;
    const live: LiveJob = { ...done, history: [{ phase: "head", epoch: 40, val_accuracy: 0.8 }] };
    const view = renderWithProviders(<OutcomeCard job={headOnly} live={live} />);
    expect(screen.getByTestId("output-layer-only")).toHaveTextContent(
      "The budget left no time to train all layers: this model is the output layer only (raise the budget for a better model).",
    );
    view.unmount();
    await i18n.changeLanguage("zh-CN");
    renderWithProviders(<OutcomeCard job={headOnly} live={live} />);
    expect(screen.getByTestId("output-layer-only")).toHaveTextContent("预算没有留下训练全部层的时间：此模型只训练了输出层（提高预算可得到更好的模型）。");
  });

  it("names the device the job trained on: the CPU, or the GPU by its name", () => {
    const view = renderWithProviders(<OutcomeCard job={{ ...finished, recipe: { ...(finished.recipe as object), device: "cpu" } } as unknown as TrainingJob} live={done} />);
    expect(screen.getByText("Trained on")).toBeInTheDocument();
    expect(screen.getByTestId("device")).toHaveTextContent(/^CPU$/);
    view.unmount();
    renderWithProviders(<OutcomeCard job={{ ...finished, recipe: { ...(finished.recipe as object), device: "cuda:0 NVIDIA H200" } } as unknown as TrainingJob} live={done} />);
    expect(screen.getByTestId("device")).toHaveTextContent(/^cuda:0 NVIDIA H200$/);
  });

  it("says nothing of a device for a job recorded before devices were", () => {
    renderWithProviders(<OutcomeCard job={finished} live={done} />);
    expect(screen.queryByTestId("device")).toBeNull();
  });

  it("says a job stopped at the time limit, without an output-layer warning", () => {
    renderWithProviders(<OutcomeCard job={finished} live={done} />);
    expect(screen.getByTestId("stop-reason")).toHaveTextContent("Stopped at the time limit (a longer budget may train further).");
    expect(screen.queryByTestId("output-layer-only")).toBeNull();
  });

  it("in Chinese keeps the engine's English reasons in a tooltip and says whether it flipped", async () => {
    await i18n.changeLanguage("zh-CN");
    renderWithProviders(<OutcomeCard job={finished} live={done} />);
    expect(screen.getByTestId("resolution")).toHaveTextContent(/^96 像素$/);
    expect(screen.getByTestId("resolution")).toHaveAttribute("title", "96 px: the images' shorter side is 28 px");
    expect(screen.getByTestId("augmentation")).toHaveTextContent(/^轻度（不做翻转）$/);
    expect(screen.getByTestId("augmentation").getAttribute("title")).toMatch(/^grayscale images/);
  });
});

describe("CurvesCard", () => {
  const epochs = applyMessage(start, { progress: { phase: "finetune", epoch: 1, epochs: 3, loss: 0.9, val_loss: 0.5, val_accuracy: 0.75, elapsed_s: 10 } });

  it("says when validation is so small that one image moves the curve by whole points", () => {
    renderWithProviders(<CurvesCard live={epochs} metrics={undefined} nVal={4} />);
    expect(screen.getByTestId("small-validation")).toHaveTextContent("Validation holds 4 images: one image moves its accuracy by 25.0 points");
  });

  it("says nothing of the kind for a validation split of a few hundred images", () => {
    renderWithProviders(<CurvesCard live={epochs} metrics={undefined} nVal={200} />);
    expect(screen.queryByTestId("small-validation")).toBeNull();
  });
});
