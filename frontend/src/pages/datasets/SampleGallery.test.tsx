import { act, cleanup, fireEvent, screen, waitFor, within } from "@testing-library/react";
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
    text: "",
    text_length: 0,
    etag: `etag-${index}`,
    no_objects: false,
    suggestions: [],
    uncertainty: null,
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

    await userEvent.keyboard("0"); // the class named "0" has key 0 (hotkeys.ts)
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

// ------------------------------------------------------------------ labeling keys, undo, 412
const DIGITS: Dataset = {
  id: "d2",
  name: "digits",
  task_type: "image_classification",
  sample_count: 3,
  class_labels: Array.from({ length: 10 }, (_, d) => ({ id: `c${d}`, name: String(d), position: d, hotkey: "" })),
} as Dataset;

interface LabelPut {
  sampleId: string;
  classLabelId: string | null;
  ifMatch: string | null;
}

/**
 * A small labeling server: samples a, b, c (unlabeled), each PUT of a label answers the sample
 * with a new etag; `refuse` makes the next label PUT a 412.
 */
function labelingApi(dataset: Dataset, suggested = new Map<string, [string, number]>()) {
  const labels = new Map<string, string | null>([["a", null], ["b", null], ["c", null]]);
  const accepts: LabelPut[] = [];
  const revisions = new Map<string, number>();
  const puts: LabelPut[] = [];
  const state = { refuse: false, listRequests: 0, hotkeyBodies: [] as unknown[], hotkeyAnswer: null as Response | null };
  const current = (id: string): Sample => {
    const label = labels.get(id) ?? null;
    const cls = dataset.class_labels.find((c) => c.id === label);
    const offered = suggested.get(id);
    const offeredClass = dataset.class_labels.find((c) => c.id === offered?.[0]);
    return {
      ...sample(0),
      id,
      dataset_id: dataset.id,
      original_name: `${id}.png`,
      image_url: `/img/${id}.png`,
      etag: `etag-${id}-${revisions.get(id) ?? 0}`,
      annotations: cls ? [{ id: `a-${id}`, kind: "class", class_label: cls.name, class_label_id: cls.id, x1: null, y1: null, x2: null, y2: null }] : [],
      suggestions:
        offered && offeredClass
          ? [{ id: `s-${id}`, kind: "class", class_label: offeredClass.name, class_label_id: offeredClass.id, score: offered[1], x1: null, y1: null, x2: null, y2: null, model_version_id: "mv" }]
          : [],
    };
  };
  const fetcher = async (request: Request) => {
    const url = new URL(request.url);
    const put = /\/samples\/(\w+)\/label\/$/.exec(url.pathname);
    if (request.method === "PUT" && put) {
      const id = put[1]!;
      const body = (await request.json()) as { class_label_id: string | null };
      puts.push({ sampleId: id, classLabelId: body.class_label_id, ifMatch: request.headers.get("If-Match") });
      if (state.refuse) {
        state.refuse = false;
        return json(412, {
          error: {
            code: "precondition_failed",
            message: "this sample's label was changed by someone else since you opened it; reload to see it",
            field: "If-Match",
          },
        });
      }
      labels.set(id, body.class_label_id);
      if (body.class_label_id !== null) suggested.delete(id); // a person's label replaces it
      revisions.set(id, (revisions.get(id) ?? 0) + 1);
      return json(200, current(id));
    }
    const accept = /\/samples\/(\w+)\/suggestions\/accept\/$/.exec(url.pathname);
    if (request.method === "POST" && accept) {
      const id = accept[1]!;
      const body = (await request.json()) as { suggestion_ids: string[] };
      const offered = suggested.get(id)!;
      accepts.push({ sampleId: id, classLabelId: body.suggestion_ids.join(","), ifMatch: request.headers.get("If-Match") });
      labels.set(id, offered[0]);
      suggested.delete(id);
      revisions.set(id, (revisions.get(id) ?? 0) + 1);
      return json(200, current(id));
    }
    if (request.method === "PUT" && url.pathname.endsWith("/class-labels/hotkeys/")) {
      state.hotkeyBodies.push(await request.json());
      return state.hotkeyAnswer ?? json(200, dataset.class_labels);
    }
    if (url.pathname.endsWith("/versions/")) return json(200, []);
    if (url.pathname.endsWith("/samples/")) {
      state.listRequests += 1;
      const results = ["a", "b", "c"].map(current);
      return json(200, { count: results.length, next: null, previous: null, results });
    }
    return json(404, { error: { code: "not_found", message: url.pathname } });
  };
  return { fetcher: fetcher as unknown as typeof globalThis.fetch, puts, accepts, state };
}

