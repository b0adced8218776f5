import { act, fireEvent, screen, waitFor } from "@testing-library/react";
import userEvent from "@testing-library/user-event";
import { StrictMode } from "react";
import { afterEach, beforeEach, describe, expect, it } from "vitest";

import type { Dataset, Sample } from "../../api/queries/datasets";
import { json, renderRoutes } from "../../test/render";
import { SampleGallery } from "./SampleGallery";
import { ROW_HEIGHT } from "./SampleGrid";

const TOTAL = 10_000;
const dataset: Dataset = {
  id: "d1",
  name: "digits",
  task_type: "image_classification",
  sample_count: TOTAL,
  class_labels: [{ id: "c0", name: "0", position: 0 }],
} as Dataset;
const version = {
  id: "v1",
  dataset_id: "d1",
  number: 1,
  task_type: "image_classification",
  labels: ["0"],
  seed: 0,
  split_fractions: { val: 0.2, test: 0 },
  digest: "sha256:x",
  flags: [],
  stats: { samples: TOTAL, splits: { train: 8000, val: 2000 }, classes: {} },
  note: "",
  created_at: "2026-11-29T00:00:00Z",
};

function sample(index: number): Sample {
  return {
    id: `s${index}`,
    dataset_id: "d1",
    original_name: `${index}.png`,
    width: 8,
    height: 8,
    content_sha256: String(index),
    source: "upload",
    created_at: "2026-11-29T00:00:00Z",
    image_url: `/img/${index}.png`,
    etag: `etag-${index}`,
    annotations: [],
  };
}

const labeled = (s: Sample): Sample => ({
  ...s,
  annotations: [{ id: `a-${s.id}`, kind: "class", class_label: "0", class_label_id: "c0", x1: null, y1: null, x2: null, y2: null }],
});

/**
 * The samples API over 10,000 samples (2,000 in the validation split of v1), paged as the server
 * does; `isLabeled(i)` says which samples already have a class label.
 */
function samplesApi(requests: URLSearchParams[], isLabeled: (index: number) => boolean = () => false) {
  const labeledNow = new Set<number>();
  const sampleAt = (index: number) => (isLabeled(index) || labeledNow.has(index) ? labeled(sample(index)) : sample(index));
  return async (request: Request) => {
    const url = new URL(request.url);
    const put = /\/samples\/s(\d+)\/label\/$/.exec(url.pathname);
    if (request.method === "PUT" && put) {
      labeledNow.add(Number(put[1]));
      return json(200, sampleAt(Number(put[1])));
    }
    if (url.pathname.endsWith("/datasets/d1/versions/")) return json(200, [version]);
    if (url.pathname.endsWith("/datasets/d1/samples/")) {
      requests.push(url.searchParams);
      const page = Number(url.searchParams.get("page") ?? 1);
      const size = Number(url.searchParams.get("page_size") ?? 100);
      const count = url.searchParams.get("split") === "val" ? 2000 : TOTAL;
      const first = (page - 1) * size;
      const results = Array.from({ length: Math.max(0, Math.min(size, count - first)) }, (_, i) => sampleAt(first + i));
      const next = first + size < count ? `${url.origin}${url.pathname}?page=${page + 1}` : null;
      return json(200, { count, next, previous: null, results });
    }
    return json(404, { error: { code: "not_found", message: url.pathname } });
  };
}

// jsdom does no layout: the grid's scroll element reports the size it would have in a browser
// (900 x 600 px -> 8 columns of >= 104 px with 8 px gaps, about 4 rows in view).
const WIDTH = 900;
const HEIGHT = 600;
const sizeOf = (element: HTMLElement, size: number, original: PropertyDescriptor | undefined) =>
  element.dataset.testid === "gallery" ? size : ((original?.get?.call(element) as number | undefined) ?? 0);
const originals = {
  clientWidth: Object.getOwnPropertyDescriptor(Element.prototype, "clientWidth"),
  clientHeight: Object.getOwnPropertyDescriptor(Element.prototype, "clientHeight"),
  scrollHeight: Object.getOwnPropertyDescriptor(Element.prototype, "scrollHeight"),
};
// the content's height: the height the grid gives its one child, the virtual rows' holder
const contentHeight = (element: HTMLElement) => parseFloat((element.firstElementChild as HTMLElement | null)?.style.height ?? "0");
beforeEach(() => {
  // what a browser's scrollTo does to a scroll element: move now, tell the listeners in a later task
  HTMLElement.prototype.scrollTo = function scrollTo(this: HTMLElement, options?: ScrollToOptions | number) {
    if (typeof options === "object" && options.top !== undefined) this.scrollTop = options.top;
    setTimeout(() => this.dispatchEvent(new Event("scroll")), 0);
  } as typeof HTMLElement.prototype.scrollTo;
  Object.defineProperty(HTMLElement.prototype, "clientWidth", {
    configurable: true,
    get(this: HTMLElement) {
      return sizeOf(this, WIDTH, originals.clientWidth);
    },
  });
  Object.defineProperty(HTMLElement.prototype, "clientHeight", {
    configurable: true,
    get(this: HTMLElement) {
      return sizeOf(this, HEIGHT, originals.clientHeight);
    },
  });
  Object.defineProperty(HTMLElement.prototype, "scrollHeight", {
    configurable: true,
    get(this: HTMLElement) {
      return sizeOf(this, contentHeight(this), originals.scrollHeight);
    },
  });
});
afterEach(() => {
  delete (HTMLElement.prototype as { scrollTo?: unknown }).scrollTo;
  delete (HTMLElement.prototype as { clientWidth?: number }).clientWidth;
  delete (HTMLElement.prototype as { clientHeight?: number }).clientHeight;
  delete (HTMLElement.prototype as { scrollHeight?: number }).scrollHeight;
});

