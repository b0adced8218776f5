import { act, fireEvent, screen, waitFor } from "@testing-library/react";
import userEvent from "@testing-library/user-event";
import { beforeEach, describe, expect, it, vi } from "vitest";

import { json, renderRoutes } from "../../test/render";
import { UploadPanel } from "./UploadPanel";
import { formatDuration, RateMeter } from "./transferRate";

// tus-js-client is the boundary: a fake Upload that the test drives (progress, a cut connection
// and its retry, success), recording what the panel asked of it.
const tus = vi.hoisted(() => {
  interface Options {
    endpoint: string;
    chunkSize: number;
    metadata: Record<string, string>;
    onProgress: (loaded: number, total: number) => void;
    onShouldRetry: (error: Error, attempt: number, options: unknown) => boolean;
    onSuccess: () => void;
    onError: (error: Error) => void;
  }
  const uploads: { file: File; options: Options; url: string | null; started: boolean }[] = [];
  class Upload {
    file: File;
    options: Options;
    url: string | null = null;
    started = false;
    constructor(file: File, options: Options) {
      this.file = file;
      this.options = options;
      uploads.push(this);
    }
    findPreviousUploads() {
      return Promise.resolve([]);
    }
    resumeFromPreviousUpload() {}
    start() {
      this.started = true;
    }
    abort() {
      return Promise.resolve();
    }
  }
  return { uploads, Upload };
});
vi.mock("tus-js-client", () => ({ Upload: tus.Upload }));

const routes = [{ path: "/p/:projectId", element: <UploadPanel projectId="p1" datasetId="d1" /> }];

function server(posted: unknown[]) {
  return async (request: Request) => {
    const url = new URL(request.url);
    if (request.method === "POST" && url.pathname === "/api/v1/projects/p1/datasets/d1/imports/") {
      posted.push(await request.json());
      return json(202, { id: "job-1", dataset_id: "d1", status: "QUEUED", progress: {}, report: {}, error: "" });
    }
    if (url.pathname === "/api/v1/projects/p1/imports/job-1/")
      return json(200, {
        id: "job-1",
        dataset_id: "d1",
        status: "SUCCEEDED",
        progress: {},
        error: "",
        report: { counts: { imported: 400, duplicates: 0, ignored: 0, rejected: 0 }, duplicates: [], ignored: [], rejected: [] },
      });
    if (url.pathname === "/api/v1/projects/") return json(200, []);
    return json(404, { error: { code: "not_found", message: url.pathname } });
  };
}

describe("UploadPanel resumable upload", () => {
  beforeEach(() => {
    tus.uploads.length = 0;
    vi.useFakeTimers({ toFake: ["performance"] });
  });

  it("sends a zip with tus, shows speed and time left, a notice while it resumes, then imports it by id", async () => {
    const posted: unknown[] = [];
    const { container } = renderRoutes(routes, "/p/p1", server(posted) as unknown as typeof globalThis.fetch);
    const zip = new File([new Uint8Array(10_000_000)], "digits.zip", { type: "application/zip" });
    fireEvent.change(container.querySelector("input[type=file]") as HTMLInputElement, { target: { files: [zip] } });
    await userEvent.click(await screen.findByRole("button", { name: "Upload" }));

    await waitFor(() => expect(tus.uploads).toHaveLength(1));
    const upload = tus.uploads[0]!;
    await waitFor(() => expect(upload.started).toBe(true));
    expect(upload.options.endpoint).toBe("/api/v1/uploads/");
    expect(upload.options.metadata).toEqual({ filename: "digits.zip", filetype: "application/zip" });
    expect(screen.getByText("Uploading part 1 of 1")).toBeInTheDocument();

    // 2 MB in the first second: 2.0 MB/s, 8 MB left -> 4 s
    vi.advanceTimersByTime(1000);
    act(() => upload.options.onProgress(2_000_000, 10_000_000));
    expect(screen.getByTestId("upload-rate")).toHaveTextContent("2.0 MB/s · 4 sec left");
    expect(screen.getByRole("progressbar")).toHaveAttribute("aria-valuenow", "20");

    // the connection drops: tus-js-client asks whether to retry; a network error is retried
    let again = false;
    act(() => {
      again = upload.options.onShouldRetry(new Error("network"), 0, {});
    });
    expect(again).toBe(true);
    expect(screen.getByTestId("upload-reconnecting")).toHaveTextContent("Connection lost: resuming from where it stopped");
    expect(screen.queryByTestId("upload-rate")).toBeNull();

    // it resumes from the server's offset (a little behind what was sent) and finishes
    vi.advanceTimersByTime(1000);
    act(() => upload.options.onProgress(1_500_000, 10_000_000));
    expect(screen.queryByTestId("upload-reconnecting")).toBeNull();
    vi.advanceTimersByTime(1000);
    act(() => upload.options.onProgress(10_000_000, 10_000_000));
    upload.url = "http://sampan.test/api/v1/uploads/0f1e2d3c-4b5a-4978-8695-a4b3c2d1e0f9/";
    act(() => upload.options.onSuccess());

    await waitFor(() => expect(posted).toEqual([{ upload_id: "0f1e2d3c-4b5a-4978-8695-a4b3c2d1e0f9" }]));
    expect(await screen.findByTestId("import-job")).toHaveTextContent("Done");
    expect(screen.queryByTestId("pending-files")).toBeNull();
  });

  it("shows the server's error when the upload is refused (a 4xx is not retried)", async () => {
    const { container } = renderRoutes(routes, "/p/p1", server([]) as unknown as typeof globalThis.fetch);
    const zip = new File([new Uint8Array(10)], "big.zip", { type: "application/zip" });
    fireEvent.change(container.querySelector("input[type=file]") as HTMLInputElement, { target: { files: [zip] } });
    await userEvent.click(await screen.findByRole("button", { name: "Upload" }));
    await waitFor(() => expect(tus.uploads[0]?.started).toBe(true));
    const upload = tus.uploads[0]!;
    const refused = Object.assign(new Error("response 413"), {
      originalResponse: {
        getStatus: () => 413,
        getBody: () => JSON.stringify({ error: { code: "too_large", message: "an upload of 10 bytes is too large: the limit is 5 bytes", details: { limit_bytes: 5 } } }),
      },
    });
    expect(upload.options.onShouldRetry(refused, 0, {})).toBe(false);
    act(() => upload.options.onError(refused));
    expect(await screen.findByText(/the limit is 5 bytes/)).toBeInTheDocument();
    // the file stays in the list, to be sent again
    expect(screen.getByTestId("pending-files")).toHaveTextContent("1 file ready");
  });
});

describe("RateMeter", () => {
  it("measures over a sliding window and restarts after a resume from a lower offset", () => {
    const meter = new RateMeter();
    expect(meter.bytesPerSecond()).toBeNull();
    meter.record(0, 0);
    meter.record(5e6, 1000);
    expect(meter.bytesPerSecond()).toBe(5e6);
    expect(meter.secondsLeft(25e6)).toBe(4);
    meter.record(4e6, 1500); // resumed from the server's offset
    expect(meter.bytesPerSecond()).toBeNull();
    meter.record(6e6, 2500);
    expect(meter.bytesPerSecond()).toBe(2e6);
  });

  it("formats durations in the console's languages", () => {
    expect(formatDuration(75, "en")).toBe("1 min 15 sec");
    expect(formatDuration(3720, "en")).toBe("1 hr 2 min");
    expect(formatDuration(4, "en")).toBe("4 sec");
  });
});