function renderLabeling(dataset: Dataset, suggested?: Map<string, [string, number]>) {
  const server = labelingApi(dataset, suggested);
  renderRoutes(
    [{ path: "/projects/:projectId/datasets/:datasetId", element: <SampleGallery projectId="p1" dataset={dataset} /> }],
    `/projects/p1/datasets/${dataset.id}?tab=samples`,
    server.fetcher,
  );
  return server;
}

const panel = () => screen.getByTestId("labeling-panel");

describe("labeling keys and undo", { timeout: 20_000 }, () => {
  it("labels a digit with its own key (3 -> \"3\"), and Ctrl+Z puts the earlier label back on the server", async () => {
    const { puts } = renderLabeling(DIGITS);
    await userEvent.click(await screen.findByRole("button", { name: "a.png: unlabeled" }));
    // every class shows its key on its button: the digit itself
    const classes = within(panel()).getByRole("group", { name: "Classes" });
    expect(within(classes).getAllByRole("button").map((b) => b.textContent)).toEqual(["00", "11", "22", "33", "44", "55", "66", "77", "88", "99"]);

    await userEvent.keyboard("3");
    await waitFor(() => expect(puts).toHaveLength(1));
    // the label "3" (the bug: key 3 saved "2"), sent with the etag the gallery read
    expect(puts[0]).toEqual({ sampleId: "a", classLabelId: "c3", ifMatch: '"etag-a-0"' });
    expect(await screen.findByText("Saved: 3")).toBeInTheDocument();
    await waitFor(() => expect(panel()).toHaveTextContent("b.png"));

    // undo: a's label is cleared on the server, from the state the label left it in, and a shows
    await userEvent.keyboard("{Control>}z{/Control}");
    await waitFor(() => expect(puts).toHaveLength(2));
    expect(puts[1]).toEqual({ sampleId: "a", classLabelId: null, ifMatch: '"etag-a-1"' });
    await waitFor(() => expect(panel()).toHaveTextContent("a.png"));
    await waitFor(() => expect(panel()).toHaveTextContent("Current label: none"));

    // redo with Ctrl+Shift+Z, then the Undo button does the same as Ctrl+Z
    await userEvent.keyboard("{Control>}{Shift>}z{/Shift}{/Control}");
    await waitFor(() => expect(puts).toHaveLength(3));
    expect(puts[2]).toEqual({ sampleId: "a", classLabelId: "c3", ifMatch: '"etag-a-2"' });
    // a redone label moves on to the next unlabeled sample, as the label did
    await waitFor(() => expect(panel()).toHaveTextContent("b.png"));
    await waitFor(() => expect(within(panel()).getByRole("button", { name: /Undo/ })).toBeEnabled());
    await userEvent.click(within(panel()).getByRole("button", { name: /Undo/ }));
    await waitFor(() => expect(puts).toHaveLength(4));
    expect(puts[3]).toEqual({ sampleId: "a", classLabelId: null, ifMatch: '"etag-a-3"' });
  });

  it("undoes a relabel to the label before, not to none", async () => {
    const { puts } = renderLabeling(DIGITS);
    await userEvent.click(await screen.findByRole("button", { name: "a.png: unlabeled" }));
    await userEvent.keyboard("8");
    await waitFor(() => expect(panel()).toHaveTextContent("b.png"));
    await userEvent.click(screen.getByRole("button", { name: "a.png: 8" }));
    await userEvent.keyboard("3");
    await waitFor(() => expect(puts).toHaveLength(2));
    await userEvent.keyboard("{Control>}z{/Control}");
    await waitFor(() => expect(puts).toHaveLength(3));
    expect(puts[2]).toEqual({ sampleId: "a", classLabelId: "c8", ifMatch: '"etag-a-2"' });
  });

  it("gives cat and dog the keys 1 and 2, and a chosen key wins (it comes with the dataset, so it survives a reload)", async () => {
    const pets = {
      ...DIGITS,
      id: "d3",
      class_labels: [
        { id: "cat", name: "cat", position: 0, hotkey: "" },
        { id: "dog", name: "dog", position: 1, hotkey: "" },
      ],
    } as Dataset;
    const first = renderLabeling(pets);
    await userEvent.click(await screen.findByRole("button", { name: "a.png: unlabeled" }));
    const buttons = () => within(within(panel()).getByRole("group", { name: "Classes" })).getAllByRole("button").map((b) => b.textContent);
    expect(buttons()).toEqual(["1cat", "2dog"]);
    await userEvent.keyboard("2");
    await waitFor(() => expect(first.puts.at(-1)?.classLabelId).toBe("dog"));
    cleanup();

    const chosen = { ...pets, class_labels: [{ ...pets.class_labels[0]!, hotkey: "c" }, pets.class_labels[1]!] } as Dataset;
    const second = renderLabeling(chosen);
    await userEvent.click(await screen.findByRole("button", { name: "b.png: unlabeled" }));
    expect(buttons()).toEqual(["Ccat", "1dog"]);
    await userEvent.keyboard("c");
    await waitFor(() => expect(second.puts.at(-1)).toEqual({ sampleId: "b", classLabelId: "cat", ifMatch: '"etag-b-0"' }));
  });

  it("chooses keys in the key editor, with the server's refusal on the class it names", async () => {
    const pets = {
      ...DIGITS,
      id: "d3",
      class_labels: [
        { id: "cat", name: "cat", position: 0, hotkey: "" },
        { id: "dog", name: "dog", position: 1, hotkey: "" },
      ],
    } as Dataset;
    const { state } = renderLabeling(pets);
    await userEvent.click(await screen.findByRole("button", { name: "a.png: unlabeled" }));
    await userEvent.click(within(panel()).getByRole("button", { name: /Change keys/ }));
    // (jsdom's ids are all "test-id" here, so the dialog is found by role, not by its title)
    const dialog = await screen.findByRole("dialog");
    expect(dialog).toHaveTextContent("Labeling keys");
    await userEvent.type(within(dialog).getByRole("textbox", { name: "Key of cat" }), "c");
    await userEvent.type(within(dialog).getByRole("textbox", { name: "Key of dog" }), "n");
    // the dialog shows the key each class will have: the typed "n" is not a key, dog keeps 1
    expect(within(dialog).getAllByTestId("effective-key").map((k) => k.textContent)).toEqual(["C", "1"]);
    state.hotkeyAnswer = json(400, {
      error: {
        code: "invalid",
        message: "hotkeys[1].hotkey: 'n' is a labeling shortcut (N / P: next and previous sample); choose another key",
        field: "hotkeys[1].hotkey",
      },
    });
    await userEvent.click(within(dialog).getByRole("button", { name: "Save keys" }));
    expect(await within(dialog).findByRole("alert")).toHaveTextContent("'n' is a labeling shortcut");
    expect(state.hotkeyBodies).toEqual([
      {
        hotkeys: [
          { class_label_id: "cat", hotkey: "c" },
          { class_label_id: "dog", hotkey: "n" },
        ],
      },
    ]);
    state.hotkeyAnswer = null;
    const dog = within(dialog).getByRole("textbox", { name: "Key of dog" });
    await userEvent.clear(dog);
    await userEvent.type(dog, "d");
    await userEvent.click(within(dialog).getByRole("button", { name: "Save keys" }));
    await waitFor(() => expect(screen.queryByRole("dialog")).not.toBeInTheDocument());
    expect(state.hotkeyBodies.at(-1)).toEqual({ hotkeys: [{ class_label_id: "cat", hotkey: "c" }, { class_label_id: "dog", hotkey: "d" }] });
  });

  it("says so when someone else labeled the sample meanwhile (412), and Reload reads the samples again", async () => {
    const { state } = renderLabeling(DIGITS);
    await userEvent.click(await screen.findByRole("button", { name: "a.png: unlabeled" }));
    state.refuse = true;
    await userEvent.keyboard("5");
    const stale = await screen.findByTestId("stale-label");
    expect(stale).toHaveTextContent("this sample's label was changed by someone else since you opened it; reload to see it");
    expect(panel()).toHaveTextContent("a.png"); // it stays on the sample
    const before = state.listRequests;
    await userEvent.click(within(stale).getByRole("button", { name: "Reload" }));
    await waitFor(() => expect(state.listRequests).toBeGreaterThan(before));
  });
});

