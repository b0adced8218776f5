// Detection labeling, keyboard first: draw, move, resize and delete bounding boxes (Annotorious,
// in BoxAnnotator, loaded only here), each with a class; the classes' keys (shown on their
// buttons, hotkeys.ts) pick the class, Delete deletes, Ctrl+Z / Ctrl+Shift+Z undo and redo; the
// boxes save themselves (useBoxAutosave), refused when someone else saved them meanwhile (412:
// the message and a Reload).
//
// "No objects" (the button, or the - key) marks an image that holds nothing to box: a background
// image, kept in dataset versions with no boxes. It is part of the undo history like a box, and
// a box drawn afterwards clears it (the server clears it on any write with boxes, too).
//
// A model's suggested boxes (pre-labeling) show dashed with their score, apart from the boxes.
// Enter accepts all of the image's, a row's button one; an accepted suggestion becomes a box
// like a drawn one (move it, resize it, give it another class), and the accept is an undo step.
// Accepted and rejected suggestions are named in the next save of the list
// (`resolved_suggestion_ids`), which deletes them on the server with that write.
//
// Selection: a box just drawn stays selected (Escape deselects it, Delete removes it), but a
// class key then chooses the class of the NEXT box and leaves the drawn one alone: people press
// the next box's class right after drawing, and that relabeled the box just drawn. A box clicked
// (on the image or in the list) takes the class of the key pressed.
//
// Layout: a box needs the image as large as the screen allows, which the 320 px side card of
// classification labeling cannot give. So the panel is a drawer over the gallery, nearly as wide
// as the window: at 1280x720 the image gets about 850x640 px and the side column (classes, box
// list, save state, keys) 300 px. The gallery stays loaded behind it; P/N move through its page.
import { LeftOutlined, RightOutlined } from "@ant-design/icons";
import { useQueryClient } from "@tanstack/react-query";
import { Button, Drawer, Space, Spin, Typography } from "antd";
import { lazy, Suspense, useCallback, useEffect, useLayoutEffect, useMemo, useRef, useState, type RefObject } from "react";
import { useTranslation } from "react-i18next";

import type { Sample } from "../../api/queries/datasets";
import { getSample, replaceCachedSample } from "../../api/queries/labeling";
import { useCanEdit } from "../../api/queries/projects";
import { ErrorAlert, useReportError } from "../../components/errors";
import { ReadOnlyTag } from "../../components/ReadOnly";
import { boxesOfSample, classColour, toApiBoxes, withClass, withoutBox, withRect, type Box, type Rect } from "./boxes";
import { canRedo, canUndo, historyCommit, historyInit, historyRedo, historyUndo, type BoxHistory } from "./boxHistory";
import { BoxList, ClassPicker, NoObjectsButton, NO_OBJECTS_KEY, SaveState, SuggestionList, type ClassLabel } from "./DetectionSidebar";
import { suggestedBoxesOf, type SuggestedBox } from "./suggestions";
import { assignHotkeys, classIdForKey } from "./hotkeys";
import { isTypingTarget, undoRedoOfKey } from "./labeling";
import { UndoRedoButtons } from "./LabelingControls";
import type { LabelingPanelProps } from "./LabelingPanel";
import { useBoxAutosave, type BoxAutosave } from "./useBoxAutosave";

const BoxAnnotator = lazy(() => import("./BoxAnnotator"));

export type DetectionLabelingPanelProps = LabelingPanelProps;

/** What one undo step of a sample holds: its boxes, its "no objects" mark, the model's suggestions left. */
export interface EditorState {
  boxes: Box[];
  noObjects: boolean;
  suggestions: SuggestedBox[];
}

/** Ids of the suggestions some step of `history` showed and its present does not: accepted or rejected. */
export function resolvedSuggestionIds(history: BoxHistory<EditorState>): string[] {
  const present = new Set(history.present.suggestions.map((s) => s.id));
  const resolved = new Set<string>();
  for (const state of [...history.past, ...history.future]) {
    for (const s of state.suggestions) if (!present.has(s.id)) resolved.add(s.id);
  }
  return [...resolved].sort();
}

