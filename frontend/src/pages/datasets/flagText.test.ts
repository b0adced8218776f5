import i18n from "i18next";
import { describe, expect, it } from "vitest";

import { flagText } from "./flagText";

const t = i18n.t.bind(i18n);
const labels = ["cat", "dog"];

describe("flagText", () => {
  it("names the class of a per-class flag and translates the known codes", () => {
    expect(flagText(t, { code: "no_test_split_for_class", class_index: 1, message: "has 3 samples: too few" }, labels)).toBe(
      "Class “dog” has too few samples for a test split: it is left out of the test report.",
    );
    expect(flagText(t, { code: "class_too_small", class_index: 0, message: "has 1 sample(s)" }, labels)).toMatch(/^Class “cat” is too small/);
    expect(flagText(t, { code: "no_test_split", message: "…" }, labels)).toMatch(/^No class has enough labeled samples for a test split/);
    expect(flagText(t, { code: "class_imbalance", ratio: 4.25, message: "…" }, labels)).toMatch(/largest has 4\.3× the samples/);
  });

  it("shows an unknown flag's message, with its class when it has one", () => {
    expect(flagText(t, { code: "new_thing", class_index: 0, message: "is odd" }, labels)).toBe("Class “cat”: is odd");
    expect(flagText(t, { code: "new_thing", message: "something" }, labels)).toBe("something");
  });
});
