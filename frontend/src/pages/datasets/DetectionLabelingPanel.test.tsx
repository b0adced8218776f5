// The panel's list, keys and autosave against the real API client (fetch answered here). jsdom
// lays nothing out, so the image area measures 0 px and the Annotorious part (BoxAnnotator, drawn
// with the mouse) is not mounted: drawing, moving and resizing are covered by the browser test
// (tests/e2e/test_console_detection.py), not here.
import { act, fireEvent, screen, waitFor, within } from "@testing-library/react";
import userEvent from "@testing-library/user-event";
import { useState } from "react";
import { describe, expect, it, vi } from "vitest";

import type { Dataset, Sample } from "../../api/queries/datasets";
import { json, renderRoutes } from "../../test/render";
import { DetectionLabelingPanel } from "./DetectionLabelingPanel";

const CAR = "11111111-1111-1111-1111-111111111111";
const PERSON = "22222222-2222-2222-2222-222222222222";

const dataset = {
  id: "d1",
  name: "street",
  task_type: "object_detection",
  class_labels: [
    { id: PERSON, name: "person", position: 1 },
    { id: CAR, name: "car", position: 0 },
  ],
} as unknown as Dataset;

function sample(id: string, boxes: [string, number, number, number, number][]): Sample {
  return {
    id,
    dataset_id: "d1",
    original_name: `${id}.png`,
    width: 320,
    height: 240,
    content_sha256: id,
    source: "upload",
    created_at: "2026-11-29T12:00:00Z",
    image_url: `/img/${id}`,
    text: "",
    text_length: 0,
    etag: `etag-${id}`,
    no_objects: false,
    suggestions: [],
    uncertainty: null,
    annotations: boxes.map(([cls, x1, y1, x2, y2], i) => ({
      id: `${id}-${i}`,
      kind: "box",
      class_label: cls === CAR ? "car" : "person",
      class_label_id: cls,
      x1,
      y1,
      x2,
      y2,
    })),
  };
}

const samples = [
  sample("s1", [
    [CAR, 10, 20, 110, 80],
    [PERSON, 200, 40, 250, 180],
  ]),
  sample("s2", []),
  sample("s3", []),
];

interface Put {
  sampleId: string;
  boxes: { x1: number; y1: number; x2: number; y2: number; class_label_id: string }[];
  no_objects?: boolean;
  resolved_suggestion_ids?: string[];
}

function setup(options: { current?: Sample; answer?: (put: Put) => Response; get?: (sampleId: string) => Response } = {}) {
  const puts: Put[] = [];
  const ifMatch: (string | null)[] = []; // the If-Match header of each PUT
  const fetcher = async (request: Request) => {
    const url = new URL(request.url).pathname;
    const read = url.match(/\/samples\/([^/]+)\/$/);
    if (request.method === "GET" && read && options.get) return options.get(read[1]!);
    const match = url.match(/\/samples\/([^/]+)\/boxes\/$/);
    if (request.method !== "PUT" || !match) return json(404, { error: { code: "not_found", message: url } });
    const put = { sampleId: match[1]!, ...((await request.json()) as { boxes: Put["boxes"] }) };
    puts.push(put);
    ifMatch.push(request.headers.get("If-Match"));
    return options.answer?.(put) ?? json(200, sample(put.sampleId, []));
  };
  const onNavigate = vi.fn();
  const onClose = vi.fn();
  function Harness() {
    const [currentId, setCurrentId] = useState((options.current ?? samples[0]!).id);
    const [open, setOpen] = useState(true);
    const current = samples.find((s) => s.id === currentId)!;
    return open ? (
      <DetectionLabelingPanel
        projectId="p1"
        dataset={dataset}
        samples={samples}
        current={current}
        onNavigate={(id) => {
          onNavigate(id);
          setCurrentId(id);
        }}
        onClose={() => {
          onClose();
          setOpen(false);
        }}
      />
    ) : null;
  }
  renderRoutes([{ path: "/", element: <Harness /> }], "/", fetcher as unknown as typeof fetch);
  return { puts, ifMatch, onNavigate, onClose };
}