export function DetectionLabelingPanel(props: DetectionLabelingPanelProps) {
  const { t } = useTranslation();
  const classes = useMemo(() => [...props.dataset.class_labels].sort((a, b) => a.position - b.position), [props.dataset.class_labels]);
  const keys = useMemo(() => assignHotkeys(classes), [classes]);
  const [activeClassId, setActiveClassId] = useState<string | null>(null);
  const activeClass = classes.find((c) => c.id === activeClassId) ?? classes[0] ?? null;
  const autosave = useBoxAutosave(props.projectId, props.dataset.id);
  // the box history of each sample seen in this panel: coming back to a sample shows its last
  // list even before its save has been answered, and Ctrl+Z still undoes there
  const histories = useRef(new Map<string, BoxHistory<EditorState>>());
  const index = props.samples.findIndex((s) => s.id === props.current.id);
  const canEdit = useCanEdit(props.projectId);
  const move = (step: number) => {
    const target = props.samples[index + step];
    if (target) props.onNavigate(target.id);
  };

  // A save refused as stale (412): Reload reads the sample as stored now, drops this panel's
  // list and history of it, and shows the stored boxes (the editor remounts on them).
  const queryClient = useQueryClient();
  const reportError = useReportError();
  const [reloaded, setReloaded] = useState<{ sample: Sample | null; count: number }>({ sample: null, count: 0 });
  // the sample as reloaded is shown until another sample opens; later the gallery's copy (which
  // the reload and every save updated) is the newer one
  if (reloaded.sample && reloaded.sample.id !== props.current.id) setReloaded({ sample: null, count: reloaded.count });
  const reload = async (sampleId: string) => {
    try {
      const fresh = await getSample(props.projectId, sampleId);
      replaceCachedSample(queryClient, props.projectId, props.dataset.id, fresh);
      autosave.discard(sampleId, fresh.etag);
      histories.current.delete(sampleId);
      setReloaded((r) => ({ sample: fresh, count: r.count + 1 }));
    } catch (error) {
      reportError(error);
    }
  };
  const shown = reloaded.sample?.id === props.current.id ? reloaded.sample : props.current;

  return (
    <Drawer
      open
      placement="right"
      size="min(1440px, calc(100vw - 48px))"
      keyboard={false /* Escape first deselects a box: the panel's key handler closes */}
      onClose={props.onClose}
      title={
        <Space size="small">
          {t("detection.title")}
          {!canEdit && <ReadOnlyTag />}
          <Typography.Text type="secondary" ellipsis style={{ maxWidth: 360 }} title={props.current.original_name} data-testid="detection-sample-name">
            {props.current.original_name}
          </Typography.Text>
        </Space>
      }
      extra={
        <Space size="small">
          <Button size="small" icon={<LeftOutlined />} onClick={() => move(-1)} disabled={index <= 0}>
            {t("labeling.previous")}
          </Button>
          <Typography.Text type="secondary">{t("detection.position", { index: index + 1, total: props.samples.length })}</Typography.Text>
          <Button size="small" icon={<RightOutlined />} iconPlacement="end" onClick={() => move(1)} disabled={index < 0 || index >= props.samples.length - 1}>
            {t("labeling.next")}
          </Button>
        </Space>
      }
      styles={{ body: { padding: 12, display: "flex", overflow: "hidden" } }}
    >
      <SampleBoxesEditor
        key={`${props.current.id}:${reloaded.count}`}
        projectId={props.projectId}
        datasetId={props.dataset.id}
        sample={shown}
        classes={classes}
        keys={keys}
        activeClass={activeClass}
        onActiveClass={setActiveClassId}
        autosave={autosave}
        histories={histories.current}
        onMove={move}
        onClose={props.onClose}
        onReload={(sampleId) => void reload(sampleId)}
        readOnly={!canEdit}
      />
    </Drawer>
  );
}

