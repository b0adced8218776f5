import { screen } from "@testing-library/react";
import i18n from "i18next";
import { afterEach, describe, expect, it } from "vitest";

import { renderWithProviders } from "../../test/render";
import { SampleThumb, thumbCaption } from "./SampleThumb";

const t = i18n.t.bind(i18n);

describe("SampleThumb", () => {
  afterEach(async () => {
    await i18n.changeLanguage("en");
  });

  it("reads predicted 5 · 69%, not 5 69% (which looks like 5.69%)", () => {
    renderWithProviders(<SampleThumb projectId="p1" sampleId="s1" predicted="5" true="3" probability={0.687} />);
    expect(screen.getByTestId("thumb-predicted")).toHaveTextContent(/^predicted 5 · 69%$/);
    expect(thumbCaption(t, "cat", null)).toBe("predicted cat");
  });

  it("in Chinese too", async () => {
    await i18n.changeLanguage("zh-CN");
    expect(thumbCaption(t, "5", 0.687)).toBe("预测 5 · 69%");
  });
});
