import { screen, waitFor } from "@testing-library/react";
import userEvent from "@testing-library/user-event";
import i18n from "i18next";
import { afterEach, describe, expect, it } from "vitest";

import { json, renderRoutes } from "../../test/render";
import { TryItCard, textMaxChars } from "./TryItCard";

type Sent = { url: string; text: string | null; topK: string | null; file: boolean };

function predictApi(sent: Sent[], truncated: boolean) {
  return async (request: Request) => {
    const form = await request.formData();
    sent.push({ url: new URL(request.url).pathname, text: form.get("text") as string | null, topK: form.get("top_k") as string | null, file: form.has("file") });
    // the agent's answer for a text model (edge_agent: {"text"} -> predictions with `score`)
    return json(200, {
      model_version_id: "mv1",
      task: "text_classification",
      predictions: [
        { label: "positive", index: 1, score: 0.875 },
        { label: "negative", index: 0, score: 0.125 },
      ],
      truncated,
      latency_ms: 1.234,
    });
  };
}

const card = (maxChars?: number) => [
  { path: "/p/:projectId", element: <TryItCard projectId="p1" versionId="mv1" task="text_classification" maxChars={maxChars} /> },
];

describe("TryItCard for a text model", () => {
  afterEach(async () => {
    await i18n.changeLanguage("en");
  });

  it("sends the typed text as multipart `text` with top_k and shows the predictions as bars", async () => {
    const sent: Sent[] = [];
    const { container } = renderRoutes(card(4096), "/p/p1", predictApi(sent, false) as unknown as typeof globalThis.fetch);
    // a text box instead of the image picker
    expect(container.querySelector("input[type=file]")).toBeNull();
    const box = screen.getByRole("textbox", { name: "Text to classify" });
    expect(box).toHaveAttribute("placeholder", "Type or paste a text…");
    const predict = screen.getByRole("button", { name: /Predict/ });
    expect(predict).toBeDisabled(); // nothing to classify yet
    await userEvent.type(box, "Great value, arrived early.");
    await userEvent.clear(screen.getByRole("spinbutton", { name: "Top" }));
    await userEvent.type(screen.getByRole("spinbutton", { name: "Top" }), "2");
    await userEvent.click(predict);
    await waitFor(() => expect(screen.getAllByTestId("prediction")).toHaveLength(2));
    expect(sent).toEqual([{ url: "/api/v1/projects/p1/model-versions/mv1/predict/", text: "Great value, arrived early.", topK: "2", file: false }]);
    expect(screen.getAllByTestId("prediction").map((p) => p.textContent)).toEqual(["positive87.5%", "negative12.5%"]);
    expect(screen.getByText("1.2 ms")).toBeInTheDocument();
    expect(screen.queryByTestId("predict-truncated")).toBeNull();
  });

  it("says when only the start of a long text was read; Ctrl+Enter predicts", async () => {
    const sent: Sent[] = [];
    renderRoutes(card(4096), "/p/p1", predictApi(sent, true) as unknown as typeof globalThis.fetch);
    const box = screen.getByRole("textbox", { name: "Text to classify" });
    await userEvent.type(box, "very long review");
    await userEvent.keyboard("{Control>}{Enter}{/Control}");
    expect(await screen.findByTestId("predict-truncated")).toHaveTextContent(
      "Only the first 4,096 characters were read: the text is longer than this model reads.",
    );
    expect(sent.map((s) => s.text)).toEqual(["very long review"]);
  });

  it("in Chinese: the placeholder, and the note without the manifest's limit", async () => {
    await i18n.changeLanguage("zh-CN");
    renderRoutes(card(), "/p/p1", predictApi([], true) as unknown as typeof globalThis.fetch);
    const box = screen.getByRole("textbox", { name: "要分类的文本" });
    expect(box).toHaveAttribute("placeholder", "输入一段文本…");
    await userEvent.type(box, "物流很快，质量不错");
    await userEvent.click(screen.getByRole("button", { name: /预\s?测/ }));
    expect(await screen.findByTestId("predict-truncated")).toHaveTextContent("只读取了文本的开头部分：文本超出了此模型读取的长度。");
  });
});

describe("textMaxChars", () => {
  it("reads the manifest's text settings", () => {
    expect(textMaxChars({ text: { max_chars: 4096, buckets: 262144 } })).toBe(4096);
    expect(textMaxChars({ detection: { score_threshold: 0.3 } })).toBeUndefined();
    expect(textMaxChars({ text: { max_chars: "4096" } })).toBeUndefined();
    expect(textMaxChars(null)).toBeUndefined();
  });
});