interface EditorProps {
  projectId: string;
  datasetId: string;
  sample: Sample;
  classes: ClassLabel[];
  keys: Map<string, string>;
  activeClass: ClassLabel | null;
  onActiveClass: (id: string) => void;
  autosave: BoxAutosave;
  histories: Map<string, BoxHistory<EditorState>>;
  onMove: (step: number) => void;
  onClose: () => void;
  /** Read the sample again from the server, dropping this panel's list of it (after a 412). */
  onReload: (sampleId: string) => void;
  /** A viewer's: the boxes show, nothing changes them (no drawing, no keys that edit). */
  readOnly: boolean;
}

/** Which box is selected, and whether it was just drawn (see the module comment). */
interface Selection {
  id: string;
  fresh: boolean;
}

/** One sample's boxes, undo history and selection; remounted (key) for each sample. */
function SampleBoxesEditor(props: EditorProps) {
  const { t } = useTranslation();
  const { sample, classes, autosave } = props;
  const [history, setHistory] = useState<BoxHistory<EditorState>>(
    () =>
      props.histories.get(sample.id) ??
      historyInit<EditorState>({ boxes: boxesOfSample(sample), noObjects: sample.no_objects, suggestions: suggestedBoxesOf(sample) }),
  );
  // the revision this editor started from: only a change made here saves
  const startRevision = useRef(history.revision);
  const [selection, setSelection] = useState<Selection | null>(null);
  const boxes = history.present.boxes;
  const noObjects = history.present.noObjects;
  const suggestions = history.present.suggestions;
  // a selected box that an undo took away is no longer selected
  const selected = selection && boxes.some((b) => b.id === selection.id) ? selection : null;
  const selectedId = selected?.id ?? null;
  const activeClassRef = useRef(props.activeClass);
  activeClassRef.current = props.activeClass;

  const positionOf = useMemo(() => new Map(classes.map((c, i) => [c.id, i])), [classes]);
  const colourOfClassId = useCallback((classLabelId: string) => classColour(positionOf.get(classLabelId) ?? -1), [positionOf]);
  const colourOf = useCallback((box: Box) => colourOfClassId(box.classLabelId), [colourOfClassId]);
  const nameOf = useCallback((classLabelId: string) => classes.find((c) => c.id === classLabelId)?.name ?? "?", [classes]);
  const labelOf = useCallback((box: Box) => nameOf(box.classLabelId), [nameOf]);

  const { readOnly } = props;
  const update = useCallback((change: (boxes: Box[]) => Box[], mergeKey: string | null = null) => {
    if (readOnly) return; // a viewer's change would only be refused by the server
    setHistory((h) => {
      const next = change(h.present.boxes);
      if (next === h.present.boxes) return h;
      // a box clears "no objects"
      return historyCommit(h, { ...h.present, boxes: next, noObjects: next.length > 0 ? false : h.present.noObjects }, mergeKey);
    });
  }, [readOnly]);
  // only an image without boxes can be checked "no objects"; it has no suggested boxes then
  const toggleNoObjects = useCallback(() => {
    if (readOnly) return;
    setHistory((h) =>
      h.present.boxes.length > 0 ? h : historyCommit(h, { ...h.present, noObjects: !h.present.noObjects, suggestions: h.present.noObjects ? h.present.suggestions : [] }),
    );
  }, [readOnly]);
  // suggestions (`ids`; null: all of them) become boxes, or are dropped
  const resolveSuggestions = useCallback(
    (ids: string[] | null, accept: boolean) => {
      if (readOnly) return;
      setHistory((h) => {
        const chosen = h.present.suggestions.filter((s) => ids === null || ids.includes(s.id));
        if (chosen.length === 0) return h;
        const taken = new Set(chosen.map((s) => s.id));
        const added = accept ? chosen.map(({ score: _score, ...box }) => ({ ...box, id: `suggested-${box.id}` })) : [];
        return historyCommit(h, {
          boxes: added.length > 0 ? [...h.present.boxes, ...added] : h.present.boxes,
          noObjects: added.length > 0 ? false : h.present.noObjects,
          suggestions: h.present.suggestions.filter((s) => !taken.has(s.id)),
        });
      });
    },
    [readOnly],
  );

  // every change (drawn, moved, undone ...) saves the whole list, debounced, with If-Match of the
  // boxes it was made from
  const { schedule, flush, base } = autosave;
  useEffect(() => base(sample.id, sample.etag), [base, sample.id, sample.etag]);
  useEffect(() => {
    if (history.revision === startRevision.current) return;
    props.histories.set(sample.id, history);
    schedule(sample.id, toApiBoxes(history.present.boxes, sample.width, sample.height), history.present.noObjects, resolvedSuggestionIds(history));
  }, [history.revision]); // only a change saves, not a new `props` object
  // another sample or closing: what is pending goes now
  useEffect(() => () => void flush(), [flush]);

  const onCreate = useCallback(
    (id: string, rect: Rect) => {
      const cls = activeClassRef.current;
      if (!cls) return;
      update((b) => [...b, { id, classLabelId: cls.id, ...rect }]);
      setSelection({ id, fresh: true });
    },
    [update],
  );
  const onChange = useCallback((id: string, rect: Rect, gesture: number) => update((b) => withRect(b, id, rect), `move:${id}:${gesture}`), [update]);
  const onDelete = useCallback((id: string) => update((b) => withoutBox(b, id)), [update]);
  // the annotator's selection: a box just drawn that it selects stays "fresh"
  const onAnnotatorSelect = useCallback((id: string | null) => setSelection((s) => (id === null ? null : s?.id === id ? s : { id, fresh: false })), []);
  // a press on the selected box, or a click on its row: the person picked this box
  const pick = useCallback((id: string) => setSelection({ id, fresh: false }), []);

  const chooseClass = (cls: ClassLabel) => {
    props.onActiveClass(cls.id);
    if (selected && !selected.fresh) update((b) => withClass(b, selected.id, cls.id));
  };
  const deleteBox = (id: string) => {
    update((b) => withoutBox(b, id));
    if (id === selectedId) setSelection(null);
  };
  const undo = () => !readOnly && setHistory(historyUndo);
  const redo = () => !readOnly && setHistory(historyRedo);

  // the latest handlers for the one window listener
  const latest = { chooseClass, deleteBox, undo, redo, toggleNoObjects, resolveSuggestions, selectedId, classes, keys: props.keys, setSelection, onMove: props.onMove, onClose: props.onClose };
  const handlers = useRef(latest);
  handlers.current = latest;

  useEffect(() => {
    const onKey = (event: KeyboardEvent) => {
      const h = handlers.current;
      const key = event.key.toLowerCase();
      if ((event.ctrlKey || event.metaKey) && (key === "z" || key === "y")) {
        // Annotorious binds Ctrl+Z to its own undo stack on the document; the panel's history is
        // the one that saves, so the key stops here (capture phase, before the document)
        event.stopPropagation();
        const action = undoRedoOfKey(event);
        if (action === null || isTypingTarget(event.target)) return; // a text field's own undo
        event.preventDefault();
        if (action === "redo") h.redo();
        else h.undo();
        return;
      }
      if (event.ctrlKey || event.metaKey || event.altKey || isTypingTarget(event.target)) return;
      const classId = classIdForKey(h.keys, event);
      const cls = classId === null ? undefined : h.classes.find((c) => c.id === classId);
      if (cls) {
        event.preventDefault();
        h.chooseClass(cls);
      } else if (event.key === "Enter") {
        event.preventDefault();
        h.resolveSuggestions(null, true);
      } else if (event.key === NO_OBJECTS_KEY) {
        event.preventDefault();
        h.toggleNoObjects();
      } else if ((event.key === "Delete" || event.key === "Backspace") && h.selectedId) {
        event.preventDefault();
        h.deleteBox(h.selectedId);
      } else if (event.key === "ArrowRight" || key === "n") {
        event.preventDefault();
        h.onMove(1);
      } else if (event.key === "ArrowLeft" || key === "p") {
        event.preventDefault();
        h.onMove(-1);
      } else if (event.key === "Escape") {
        event.preventDefault();
        if (h.selectedId) h.setSelection(null);
        else h.onClose();
      }
    };
    window.addEventListener("keydown", onKey, true);
    return () => window.removeEventListener("keydown", onKey, true);
  }, []);

  const area = useRef<HTMLDivElement>(null);
  const areaSize = useElementSize(area);
  const scale = areaSize ? Math.min(areaSize.width / sample.width, areaSize.height / sample.height) : 0;

  return (
    <div style={{ display: "flex", gap: 16, width: "100%", minHeight: 0 }} data-testid="detection-panel">
      <div ref={area} style={{ flex: 1, minWidth: 0, display: "flex", alignItems: "center", justifyContent: "center", background: "#f5f5f5" }}>
        {scale > 0 && (
          <Suspense fallback={<Spin />}>
            <BoxAnnotator
              src={sample.image_url ?? ""}
              alt={sample.original_name}
              width={sample.width}
              height={sample.height}
              displayWidth={Math.floor(sample.width * scale)}
              displayHeight={Math.floor(sample.height * scale)}
              boxes={boxes}
              suggestions={suggestions}
              colourOfClass={colourOfClassId}
              nameOfClass={nameOf}
              selectedId={selectedId}
              drawingEnabled={props.activeClass !== null && !readOnly}
              readOnly={readOnly}
              colourOf={colourOf}
              labelOf={labelOf}
              onCreate={onCreate}
              onChange={onChange}
              onDelete={onDelete}
              onSelect={onAnnotatorSelect}
              onPress={pick}
            />
          </Suspense>
        )}
      </div>
      <div style={{ width: 300, flex: "none", overflowY: "auto", display: "flex", flexDirection: "column", gap: 12 }}>
        <ClassPicker
          projectId={props.projectId}
          datasetId={props.datasetId}
          classes={classes}
          keys={props.keys}
          activeClass={props.activeClass}
          colourOf={(i) => classColour(i)}
          onChoose={chooseClass}
          readOnly={readOnly}
        />
        <Space size="small" wrap>
          <UndoRedoButtons onUndo={undo} onRedo={redo} canUndo={canUndo(history)} canRedo={canRedo(history)} disabled={readOnly} />
          <SaveState autosave={autosave} />
        </Space>
        {autosave.status === "error" &&
          (autosave.stale && autosave.failedSampleId ? (
            // someone else saved this sample's boxes since they were opened: never written over
            // theirs; Reload shows what is stored now
            <ErrorAlert error={autosave.error} actionLabel={t("labeling.reload")} onRetry={() => props.onReload(autosave.failedSampleId!)} />
          ) : (
            <ErrorAlert error={autosave.error} onRetry={() => void flush()} />
          ))}
        <SuggestionList
          suggestions={suggestions}
          nameOf={nameOf}
          colourOf={colourOfClassId}
          onAccept={(ids) => resolveSuggestions(ids, true)}
          onReject={(ids) => resolveSuggestions(ids, false)}
          readOnly={readOnly}
        />
        <NoObjectsButton checked={noObjects} disabled={readOnly || boxes.length > 0} onToggle={toggleNoObjects} />
        <BoxList boxes={boxes} noObjects={noObjects} selectedId={selectedId} nameOf={nameOf} colourOf={colourOf} onSelect={pick} onDelete={deleteBox} readOnly={readOnly} />
        <Typography.Text type="secondary" style={{ fontSize: 12 }}>
          {t("detection.hint")}
        </Typography.Text>
        <Typography.Text type="secondary" style={{ fontSize: 12 }}>
          {t("detection.keys")}
        </Typography.Text>
      </div>
    </div>
  );
}

/** The content size of `ref`'s element, followed as it changes (null until measured). */
function useElementSize(ref: RefObject<HTMLElement | null>): { width: number; height: number } | null {
  const [size, setSize] = useState<{ width: number; height: number } | null>(null);
  useLayoutEffect(() => {
    const element = ref.current;
    if (!element) return;
    const measure = () => {
      const { clientWidth: width, clientHeight: height } = element;
      setSize((prev) => (prev && prev.width === width && prev.height === height ? prev : { width, height }));
    };
    measure();
    const observer = new ResizeObserver(measure);
    observer.observe(element);
    return () => observer.disconnect();
  }, [ref]);
  return size;
}
