import { screen } from "@testing-library/react";
import { describe, expect, it } from "vitest";

import { renderWithProviders } from "../../test/render";
import { applyMessage, type LiveJob } from "./jobState";
import { ProgressCard } from "./TrainingJobPage";

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