describe("detection thumbnails", () => {
  it("draw each sample's boxes over its image, in the class's colour, from the list the API gave", async () => {
    const street = {
      id: "d4",
      name: "street",
      task_type: "object_detection",
      sample_count: 2,
      class_labels: [
        { id: "car", name: "car", position: 0, hotkey: "" },
        { id: "person", name: "person", position: 1, hotkey: "" },
      ],
    } as Dataset;
    const box = (id: string, cls: string, x1: number, y1: number, x2: number, y2: number) => ({ id, kind: "box", class_label: cls, class_label_id: cls, x1, y1, x2, y2 });
    const withBoxes: Sample = { ...sample(1), width: 320, height: 240, annotations: [box("b1", "car", 40, 120, 160, 190), box("b2", "person", 220, 40, 270, 180)] };
    const empty: Sample = { ...sample(2), width: 320, height: 240 };
    const requests: string[] = [];
    const fetcher = (async (request: Request) => {
      const url = new URL(request.url);
      requests.push(url.pathname);
      if (url.pathname.endsWith("/versions/")) return json(200, []);
      if (!url.pathname.endsWith("/samples/")) return json(404, { error: { code: "not_found", message: url.pathname } });
      return json(200, { count: 2, next: null, previous: null, results: [withBoxes, empty] });
    }) as unknown as typeof globalThis.fetch;
    renderRoutes(
      [{ path: "/projects/:projectId/datasets/:datasetId", element: <SampleGallery projectId="p1" dataset={street} /> }],
      "/projects/p1/datasets/d4?tab=samples",
      fetcher,
    );
    const thumbnail = await screen.findByRole("button", { name: "1.png: 2 boxes" });
    const overlay = within(thumbnail).getByTestId("thumbnail-boxes");
    // the viewBox is the image in px: the boxes are the stored xyxy, as they lie on the image
    expect(overlay.getAttribute("viewBox")).toBe("0 0 320 240");
    const rects = [...overlay.querySelectorAll("rect")].map((r) => ["x", "y", "width", "height", "stroke"].map((a) => r.getAttribute(a)));
    expect(rects).toEqual([
      ["40", "120", "120", "70", "#1677ff"],
      ["220", "40", "50", "140", "#fa541c"],
    ]);
    expect(within(screen.getByRole("button", { name: "2.png: unlabeled" })).queryByTestId("thumbnail-boxes")).toBeNull();
    // the boxes came with the page: no request per thumbnail
    expect(requests.filter((p) => p.includes("/samples/"))).toHaveLength(1);
  });
});