const rows = () => screen.getAllByTestId("box-row");
const classOf = (row: HTMLElement) => within(row).getByTestId("box-class").textContent;
const selectRow = async (user: ReturnType<typeof userEvent.setup>, index: number) => {
  const button = within(rows()[index]!).getAllByRole("button")[0]!;
  await user.click(button);
  expect(button).toHaveAttribute("aria-pressed", "true");
};

// an antd drawer rendered in jsdom takes 1-5 s a test on a busy 2-core machine (Vitest's default
// limit is 5 s): a limit for a slow machine, not a wait for anything
describe("DetectionLabelingPanel", { timeout: 20_000 }, () => {
  it("lists the stored boxes with their classes, and the classes in position order with their keys", () => {
    setup();
    expect(screen.getByText("2 boxes")).toBeInTheDocument();
    expect(rows().map(classOf)).toEqual(["car", "person"]);
    expect(within(rows()[0]!).getByText("100 × 60 px")).toBeInTheDocument();
    const classes = screen.getByRole("group", { name: "Classes" });
    expect(within(classes).getAllByRole("button").map((b) => b.textContent)).toEqual(["1car", "2person"]);
    // the first class is the one new boxes get
    expect(within(classes).getByRole("button", { name: /car/ })).toHaveAttribute("aria-pressed", "true");
    expect(screen.getByText("1 / 3")).toBeInTheDocument();
  });

  it("gives the selected box the class of a number key and saves the whole list once", async () => {
    const user = userEvent.setup();
    const { puts } = setup();
    await selectRow(user, 0);
    await user.keyboard("2");
    expect(rows().map(classOf)).toEqual(["person", "person"]);
    await waitFor(() => expect(screen.getByTestId("save-status")).toHaveTextContent("Saved"));
    expect(puts).toEqual([
      {
        sampleId: "s1",
        boxes: [
          { x1: 10, y1: 20, x2: 110, y2: 80, class_label_id: PERSON },
          { x1: 200, y1: 40, x2: 250, y2: 180, class_label_id: PERSON },
        ],
      },
    ]);
    // the key also chose the class of the next box
    expect(within(screen.getByRole("group", { name: "Classes" })).getByRole("button", { name: /person/ })).toHaveAttribute("aria-pressed", "true");
  });

  it("deletes the selected box with Delete, brings it back with Ctrl+Z, and saves each", async () => {
    const user = userEvent.setup();
    const { puts } = setup();
    await selectRow(user, 1);
    await user.keyboard("{Delete}");
    expect(rows().map(classOf)).toEqual(["car"]);
    await waitFor(() => expect(puts).toHaveLength(1));
    expect(puts[0]!.boxes.map((b) => b.class_label_id)).toEqual([CAR]);

    await user.keyboard("{Control>}z{/Control}");
    expect(rows().map(classOf)).toEqual(["car", "person"]);
    await waitFor(() => expect(puts).toHaveLength(2));
    expect(puts[1]!.boxes).toEqual([
      { x1: 10, y1: 20, x2: 110, y2: 80, class_label_id: CAR },
      { x1: 200, y1: 40, x2: 250, y2: 180, class_label_id: PERSON },
    ]);
    // Ctrl+Shift+Z redoes the delete
    await user.keyboard("{Control>}{Shift>}z{/Shift}{/Control}");
    expect(rows().map(classOf)).toEqual(["car"]);
    await waitFor(() => expect(puts).toHaveLength(3));
  });

  it("deletes a box with its row's button, and undoes with the Undo button", async () => {
    const user = userEvent.setup();
    const { puts } = setup();
    await user.click(screen.getByRole("button", { name: "Delete box 1 (car)" }));
    expect(rows().map(classOf)).toEqual(["person"]);
    await user.click(screen.getByRole("button", { name: /Undo/ }));
    expect(rows().map(classOf)).toEqual(["car", "person"]);
    // the last list sent is the one on the screen (one PUT when both fell inside one pause)
    await waitFor(() => expect(screen.getByTestId("save-status")).toHaveTextContent("Saved"));
    expect(puts.at(-1)!.boxes.map((b) => b.class_label_id)).toEqual([CAR, PERSON]);
  });

  it("keeps a sample's undo history when the person moves away and comes back", async () => {
    const user = userEvent.setup();
    const { puts } = setup();
    await selectRow(user, 0);
    await user.keyboard("{Delete}");
    await user.keyboard("n");
    expect(screen.getByTestId("detection-sample-name")).toHaveTextContent("s2.png");
    await user.keyboard("p");
    expect(rows().map(classOf)).toEqual(["person"]);
    await user.keyboard("{Control>}z{/Control}");
    expect(rows().map(classOf)).toEqual(["car", "person"]);
    await waitFor(() => expect(puts.at(-1)!.boxes.map((b) => b.class_label_id)).toEqual([CAR, PERSON]));
  });

  it("leaves keys typed into the class name field alone", async () => {
    const user = userEvent.setup();
    const { puts } = setup();
    await selectRow(user, 0);
    await user.type(screen.getByRole("textbox", { name: "Add class" }), "2{Delete}");
    expect(rows().map(classOf)).toEqual(["car", "person"]);
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect(puts).toEqual([]);
  });

  it("deselects with Escape, then closes with a second Escape", async () => {
    const user = userEvent.setup();
    const { onClose } = setup();
    await selectRow(user, 0);
    await user.keyboard("{Escape}");
    expect(within(rows()[0]!).getAllByRole("button")[0]).toHaveAttribute("aria-pressed", "false");
    expect(onClose).not.toHaveBeenCalled();
    await user.keyboard("{Escape}");
    expect(onClose).toHaveBeenCalledTimes(1);
  });

  it("moves through the page with N / P and the arrow keys", async () => {
    const user = userEvent.setup();
    const { onNavigate } = setup({ current: samples[1] });
    await user.keyboard("n");
    expect(screen.getByTestId("detection-sample-name")).toHaveTextContent("s3.png");
    expect(screen.getByText("3 / 3")).toBeInTheDocument();
    await user.keyboard("{ArrowLeft}");
    await user.keyboard("p");
    expect(screen.getByTestId("detection-sample-name")).toHaveTextContent("s1.png");
    await user.keyboard("p"); // the first sample: nowhere to go
    await user.keyboard("{ArrowRight}");
    expect(onNavigate.mock.calls.map((c) => c[0])).toEqual(["s3", "s2", "s1", "s2"]);
  });

  it("sends a pending list at once when the next sample opens, and when the panel closes", async () => {
    // timers stand still (and events are fired directly, as userEvent waits on timers): the
    // debounced save cannot be what sends these lists
    vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout"] });
    try {
      const { puts } = setup();
      const press = (key: string) => fireEvent.keyDown(document.body, { key });
      fireEvent.click(within(rows()[0]!).getAllByRole("button")[0]!);
      press("Delete");
      await act(async () => {});
      expect(puts).toEqual([]); // waiting for the pause
      press("n");
      expect(screen.getByTestId("detection-sample-name")).toHaveTextContent("s2.png");
      await act(async () => {});
      expect(puts).toEqual([{ sampleId: "s1", boxes: [{ x1: 200, y1: 40, x2: 250, y2: 180, class_label_id: PERSON }] }]);

      // back on s1, the list is the one just saved, not the sample's older copy
      press("p");
      expect(rows().map(classOf)).toEqual(["person"]);
      fireEvent.click(within(rows()[0]!).getAllByRole("button")[0]!);
      press("Delete");
      press("Escape"); // deselects
      press("Escape"); // closes
      expect(screen.queryByTestId("detection-panel")).not.toBeInTheDocument();
      await act(async () => {});
      expect(puts).toHaveLength(2);
      expect(puts[1]).toEqual({ sampleId: "s1", boxes: [] });
    } finally {
      vi.useRealTimers();
    }
  });

  it("shows the server's message when a save fails, and Retry sends the list again", async () => {
    const user = userEvent.setup();
    let fail = true;
    const { puts } = setup({
      answer: (put) =>
        fail
          ? json(400, { error: { code: "validation_failed", message: "boxes[0]: (0, 0, 400, 10) is not a box inside the 320x240 image", field: "boxes[0]" } })
          : json(200, sample(put.sampleId, [])),
    });
    await selectRow(user, 0);
    await user.keyboard("2");
    expect(await screen.findByText("boxes[0]: (0, 0, 400, 10) is not a box inside the 320x240 image")).toBeInTheDocument();
    expect(screen.getByTestId("save-status")).toHaveTextContent("Not saved");
    fail = false;
    await user.click(screen.getByRole("button", { name: "Retry" }));
    await waitFor(() => expect(screen.getByTestId("save-status")).toHaveTextContent("Saved"));
    expect(screen.queryByText(/is not a box inside/)).not.toBeInTheDocument();
    expect(puts).toHaveLength(2);
    expect(puts[1]).toEqual(puts[0]);
  });

  it("refuses to write over boxes someone else saved meanwhile (412), and Reload shows theirs", async () => {
    const user = userEvent.setup();
    const theirs = { ...sample("s1", [[PERSON, 5, 5, 60, 60]]), etag: "etag-theirs" };
    const stale = {
      error: {
        code: "precondition_failed",
        message: "these boxes were changed by someone else since you opened them; reload to see them",
        field: "If-Match",
        details: { etag: "etag-theirs" },
      },
    };
    let refuse = true;
    const { puts, ifMatch } = setup({
      answer: (put) => (refuse ? json(412, stale) : json(200, { ...sample(put.sampleId, []), etag: "etag-after-mine" })),
      get: (id) => (id === "s1" ? json(200, theirs) : json(404, {})),
    });
    await selectRow(user, 1);
    await user.keyboard("{Delete}");
    // the save said which boxes it was made from
    await waitFor(() => expect(ifMatch).toEqual(['"etag-s1"']));
    expect(await screen.findByText("these boxes were changed by someone else since you opened them; reload to see them")).toBeInTheDocument();
    expect(screen.getByTestId("save-status")).toHaveTextContent("Not saved");

    refuse = false;
    await user.click(screen.getByRole("button", { name: "Reload" }));
    // the boxes as stored now, and nothing of the refused list is sent again
    await waitFor(() => expect(rows().map(classOf)).toEqual(["person"]));
    expect(screen.queryByText(/changed by someone else/)).not.toBeInTheDocument();
    expect(puts).toHaveLength(1);

    // the next change is made from their boxes, and says so
    await selectRow(user, 0);
    await user.keyboard("1");
    await waitFor(() => expect(screen.getByTestId("save-status")).toHaveTextContent("Saved"));
    expect(ifMatch).toEqual(['"etag-s1"', '"etag-theirs"']);
    expect(puts[1]).toEqual({ sampleId: "s1", boxes: [{ x1: 5, y1: 5, x2: 60, y2: 60, class_label_id: CAR }] });
  });

  it("marks an image without boxes \"no objects\" with its key or its button, and undoes it", async () => {
    const user = userEvent.setup();
    const { puts } = setup({ current: samples[1] });
    expect(screen.getByTestId("no-boxes")).toHaveTextContent("No boxes yet.");
    await user.keyboard("-");
    expect(screen.getByTestId("no-objects")).toHaveAttribute("aria-pressed", "true");
    expect(screen.getByTestId("no-boxes")).toHaveTextContent("Checked: this image holds no objects");
    await waitFor(() => expect(puts).toEqual([{ sampleId: "s2", boxes: [], no_objects: true }]));
    // undone like a box: the mark goes, and the write says so (no_objects left out: false)
    await user.keyboard("{Control>}z{/Control}");
    expect(screen.getByTestId("no-objects")).toHaveAttribute("aria-pressed", "false");
    await waitFor(() => expect(puts).toHaveLength(2));
    expect(puts[1]).toEqual({ sampleId: "s2", boxes: [] });
    await user.click(screen.getByTestId("no-objects"));
    await waitFor(() => expect(puts).toHaveLength(3));
    expect(puts[2]).toEqual({ sampleId: "s2", boxes: [], no_objects: true });
  });

  it("cannot mark an image with boxes \"no objects\"", async () => {
    const user = userEvent.setup();
    const { puts } = setup();
    expect(screen.getByTestId("no-objects")).toBeDisabled();
    await user.keyboard("-");
    expect(rows().map(classOf)).toEqual(["car", "person"]);
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect(puts).toEqual([]);
  });

  it("shows each class's key, a chosen one included, and labels with it", async () => {
    const user = userEvent.setup();
    const keyed = { ...dataset, class_labels: [{ id: PERSON, name: "person", position: 1, hotkey: "e" }, { id: CAR, name: "car", position: 0, hotkey: "" }] } as Dataset;
    const puts: Put[] = [];
    const fetcher = (async (request: Request) => {
      const match = new URL(request.url).pathname.match(/\/samples\/([^/]+)\/boxes\/$/);
      puts.push({ sampleId: match![1]!, ...((await request.json()) as { boxes: Put["boxes"] }) });
      return json(200, sample(match![1]!, []));
    }) as unknown as typeof fetch;
    renderRoutes([{ path: "/", element: <DetectionLabelingPanel projectId="p1" dataset={keyed} samples={samples} current={samples[0]!} onNavigate={() => {}} onClose={() => {}} /> }], "/", fetcher);
    const classes = screen.getByRole("group", { name: "Classes" });
    expect(within(classes).getAllByRole("button").map((b) => b.textContent)).toEqual(["1car", "Eperson"]);
    await selectRow(user, 0);
    await user.keyboard("e");
    expect(rows().map(classOf)).toEqual(["person", "person"]);
    await waitFor(() => expect(puts).toHaveLength(1));
  });

  it("shows a model's suggested boxes apart, Enter accepts them all as boxes, Ctrl+Z takes the accept back", async () => {
    const user = userEvent.setup();
    const suggested: Sample = {
      ...sample("s9", [[CAR, 10, 20, 110, 80]]),
      suggestions: [
        { id: "g1", kind: "box", class_label: "person", class_label_id: PERSON, score: 0.91, x1: 200, y1: 40, x2: 250, y2: 180, model_version_id: "mv" },
        { id: "g2", kind: "box", class_label: "car", class_label_id: CAR, score: 0.55, x1: 5, y1: 150, x2: 60, y2: 200, model_version_id: "mv" },
      ],
    };
    const puts: Put[] = [];
    const fetcher = (async (request: Request) => {
      const match = new URL(request.url).pathname.match(/\/samples\/([^/]+)\/boxes\/$/);
      puts.push({ sampleId: match![1]!, ...((await request.json()) as Omit<Put, "sampleId">) });
      return json(200, { ...suggested, etag: `etag-${puts.length}` });
    }) as unknown as typeof fetch;
    renderRoutes([{ path: "/", element: <DetectionLabelingPanel projectId="p1" dataset={dataset} samples={[suggested]} current={suggested} onNavigate={() => {}} onClose={() => {}} /> }], "/", fetcher);
    // apart from the boxes: the one box is the person's, the two suggestions are the model's
    expect(rows().map(classOf)).toEqual(["car"]);
    const list = screen.getByTestId("suggestions");
    expect(within(list).getByText("Suggested by the model (2)")).toBeInTheDocument();
    expect(within(list).getAllByTestId("suggestion-class").map((t) => t.textContent)).toEqual(["person", "car"]);
    expect(within(list).getAllByTestId("suggestion-row")[0]).toHaveTextContent("91% · 50 × 140 px");

    await user.keyboard("{Enter}");
    expect(rows().map(classOf)).toEqual(["car", "person", "car"]);
    expect(screen.queryByTestId("suggestions")).not.toBeInTheDocument();
    await waitFor(() => expect(puts).toHaveLength(1));
    expect(puts[0]).toEqual({
      sampleId: "s9",
      boxes: [
        { x1: 10, y1: 20, x2: 110, y2: 80, class_label_id: CAR },
        { x1: 200, y1: 40, x2: 250, y2: 180, class_label_id: PERSON },
        { x1: 5, y1: 150, x2: 60, y2: 200, class_label_id: CAR },
      ],
      resolved_suggestion_ids: ["g1", "g2"],
    });

    // an accepted box is a box: a class key relabels it once picked
    await selectRow(user, 2);
    await user.keyboard("2");
    expect(rows().map(classOf)).toEqual(["car", "person", "person"]);
    await user.keyboard("{Control>}z{/Control}");
    await user.keyboard("{Control>}z{/Control}");
    // the accept is undone: the suggestions show again, and the save leaves them alone
    expect(rows().map(classOf)).toEqual(["car"]);
    expect(within(screen.getByTestId("suggestions")).getAllByTestId("suggestion-row")).toHaveLength(2);
    await waitFor(() => expect(puts.at(-1)).toEqual({ sampleId: "s9", boxes: [{ x1: 10, y1: 20, x2: 110, y2: 80, class_label_id: CAR }] }));
  });

  it("accepts or rejects one suggestion with its row's buttons", async () => {
    const user = userEvent.setup();
    const suggested: Sample = {
      ...sample("s8", []),
      suggestions: [
        { id: "g1", kind: "box", class_label: "person", class_label_id: PERSON, score: 0.91, x1: 200, y1: 40, x2: 250, y2: 180, model_version_id: "mv" },
        { id: "g2", kind: "box", class_label: "car", class_label_id: CAR, score: 0.55, x1: 5, y1: 150, x2: 60, y2: 200, model_version_id: "mv" },
      ],
    };
    const puts: Put[] = [];
    const fetcher = (async (request: Request) => {
      puts.push({ sampleId: "s8", ...((await request.json()) as Omit<Put, "sampleId">) });
      return json(200, { ...suggested, etag: `etag-${puts.length}` });
    }) as unknown as typeof fetch;
    renderRoutes([{ path: "/", element: <DetectionLabelingPanel projectId="p1" dataset={dataset} samples={[suggested]} current={suggested} onNavigate={() => {}} onClose={() => {}} /> }], "/", fetcher);
    await user.click(screen.getByRole("button", { name: "Reject car 55%" }));
    await user.click(screen.getByRole("button", { name: "Accept person 91%" }));
    expect(rows().map(classOf)).toEqual(["person"]);
    await waitFor(() => expect(screen.getByTestId("save-status")).toHaveTextContent("Saved"));
    expect(puts.at(-1)).toEqual({ sampleId: "s8", boxes: [{ x1: 200, y1: 40, x2: 250, y2: 180, class_label_id: PERSON }], resolved_suggestion_ids: ["g1", "g2"] });
  });

  it("asks for a class when the dataset has none", async () => {
    const fetcher = (async () => json(404, {})) as unknown as typeof fetch;
    const noClasses = { ...dataset, class_labels: [] } as Dataset;
    renderRoutes(
      [{ path: "/", element: <DetectionLabelingPanel projectId="p1" dataset={noClasses} samples={[samples[1]!]} current={samples[1]!} onNavigate={() => {}} onClose={() => {}} /> }],
      "/",
      fetcher,
    );
    expect(screen.getByText("This dataset has no classes yet. Add one below to draw boxes.")).toBeInTheDocument();
    expect(screen.getByRole("textbox", { name: "Add class" })).toBeInTheDocument();
    await act(async () => {});
  });
});
