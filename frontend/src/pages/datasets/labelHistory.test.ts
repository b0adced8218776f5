import { describe, expect, it } from "vitest";

import {
  emptyLabelHistory,
  labelHistoryRecord,
  labelHistoryRedone,
  labelHistoryUndone,
  labelWrites,
  nextRedo,
  nextUndo,
  type LabelStep,
} from "./labelHistory";

const THREE = "class-3";
const EIGHT = "class-8";

describe("label history", () => {
  it("undoes a label back to none with If-Match of the labeled state, then redoes it", () => {
    const step: LabelStep = { changes: [{ sampleId: "s1", before: null, after: THREE, etag: "after-3" }] };
    let h = labelHistoryRecord(emptyLabelHistory, step);
    const undo = nextUndo(h)!;
    expect(labelWrites(undo, "undo")).toEqual([{ sampleIds: ["s1"], classLabelId: null, etag: "after-3" }]);

    h = labelHistoryUndone(h, undo, new Map([["s1", "cleared"]]));
    expect(nextUndo(h)).toBeUndefined();
    const redo = nextRedo(h)!;
    expect(labelWrites(redo, "redo")).toEqual([{ sampleIds: ["s1"], classLabelId: THREE, etag: "cleared" }]);

    h = labelHistoryRedone(h, redo, new Map([["s1", "again-3"]]));
    expect(nextRedo(h)).toBeUndefined();
    expect(nextUndo(h)!.changes).toEqual([{ sampleId: "s1", before: null, after: THREE, etag: "again-3" }]);
  });

  it("undoes a relabel to the previous label, not to none", () => {
    const h = labelHistoryRecord(emptyLabelHistory, { changes: [{ sampleId: "s1", before: EIGHT, after: THREE, etag: "e" }] });
    expect(labelWrites(nextUndo(h)!, "undo")).toEqual([{ sampleIds: ["s1"], classLabelId: EIGHT, etag: "e" }]);
  });

  it("undoes a bulk label with one write per earlier label", () => {
    const bulk: LabelStep = {
      changes: [
        { sampleId: "a", before: null, after: THREE },
        { sampleId: "b", before: EIGHT, after: THREE },
        { sampleId: "c", before: null, after: THREE },
        { sampleId: "d", before: THREE, after: THREE }, // unchanged: nothing to undo
      ],
    };
    const h = labelHistoryRecord(emptyLabelHistory, bulk);
    expect(nextUndo(h)!.changes.map((c) => c.sampleId)).toEqual(["a", "b", "c"]);
    expect(labelWrites(nextUndo(h)!, "undo")).toEqual([
      { sampleIds: ["a", "c"], classLabelId: null },
      { sampleIds: ["b"], classLabelId: EIGHT },
    ]);
    expect(labelWrites(nextUndo(h)!, "redo")).toEqual([{ sampleIds: ["a", "b", "c"], classLabelId: THREE }]);
  });

  it("forgets the redo list on a new label, and records nothing for a label that changes nothing", () => {
    let h = labelHistoryRecord(emptyLabelHistory, { changes: [{ sampleId: "s1", before: null, after: THREE }] });
    h = labelHistoryUndone(h, nextUndo(h)!, new Map());
    expect(nextRedo(h)).toBeDefined();
    expect(labelHistoryRecord(h, { changes: [{ sampleId: "s2", before: THREE, after: THREE }] })).toBe(h);
    h = labelHistoryRecord(h, { changes: [{ sampleId: "s2", before: null, after: EIGHT }] });
    expect(nextRedo(h)).toBeUndefined();
    expect(h.past).toHaveLength(1);
  });

  it("moves only the step that was undone (a label recorded while an undo was on its way stays)", () => {
    const first: LabelStep = { changes: [{ sampleId: "s1", before: null, after: THREE }] };
    let h = labelHistoryRecord(emptyLabelHistory, first);
    const undoing = nextUndo(h)!;
    h = labelHistoryRecord(h, { changes: [{ sampleId: "s2", before: null, after: EIGHT }] });
    h = labelHistoryUndone(h, undoing, new Map());
    expect(h.past.map((s) => s.changes[0]!.sampleId)).toEqual(["s2"]);
    expect(h.future.map((s) => s.changes[0]!.sampleId)).toEqual(["s1"]);
  });
});