describe("background images", () => {
  it("tell \"no objects\" apart from unlabeled: on the thumbnail, and as a filter of their own", async () => {
    const street = {
      id: "d5",
      name: "street",
      task_type: "object_detection",
      sample_count: 2,
      class_labels: [{ id: "car", name: "car", position: 0, hotkey: "" }],
    } as Dataset;
    const background: Sample = { ...sample(1), width: 320, height: 240, no_objects: true };
    const unlabeled: Sample = { ...sample(2), width: 320, height: 240 };
    const queries: Record<string, string>[] = [];
    const fetcher = (async (request: Request) => {
      const url = new URL(request.url);
      if (url.pathname.endsWith("/versions/")) return json(200, []);
      if (!url.pathname.endsWith("/samples/")) return json(404, { error: { code: "not_found", message: url.pathname } });
      queries.push(Object.fromEntries(url.searchParams));
      const results = url.searchParams.get("no_objects") === "true" ? [background] : [background, unlabeled];
      return json(200, { count: results.length, next: null, previous: null, results });
    }) as unknown as typeof globalThis.fetch;
    const { router } = renderRoutes(
      [{ path: "/projects/:projectId/datasets/:datasetId", element: <SampleGallery projectId="p1" dataset={street} /> }],
      "/projects/p1/datasets/d5?tab=samples",
      fetcher,
    );
    expect(await screen.findByRole("button", { name: "1.png: no objects" })).toBeInTheDocument();
    expect(screen.getByRole("button", { name: "2.png: unlabeled" })).toBeInTheDocument();

    fireEvent.mouseDown(screen.getByRole("combobox", { name: "Show" }));
    fireEvent.click(await screen.findByTitle("No objects (background images)"));
    await waitFor(() => expect(queries.at(-1)).toEqual({ page: "1", page_size: "500", no_objects: "true" }));
    expect(router.state.location.search).toBe("?tab=samples&no_objects=1");
    await waitFor(() => expect(screen.queryByRole("button", { name: "2.png: unlabeled" })).not.toBeInTheDocument());
  });
});

