import { fireEvent, screen, waitFor, within } from "@testing-library/react";
import userEvent from "@testing-library/user-event";
import { describe, expect, it } from "vitest";

import type { Dataset, Sample } from "../../api/queries/datasets";
import { json, renderRoutes } from "../../test/render";
import { cutText, TextSampleList } from "./TextSampleList";

const dataset = {
  id: "d1",
  name: "reviews",
  task_type: "text_classification",
  sample_count: 60,
  suggested_samples: 0,
  class_labels: [
    { id: "c-pos", name: "positive", position: 0, hotkey: "" },
    { id: "c-neg", name: "negative", position: 1, hotkey: "" },
  ],
} as unknown as Dataset;
const CLASS_NAMES: Record<string, string> = { "c-pos": "positive", "c-neg": "negative" };

const LONG = `${"The delivery took three weeks and nobody answered my e-mails. ".repeat(10)}THE END`;
const TEXTS = ["Great product, works as described", "<b>Terrible</b> & broken", LONG, "Asked for a refund twice", "line one\nline two\nline three\nline four"];

/** The samples API over 60 texts (pages of the size asked), their labels, and every request. */
function textApi() {
  const labels = new Map<string, string | null>();
  const revisions = new Map<string, number>();
  const queries: Record<string, string>[] = [];
  const puts: { id: string; classLabelId: string | null; ifMatch: string | null }[] = [];
  const bulks: { sample_ids: string[]; class_label_id: string | null }[] = [];
  const ids = Array.from({ length: 60 }, (_, i) => `t${i}`);
  const textOf = (id: string) => TEXTS[Number(id.slice(1))] ?? `Review number ${id.slice(1)}`;
  const sampleOf = (id: string): Sample => {
    const label = labels.get(id) ?? null;
    const text = textOf(id);
    return {
      id,
      dataset_id: "d1",
      original_name: `reviews.csv:${Number(id.slice(1)) + 2}`,
      width: 0,
      height: 0,
      content_sha256: id,
      source: "upload",
      created_at: "2026-12-01T10:00:00Z",
      image_url: null,
      text,
      text_length: text.length,
      etag: `etag-${id}-${revisions.get(id) ?? 0}`,
      no_objects: false,
      suggestions: [],
      uncertainty: null,
      annotations: label ? [{ id: `a-${id}`, kind: "class", class_label: CLASS_NAMES[label]!, class_label_id: label, x1: null, y1: null, x2: null, y2: null }] : [],
    } as Sample;
  };
  const setLabel = (id: string, label: string | null) => {
    labels.set(id, label);
    revisions.set(id, (revisions.get(id) ?? 0) + 1);
  };
  const fetch = async (request: Request) => {
    const url = new URL(request.url);
    const put = /^\/api\/v1\/projects\/p1\/samples\/(t\d+)\/label\/$/.exec(url.pathname);
    if (request.method === "PUT" && put) {
      const id = put[1]!;
      const body = (await request.json()) as { class_label_id: string | null };
      puts.push({ id, classLabelId: body.class_label_id, ifMatch: request.headers.get("If-Match") });
      setLabel(id, body.class_label_id);
      return json(200, sampleOf(id));
    }
    if (request.method === "POST" && url.pathname === "/api/v1/projects/p1/datasets/d1/labels/bulk/") {
      const body = (await request.json()) as { sample_ids: string[]; class_label_id: string | null };
      bulks.push(body);
      for (const id of body.sample_ids) setLabel(id, body.class_label_id);
      return json(200, { updated: body.sample_ids.length });
    }
    if (url.pathname === "/api/v1/projects/p1/datasets/d1/samples/") {
      const q = Object.fromEntries(url.searchParams);
      queries.push(q);
      const search = (q.search ?? "").toLowerCase();
      const matching = ids.filter(
        (id) =>
          (!search || textOf(id).toLowerCase().includes(search)) &&
          (q.unlabeled !== "true" || !labels.get(id)) &&
          (!q.label || CLASS_NAMES[labels.get(id) ?? ""] === q.label),
      );
      const page = Number(q.page ?? 1);
      const size = Number(q.page_size ?? 50);
      const results = matching.slice((page - 1) * size, page * size).map(sampleOf);
      return json(200, { count: matching.length, next: page * size < matching.length ? "next" : null, previous: null, results });
    }
    return json(404, { error: { code: "not_found", message: url.pathname } });
  };
  return { fetch: fetch as unknown as typeof globalThis.fetch, queries, puts, bulks };
}

