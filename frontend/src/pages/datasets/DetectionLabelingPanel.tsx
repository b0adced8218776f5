// Detection labeling, keyboard first: draw, move, resize and delete bounding boxes (Annotorious,
// in BoxAnnotator, loaded only here), each with a class; number keys pick the class, Delete
// deletes, Ctrl+Z / Ctrl+Shift+Z undo and redo; the boxes save themselves (useBoxAutosave).
//
// Layout: a box needs the image as large as the screen allows, which the 320 px side card of
// classification labeling cannot give. So the panel is a drawer over the gallery, nearly as wide
// as the window: at 1280x720 the image gets about 850x640 px and the side column (classes, box
// list, save state, keys) 300 px. The gallery stays loaded behind it; P/N move through its page.
import { LeftOutlined, RedoOutlined, RightOutlined, UndoOutlined } from "@ant-design/icons";
import { Button, Drawer, Space, Spin, Tooltip, Typography } from "antd";
import { lazy, Suspense, useCallback, useEffect, useLayoutEffect, useMemo, useRef, useState, type RefObject } from "react";
import { useTranslation } from "react-i18next";

import type { Sample } from "../../api/queries/datasets";
import { useCanEdit } from "../../api/queries/projects";
import { ErrorAlert } from "../../components/errors";
import { ReadOnlyTag } from "../../components/ReadOnly";
import { boxesOfSample, classColour, toApiBoxes, withClass, withoutBox, withRect, type Box, type Rect } from "./boxes";
import { canRedo, canUndo, historyCommit, historyInit, historyRedo, historyUndo, type BoxHistory } from "./boxHistory";
import { BoxList, ClassPicker, SaveState, type ClassLabel } from "./DetectionSidebar";
import { classIndexForKey, isTypingTarget } from "./labeling";
import type { LabelingPanelProps } from "./LabelingPanel";
import { useBoxAutosave, type BoxAutosave } from "./useBoxAutosave";

const BoxAnnotator = lazy(() => import("./BoxAnnotator"));

export type DetectionLabelingPanelProps = LabelingPanelProps;

export function DetectionLabelingPanel(props: DetectionLabelingPanelProps) {
  const { t } = useTranslation();
  const classes = useMemo(() => [...props.dataset.class_labels].sort((a, b) => a.position - b.position), [props.dataset.class_labels]);
  const [activeClassId, setActiveClassId] = useState<string | null>(null);
  const activeClass = classes.find((c) => c.id === activeClassId) ?? classes[0] ?? null;
  const autosave = useBoxAutosave(props.projectId, props.dataset.id);
  // the last box list of each sample seen in this panel: coming back to a sample shows it even
  // before its save has been answered
  const drafts = useRef(new Map<string, Box[]>());
  const index = props.samples.findIndex((s) => s.id === props.current.id);
  const canEdit = useCanEdit(props.projectId);
  const move = (step: number) => {
    const target = props.samples[index + step];
    if (target) props.onNavigate(target.id);
  };

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
        key={props.current.id}
        projectId={props.projectId}
        datasetId={props.dataset.id}
        sample={props.current}
        classes={classes}
        activeClass={activeClass}
        onActiveClass={setActiveClassId}
        autosave={autosave}
        drafts={drafts.current}
        onMove={move}
        onClose={props.onClose}
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
  activeClass: ClassLabel | null;
  onActiveClass: (id: string) => void;
  autosave: BoxAutosave;
  drafts: Map<string, Box[]>;
  onMove: (step: number) => void;
  onClose: () => void;
  /** A viewer's: the boxes show, nothing changes them (no drawing, no keys that edit). */
  readOnly: boolean;
}