describe("a model's class suggestion", { timeout: 20_000 }, () => {
  it("shows as a chip, Enter accepts it with If-Match, and Ctrl+Z takes the label back", async () => {
    const { puts, accepts } = renderLabeling(DIGITS, new Map([["a", ["c7", 0.871]]]));
    // on the thumbnail: the suggestion, not a label
    await userEvent.click(await screen.findByRole("button", { name: "a.png: 7? 87%" }));
    expect(within(panel()).getByTestId("suggestion-chip")).toHaveTextContent("Suggested: 7 87%");
    expect(within(panel()).getByText("Current label:", { exact: false })).toHaveTextContent("none");

    await userEvent.keyboard("{Enter}");
    await waitFor(() => expect(accepts).toEqual([{ sampleId: "a", classLabelId: "s-a", ifMatch: '"etag-a-0"' }]));
    expect(await screen.findByText("Accepted: 7")).toBeInTheDocument();
    expect(puts).toEqual([]); // accepted, not labeled by a key
    await waitFor(() => expect(panel()).toHaveTextContent("b.png")); // moves on as a label does
    expect(screen.getByRole("button", { name: "a.png: 7" })).toBeInTheDocument();

    await userEvent.keyboard("{Control>}z{/Control}");
    await waitFor(() => expect(puts).toEqual([{ sampleId: "a", classLabelId: null, ifMatch: '"etag-a-1"' }]));
    await waitFor(() => expect(panel()).toHaveTextContent("a.png"));
  });

  it("gives way to a class key: the person's label replaces the suggestion", async () => {
    const { puts, accepts } = renderLabeling(DIGITS, new Map([["a", ["c7", 0.6]]]));
    await userEvent.click(await screen.findByRole("button", { name: "a.png: 7? 60%" }));
    await userEvent.keyboard("2");
    await waitFor(() => expect(puts).toEqual([{ sampleId: "a", classLabelId: "c2", ifMatch: '"etag-a-0"' }]));
    expect(accepts).toEqual([]);
    expect(await screen.findByRole("button", { name: "a.png: 2" })).toBeInTheDocument();
  });
});

describe("after pre-labeling", () => {
  it("sorts most uncertain first by default, draws suggested boxes dashed, and keeps another order chosen", async () => {
    const street = {
      id: "d6",
      name: "street",
      task_type: "object_detection",
      sample_count: 1,
      suggested_samples: 1,
      class_labels: [{ id: "car", name: "car", position: 0, hotkey: "" }],
    } as Dataset;
    const suggested: Sample = {
      ...sample(1),
      width: 320,
      height: 240,
      uncertainty: 0.4,
      annotations: [{ id: "b1", kind: "box", class_label: "car", class_label_id: "car", x1: 40, y1: 120, x2: 160, y2: 190 }],
      suggestions: [{ id: "g1", kind: "box", class_label: "car", class_label_id: "car", score: 0.6, x1: 200, y1: 20, x2: 300, y2: 100, model_version_id: "m" }],
    };
    const queries: Record<string, string>[] = [];
    const fetcher = (async (request: Request) => {
      const url = new URL(request.url);
      if (url.pathname.endsWith("/versions/")) return json(200, []);
      if (!url.pathname.endsWith("/samples/")) return json(404, { error: { code: "not_found", message: url.pathname } });
      queries.push(Object.fromEntries(url.searchParams));
      return json(200, { count: 1, next: null, previous: null, results: [suggested] });
    }) as unknown as typeof globalThis.fetch;
    const { router } = renderRoutes(
      [{ path: "/projects/:projectId/datasets/:datasetId", element: <SampleGallery projectId="p1" dataset={street} /> }],
      "/projects/p1/datasets/d6?tab=samples",
      fetcher,
    );
    const thumbnail = await screen.findByRole("button", { name: "1.png: 1 box" });
    expect(queries[0]).toEqual({ page: "1", page_size: "500", ordering: "-uncertainty" });
    const rects = [...within(thumbnail).getByTestId("thumbnail-boxes").querySelectorAll("rect")];
    // the person's box solid, the model's dashed (data-suggested, drawn with a dash array)
    expect(rects.map((r) => [r.getAttribute("x"), r.getAttribute("data-suggested")])).toEqual([
      ["40", null],
      ["200", "true"],
    ]);

    fireEvent.mouseDown(screen.getByRole("combobox", { name: "Sort" }));
    fireEvent.click(await screen.findByTitle("Oldest first"));
    await waitFor(() => expect(queries.at(-1)).toEqual({ page: "1", page_size: "500" }));
    expect(router.state.location.search).toBe("?tab=samples&order=oldest");
  });
});