function renderList() {
  const api = textApi();
  const view = renderRoutes(
    [{ path: "/projects/:projectId/datasets/:datasetId", element: <TextSampleList projectId="p1" dataset={dataset} /> }],
    "/projects/p1/datasets/d1?tab=samples",
    api.fetch,
  );
  return { ...api, ...view };
}

const row = (id: string) => document.querySelector(`tr[data-row-key="${id}"]`) as HTMLElement;
const currentRow = () => document.querySelector('tr[aria-current="true"]')?.getAttribute("data-row-key");
const labelOf = (id: string) => within(row(id)).getByTestId("text-label").textContent;

describe("TextSampleList", () => {
  it("shows each text as text with its file and line, long ones cut with Show all", async () => {
    renderList();
    await waitFor(() => expect(row("t0")).toBeTruthy());
    expect(within(row("t0")).getByTestId("text-content")).toHaveTextContent("Great product, works as described");
    expect(within(row("t0")).getByTestId("text-name")).toHaveTextContent("reviews.csv:2");
    expect(labelOf("t0")).toBe("unlabeled");
    // markup is text, never HTML
    expect(within(row("t1")).getByText("<b>Terrible</b> & broken")).toBeInTheDocument();
    expect(row("t1").querySelector("b")).toBeNull();
    // a long text: its start and an ellipsis, whole after "Show all"
    const long = within(row("t2")).getByTestId("text-content");
    expect(long.textContent!.endsWith("…")).toBe(true);
    expect(long).not.toHaveTextContent("THE END");
    await userEvent.click(within(row("t2")).getByRole("button", { name: "Show all" }));
    expect(within(row("t2")).getByTestId("text-content")).toHaveTextContent("THE END");
    expect(within(row("t2")).getByRole("button", { name: "Show less" })).toBeInTheDocument();
    // more than three lines is cut too
    expect(within(row("t4")).getByTestId("text-content").textContent).toBe("line one\nline two\nline three…");
    // each class shows its key
    const classes = screen.getByRole("group", { name: "Label the current text" });
    expect(within(classes).getAllByTestId("class-key").map((k) => k.textContent)).toEqual(["1", "2"]);
  });

  it("moves with j / k and the arrows, labels the current text with a class's key, moves on, and Ctrl+Z undoes", async () => {
    const { puts } = renderList();
    await waitFor(() => expect(currentRow()).toBe("t0"));
    await userEvent.keyboard("j");
    expect(currentRow()).toBe("t1");
    await userEvent.keyboard("{ArrowDown}{ArrowDown}");
    expect(currentRow()).toBe("t3");
    await userEvent.keyboard("k");
    expect(currentRow()).toBe("t2");
    await userEvent.keyboard("{ArrowUp}");
    expect(currentRow()).toBe("t1");

    // 2 is "negative"'s key: t1 is labeled (If-Match: the etag it was read with), t2 is next
    await userEvent.keyboard("2");
    await waitFor(() => expect(puts).toEqual([{ id: "t1", classLabelId: "c-neg", ifMatch: '"etag-t1-0"' }]));
    await waitFor(() => expect(currentRow()).toBe("t2"));
    await waitFor(() => expect(labelOf("t1")).toBe("negative"));

    // t2 labeled, then Ctrl+Z takes t2's label back and shows it
    await userEvent.keyboard("1");
    await waitFor(() => expect(currentRow()).toBe("t3"));
    await userEvent.keyboard("{Control>}z{/Control}");
    await waitFor(() => expect(puts.at(-1)).toEqual({ id: "t2", classLabelId: null, ifMatch: '"etag-t2-1"' }));
    await waitFor(() => expect(currentRow()).toBe("t2"));
    await waitFor(() => expect(labelOf("t2")).toBe("unlabeled"));
    expect(labelOf("t1")).toBe("negative");
    // Ctrl+Shift+Z redoes it
    await userEvent.keyboard("{Control>}{Shift>}z{/Shift}{/Control}");
    await waitFor(() => expect(puts.at(-1)).toEqual({ id: "t2", classLabelId: "c-pos", ifMatch: '"etag-t2-2"' }));
    await waitFor(() => expect(labelOf("t2")).toBe("positive"));
  });

  it("moves to the next page past the last row", async () => {
    const { queries } = renderList();
    await waitFor(() => expect(currentRow()).toBe("t0"));
    fireEvent.click(within(row("t49")).getByTestId("text-content"));
    expect(currentRow()).toBe("t49");
    await userEvent.keyboard("j");
    await waitFor(() => expect(currentRow()).toBe("t50"));
    expect(queries.at(-1)).toMatchObject({ page: "2", page_size: "50" });
    await userEvent.keyboard("k");
    await waitFor(() => expect(currentRow()).toBe("t49"));
  });

  it("labels the selected texts in bulk, and Ctrl+Z undoes the bulk label", async () => {
    const { bulks } = renderList();
    await waitFor(() => expect(row("t3")).toBeTruthy());
    await userEvent.click(within(row("t3")).getByRole("checkbox"));
    await userEvent.click(within(row("t5")).getByRole("checkbox"));
    expect(screen.getByTestId("text-selection")).toHaveTextContent("2 selected");
    await userEvent.hover(screen.getByRole("button", { name: "Label selected as…" }));
    await userEvent.click(await screen.findByText("negative", { selector: ".ant-dropdown-menu-title-content" }));
    await waitFor(() => expect(bulks).toEqual([{ sample_ids: ["t3", "t5"], class_label_id: "c-neg" }]));
    expect(await screen.findByText("2 texts labeled “negative”")).toBeInTheDocument();
    await waitFor(() => expect(labelOf("t5")).toBe("negative"));
    expect(screen.queryByTestId("text-selection")).toBeNull();

    await userEvent.keyboard("{Control>}z{/Control}");
    await waitFor(() => expect(bulks.at(-1)).toEqual({ sample_ids: ["t3", "t5"], class_label_id: null }));
    await waitFor(() => expect(labelOf("t3")).toBe("unlabeled"));
  });

  it("searches with the API's search after typing stops, and filters unlabeled texts", async () => {
    const { queries, puts } = renderList();
    await waitFor(() => expect(row("t0")).toBeTruthy());
    expect(queries[0]).toEqual({ page: "1", page_size: "50" });
    const box = screen.getByRole("textbox", { name: "Search texts and file names" });
    await userEvent.type(box, "REFUND");
    await waitFor(() => expect(row("t0")).toBeFalsy());
    expect(row("t3")).toBeTruthy();
    expect(screen.getByText("1 text")).toBeInTheDocument();
    // one request for the whole word, not one per key
    expect(queries.filter((q) => q.search).map((q) => q.search)).toEqual(["REFUND"]);
    // typing in the box labels nothing: "1" is a class's key
    await userEvent.type(box, " 1");
    await waitFor(() => expect(queries.at(-1)?.search).toBe("REFUND 1"));
    expect(puts).toEqual([]);

    await userEvent.clear(box);
    await waitFor(() => expect(row("t0")).toBeTruthy());
    fireEvent.mouseDown(screen.getByRole("combobox", { name: "Show" }));
    fireEvent.click(await screen.findByTitle("Unlabeled"));
    await waitFor(() => expect(queries.at(-1)).toEqual({ page: "1", page_size: "50", unlabeled: "true" }));
  });
});

describe("cutText", () => {
  it("keeps short texts whole and never cuts an emoji in half", () => {
    expect(cutText("short")).toBeNull();
    const emoji = `${"a".repeat(279)}😀😀`;
    expect(cutText(emoji)).toBe(`${"a".repeat(279)}…`);
  });
});