function renderGallery(search = "", isLabeled?: (index: number) => boolean, strict = false) {
  const requests: URLSearchParams[] = [];
  const gallery = <SampleGallery projectId="p1" dataset={dataset} />;
  const view = renderRoutes(
    [{ path: "/projects/:projectId/datasets/:datasetId", element: strict ? <StrictMode>{gallery}</StrictMode> : gallery }],
    `/projects/p1/datasets/d1?tab=samples${search}`,
    samplesApi(requests, isLabeled) as unknown as typeof globalThis.fetch,
  );
  return { ...view, requests };
}

function scrollGalleryTo(top: number) {
  const grid = screen.getByTestId("gallery");
  act(() => {
    grid.scrollTop = top;
    fireEvent.scroll(grid);
  });
}

const pagesAsked = (requests: URLSearchParams[]) => requests.map((r) => r.get("page"));

describe("SampleGallery", () => {
  it("shows 10,000 samples with only the rows in view in the DOM, and loads the next page near the end", async () => {
    const { requests } = renderGallery();

    expect(await screen.findByText("10000 samples")).toBeInTheDocument();
    await waitFor(() => expect(screen.getAllByTestId("sample").length).toBeGreaterThan(0));
    const rendered = screen.getAllByTestId("sample");
    expect(rendered.length).toBeLessThan(200);
    expect(rendered[0]).toHaveAccessibleName("0.png: unlabeled");
    expect(pagesAsked(requests)).toEqual(["1"]);
    expect(requests[0]!.get("page_size")).toBe("500");

    // 500 samples in 8 columns: 63 rows; scroll to the last loaded ones -> page 2 is asked for
    scrollGalleryTo(60 * ROW_HEIGHT - HEIGHT);
    await waitFor(() => expect(pagesAsked(requests)).toEqual(["1", "2"]));
    // page 2's samples render once they scroll into view, and the DOM stays bounded
    scrollGalleryTo(70 * ROW_HEIGHT);
    expect(await screen.findByRole("button", { name: "560.png: unlabeled" })).toBeInTheDocument();
    expect(screen.getAllByTestId("sample").length).toBeLessThan(200);
    expect(screen.queryByRole("button", { name: "0.png: unlabeled" })).not.toBeInTheDocument();
  });

  it("filters on a version's split, in the query and the URL", async () => {
    const { requests, router } = renderGallery();
    expect(await screen.findByText("10000 samples")).toBeInTheDocument();

    const split = screen.getByRole("combobox", { name: "Split" });
    expect(split.closest(".ant-select")).toHaveClass("ant-select-disabled");
    fireEvent.mouseDown(screen.getByRole("combobox", { name: "Version" }));
    fireEvent.click(await screen.findByTitle("Version v1"));
    // a version alone does not filter: the split starts at train
    await waitFor(() => expect(requests.at(-1)?.get("split")).toBe("train"));
    expect(split.closest(".ant-select")).not.toHaveClass("ant-select-disabled");

    fireEvent.mouseDown(split);
    fireEvent.click(await screen.findByTitle("Validation"));
    expect(await screen.findByText("2000 samples")).toBeInTheDocument();
    const last = requests.at(-1)!;
    expect(Object.fromEntries(last)).toEqual({ page: "1", page_size: "500", version: "v1", split: "val" });
    expect(router.state.location.search).toBe("?tab=samples&version=v1&split=val");
  });

  it("takes the filters from the URL, so a reload keeps them", async () => {
    const { requests } = renderGallery("&unlabeled=1&version=v1&split=val");
    expect(await screen.findByText("2000 samples")).toBeInTheDocument();
    expect(Object.fromEntries(requests[0]!)).toEqual({
      page: "1",
      page_size: "500",
      unlabeled: "true",
      version: "v1",
      split: "val",
    });
    expect(screen.getByRole("combobox", { name: "Show" }).closest(".ant-select")).toHaveTextContent("Unlabeled");
  });

  it("labels the current sample when it is scrolled out, and scrolls to the next unlabeled one far below", async () => {
    // only samples 0 and 300 are unlabeled: labeling 0 moves to 300, 37 rows further down
    renderGallery("", (index) => index !== 0 && index !== 300);
    await userEvent.click(await screen.findByRole("button", { name: "0.png: unlabeled" }));
    expect(await screen.findByTestId("labeling-panel")).toHaveTextContent("0.png");
    expect(screen.queryByRole("button", { name: "300.png: unlabeled" })).not.toBeInTheDocument();
    // the current sample scrolls out of the rendered rows: the keys still label it
    scrollGalleryTo(20 * ROW_HEIGHT);
    await waitFor(() => expect(screen.queryByRole("button", { name: "0.png: unlabeled" })).not.toBeInTheDocument());

    await userEvent.keyboard("1");
    expect(await screen.findByRole("button", { name: "300.png: unlabeled" })).toHaveAttribute("aria-pressed", "true");
    expect(screen.getByTestId("labeling-panel")).toHaveTextContent("300.png");
    expect(screen.getAllByTestId("sample").length).toBeLessThan(200);
    expect(screen.queryByRole("button", { name: /^0\.png: / })).not.toBeInTheDocument(); // scrolled out of the DOM
  });

  it("keeps the thumbnails' images through StrictMode's second run of effects (as in `npm run dev`)", async () => {
    renderGallery("", undefined, true);
    await waitFor(() => expect(screen.getAllByTestId("sample").length).toBeGreaterThan(0));
    const images = screen.getByTestId("gallery").querySelectorAll("img");
    expect([...images].filter((img) => !img.getAttribute("src"))).toEqual([]);
    expect(images[0]).toHaveAttribute("src", "/img/0.png");
  });
});
