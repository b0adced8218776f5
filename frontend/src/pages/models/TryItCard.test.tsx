import { fireEvent, screen, waitFor } from "@testing-library/react";
import { describe, expect, it } from "vitest";

import { json, renderRoutes } from "../../test/render";
import { TryItCard } from "./TryItCard";

const routes = [{ path: "/p/:projectId", element: <TryItCard projectId="p1" versionId="mv1" /> }];

describe("TryItCard", () => {
  it("sends the dropped image as multipart `file` with top_k and shows the predictions and latency", async () => {
    const sent: { file?: string; topK?: string | null; url?: string }[] = [];
    const fetcher = async (request: Request) => {
      const form = await request.formData();
      const file = form.get("file");
      sent.push({ url: new URL(request.url).pathname, file: file === null ? undefined : String(file), topK: form.get("top_k") as string | null });
      return json(200, {
        model_version_id: "mv1",
        latency_ms: 12.34,
        predictions: [
          { label: "cat", index: 0, probability: 0.9 },
          { label: "dog", index: 1, probability: 0.1 },
        ],
      });
    };
    globalThis.URL.createObjectURL ??= () => "blob:preview";
    globalThis.URL.revokeObjectURL ??= () => undefined;
    const { container } = renderRoutes(routes, "/p/p1", fetcher as unknown as typeof globalThis.fetch);
    const input = container.querySelector("input[type=file]") as HTMLInputElement;
    fireEvent.change(input, { target: { files: [new File(["x"], "cat.png", { type: "image/png" })] } });
    await waitFor(() => expect(screen.getAllByTestId("prediction")).toHaveLength(2));
    // jsdom's File is no Blob to Node's fetch, which stringifies it: check that a `file` part went,
    // not its content (a real browser sends the image: seen against the platform)
    expect(sent).toEqual([{ url: "/api/v1/projects/p1/model-versions/mv1/predict/", file: expect.any(String), topK: "5" }]);
    expect(screen.getByText("90.0%")).toBeInTheDocument();
    expect(screen.getByText("12.3 ms")).toBeInTheDocument();
  });
});