/** One sample's boxes, undo history and selection; remounted (key) for each sample. */
function SampleBoxesEditor(props: EditorProps) {
  const { t } = useTranslation();
  const { sample, classes, autosave } = props;
  const [history, setHistory] = useState<BoxHistory>(() => historyInit(props.drafts.get(sample.id) ?? boxesOfSample(sample)));
  const [selectedIdState, setSelectedId] = useState<string | null>(null);
  const boxes = history.present;
  // a selected box that an undo took away is no longer selected
  const selectedId = boxes.some((b) => b.id === selectedIdState) ? selectedIdState : null;
  const activeClassRef = useRef(props.activeClass);
  activeClassRef.current = props.activeClass;

  const positionOf = useMemo(() => new Map(classes.map((c, i) => [c.id, i])), [classes]);
  const colourOf = useCallback((box: Box) => classColour(positionOf.get(box.classLabelId) ?? -1), [positionOf]);
  const nameOf = useCallback((classLabelId: string) => classes.find((c) => c.id === classLabelId)?.name ?? "?", [classes]);
  const labelOf = useCallback((box: Box) => nameOf(box.classLabelId), [nameOf]);

  const { readOnly } = props;
  const update = useCallback((change: (boxes: Box[]) => Box[], mergeKey: string | null = null) => {
    if (readOnly) return; // a viewer's change would only be refused by the server
    setHistory((h) => historyCommit(h, change(h.present), mergeKey));
  }, [readOnly]);

  // every change (drawn, moved, undone ...) saves the whole list, debounced
  const { schedule, flush } = autosave;
  useEffect(() => {
    if (history.revision === 0) return;
    props.drafts.set(sample.id, history.present);
    schedule(sample.id, toApiBoxes(history.present, sample.width, sample.height));
  }, [history.revision]); // only a change saves, not a new `props` object
  // another sample or closing: what is pending goes now
  useEffect(() => () => void flush(), [flush]);

  const onCreate = useCallback(
    (id: string, rect: Rect) => {
      const cls = activeClassRef.current;
      if (cls) update((b) => [...b, { id, classLabelId: cls.id, ...rect }]);
    },
    [update],
  );
  const onChange = useCallback((id: string, rect: Rect, gesture: number) => update((b) => withRect(b, id, rect), `move:${id}:${gesture}`), [update]);
  const onDelete = useCallback((id: string) => update((b) => withoutBox(b, id)), [update]);

  const chooseClass = (cls: ClassLabel) => {
    props.onActiveClass(cls.id);
    if (selectedId) update((b) => withClass(b, selectedId, cls.id));
  };
  const deleteBox = (id: string) => {
    update((b) => withoutBox(b, id));
    if (id === selectedId) setSelectedId(null);
  };
  const undo = () => !readOnly && setHistory(historyUndo);
  const redo = () => !readOnly && setHistory(historyRedo);

  // the latest handlers for the one window listener
  const handlers = useRef({ chooseClass, deleteBox, undo, redo, selectedId, classes, setSelectedId, onMove: props.onMove, onClose: props.onClose });
  handlers.current = { chooseClass, deleteBox, undo, redo, selectedId, classes, setSelectedId, onMove: props.onMove, onClose: props.onClose };

  useEffect(() => {
    const onKey = (event: KeyboardEvent) => {
      const h = handlers.current;
      const key = event.key.toLowerCase();
      if ((event.ctrlKey || event.metaKey) && (key === "z" || key === "y")) {
        // Annotorious binds Ctrl+Z to its own undo stack on the document; the panel's history is
        // the one that saves, so the key stops here (capture phase, before the document)
        event.stopPropagation();
        if (isTypingTarget(event.target)) return; // a text field's own undo
        event.preventDefault();
        if (key === "y" || event.shiftKey) h.redo();
        else h.undo();
        return;
      }
      if (event.ctrlKey || event.metaKey || event.altKey || isTypingTarget(event.target)) return;
      const classIndex = classIndexForKey(event.key);
      if (classIndex !== null) {
        const cls = h.classes[classIndex];
        if (cls) {
          event.preventDefault();
          h.chooseClass(cls);
        }
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
        if (h.selectedId) h.setSelectedId(null);
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
              src={sample.image_url}
              alt={sample.original_name}
              width={sample.width}
              height={sample.height}
              displayWidth={Math.floor(sample.width * scale)}
              displayHeight={Math.floor(sample.height * scale)}
              boxes={boxes}
              selectedId={selectedId}
              drawingEnabled={props.activeClass !== null && !readOnly}
              readOnly={readOnly}
              colourOf={colourOf}
              labelOf={labelOf}
              onCreate={onCreate}
              onChange={onChange}
              onDelete={onDelete}
              onSelect={setSelectedId}
            />
          </Suspense>
        )}
      </div>
      <div style={{ width: 300, flex: "none", overflowY: "auto", display: "flex", flexDirection: "column", gap: 12 }}>
        <ClassPicker
          projectId={props.projectId}
          datasetId={props.datasetId}
          classes={classes}
          activeClass={props.activeClass}
          colourOf={(i) => classColour(i)}
          onChoose={chooseClass}
          readOnly={readOnly}
        />
        <Space size="small">
          <Tooltip title="Ctrl+Z">
            <Button size="small" icon={<UndoOutlined />} onClick={undo} disabled={readOnly || !canUndo(history)}>
              {t("detection.undo")}
            </Button>
          </Tooltip>
          <Tooltip title="Ctrl+Shift+Z">
            <Button size="small" icon={<RedoOutlined />} onClick={redo} disabled={readOnly || !canRedo(history)}>
              {t("detection.redo")}
            </Button>
          </Tooltip>
          <SaveState autosave={autosave} />
        </Space>
        {autosave.status === "error" && <ErrorAlert error={autosave.error} onRetry={() => void flush()} />}
        <BoxList boxes={boxes} selectedId={selectedId} nameOf={nameOf} colourOf={colourOf} onSelect={setSelectedId} onDelete={deleteBox} readOnly={readOnly} />
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
