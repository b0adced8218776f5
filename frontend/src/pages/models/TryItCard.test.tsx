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

  it("draws a detector's boxes over the image where they lie and filters them with the score slider", async () => {
    const sent: { topK: string | null; threshold: string | null }[] = [];
    const fetcher = async (request: Request) => {
      const form = await request.formData();
      sent.push({ topK: form.get("top_k") as string | null, threshold: form.get("score_threshold") as string | null });
      return json(200, {
        model_version_id: "mv1",
        task: "object_detection",
        width: 640,
        height: 360,
        tiles: 1,
        latency_ms: 30.5,
        detections: [
          { label: "person", index: 0, score: 0.9, box: [20, 40, 120, 200] },
          { label: "car", index: 1, score: 0.8, box: [100, 300, 200, 340] },
          { label: "person", index: 0, score: 0.2, box: [40, 80, 80, 160] },
        ],
      });
    };
    globalThis.URL.createObjectURL ??= () => "blob:preview";
    globalThis.URL.revokeObjectURL ??= () => undefined;
    const detector = [{ path: "/p/:projectId", element: <TryItCard projectId="p1" versionId="mv1" task="object_detection" scoreThreshold={0.3} /> }];
    const { container } = renderRoutes(detector, "/p/p1", fetcher as unknown as typeof globalThis.fetch);
    expect(screen.queryByLabelText("Top")).toBeNull(); // no top-k for a detector
    const input = container.querySelector("input[type=file]") as HTMLInputElement;
    fireEvent.change(input, { target: { files: [new File(["x"], "street.jpg", { type: "image/jpeg" })] } });
    await waitFor(() => expect(screen.getAllByTestId("detection-box")).toHaveLength(2));
    // asked down to the slider's floor once; the slider (at the manifest's 0.3) hides the 0.2 person
    expect(sent).toEqual([{ topK: null, threshold: "0.05" }]);
    const [person, car] = screen.getAllByTestId("detection-box") as HTMLElement[];
    expect(person?.style.left).toBe("3.125%");
    expect(parseFloat(person?.style.top ?? "")).toBeCloseTo((100 * 40) / 360, 6);
    expect(person?.style.width).toBe("15.625%");
    expect(parseFloat(person?.style.height ?? "")).toBeCloseTo((100 * 160) / 360, 6);
    expect(person).toHaveTextContent("person 90%");
    expect(car?.style.left).toBe("15.625%");
    expect(parseFloat(car?.style.top ?? "")).toBeCloseTo((100 * 300) / 360, 6);
    expect(screen.getByTestId("detection-count")).toHaveTextContent("2");
    expect(screen.getAllByTestId("detection-class").map((tag) => tag.textContent)).toEqual(["car × 1", "person × 1"]);
    expect(screen.getByText("30.5 ms")).toBeInTheDocument();

    // Home moves the slider to its lowest value: every detection the server sent is drawn
    fireEvent.keyDown(screen.getByRole("slider"), { key: "Home", keyCode: 36 });
    await waitFor(() => expect(screen.getAllByTestId("detection-box")).toHaveLength(3));
    expect(screen.getAllByTestId("detection-class").map((tag) => tag.textContent)).toEqual(["person × 2", "car × 1"]);
    expect(sent).toHaveLength(1); // filtered here, not asked again
  });
});
