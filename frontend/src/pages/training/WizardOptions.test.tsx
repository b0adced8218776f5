import { screen } from "@testing-library/react";
import { describe, expect, it } from "vitest";

import { renderWithProviders } from "../../test/render";
import { expectedLatencyMs, expectedResolution, PreferenceCards } from "./WizardOptions";

describe("expected resolution and latency per model choice", () => {
  it("aims at the smallest size >= the images' shorter side, at most 128 px for faster", () => {
    expect(expectedResolution(28, "more_accurate")).toBe(96);
    expect(expectedResolution(28, "faster")).toBe(96);
    expect(expectedResolution(150, "more_accurate")).toBe(160);
    expect(expectedResolution(150, "faster")).toBe(128);
    expect(expectedResolution(3000, "more_accurate")).toBe(224);
    expect(expectedLatencyMs(224)).toBeCloseTo(8);
    expect(expectedLatencyMs(128)).toBeCloseTo(2.61, 2);
  });

  it("says when both choices give the same model for these images", () => {
    renderWithProviders(<PreferenceCards shorterSide={28} />);
    expect(screen.getByTestId("latency-faster")).toHaveTextContent("~1.5 ms");
    expect(screen.getByTestId("latency-more_accurate")).toHaveTextContent("~1.5 ms");
    expect(screen.getByTestId("same-model")).toHaveTextContent("both choices train at 96 px");
  });

  it("shows each choice's size and latency for photos", () => {
    renderWithProviders(<PreferenceCards shorterSide={480} />);
    expect(screen.getByTestId("latency-more_accurate")).toHaveTextContent("~8.0 ms");
    expect(screen.getByTestId("latency-faster")).toHaveTextContent("~2.6 ms");
    expect(screen.getByText("trains at 224 px for these images")).toBeInTheDocument();
    expect(screen.queryByTestId("same-model")).toBeNull();
  });
});
