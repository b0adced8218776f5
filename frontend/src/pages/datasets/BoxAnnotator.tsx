// The image with its boxes, drawn and edited by Annotorious (@annotorious/react): drag on the
// image to draw a box, click a box to select it, drag it to move, drag its handles to resize.
// Loaded with React.lazy by DetectionLabelingPanel only, so Annotorious is a chunk of its own that
// the rest of the console never downloads.
//
// The box list is the panel's state (with its undo history); Annotorious shows it. Changes made
// with the mouse come back through the store's LOCAL changes (onCreate/onChange/onDelete); the
// panel's own changes (undo, delete, another class) are written into the store as REMOTE changes,
// which the LOCAL observer does not see, so nothing loops.
import "@annotorious/react/annotorious-react.css";
import "./BoxAnnotator.css";

import {
  Annotorious,
  ImageAnnotator,
  Origin,
  useAnnotator,
  UserSelectAction,
  type AnnotoriousImageAnnotator,
  type Color,
  type DrawingStyle,
  type ImageAnnotation,
  type StoreChangeEvent,
} from "@annotorious/react";
import { useEffect, useMemo, useRef } from "react";

import { annotationOfBox, rectOfAnnotation } from "./boxAnnotations";
import { clampRect, diffRects, isTooSmall, type Box, type Rect } from "./boxes";
import { SuggestedBoxes } from "./SuggestedBoxes";
import type { SuggestedBox } from "./suggestions";

export interface BoxAnnotatorProps {
  src: string;
  alt: string;
  /** The image's size in px (the sample's width and height): box coordinates are in these. */
  width: number;
  height: number;
  /** The size it is shown at, in CSS px. */
  displayWidth: number;
  displayHeight: number;
  boxes: Box[];
  /** A model's suggested boxes, drawn dashed over the image; not editable until accepted. */
  suggestions?: SuggestedBox[];
  /** The colour and name of a class (the suggestions' labels). */
  colourOfClass?: (classLabelId: string) => string;
  nameOfClass?: (classLabelId: string) => string;
  selectedId: string | null;
  /** False while there is no class to give a new box. */
  drawingEnabled: boolean;
  /** A viewer's: boxes can be selected (shown in the list) but not moved, resized or deleted. */
  readOnly?: boolean;
  colourOf: (box: Box) => string;
  labelOf: (box: Box) => string;
  onCreate: (id: string, rect: Rect) => void;
  /** `gesture` counts pointer presses on the image: the moves of one drag share it. */
  onChange: (id: string, rect: Rect, gesture: number) => void;
  onDelete: (id: string) => void;
  onSelect: (id: string | null) => void;
  /** A press on the selected box (to move it, or just a click): the person picked that box. */
  onPress?: (id: string) => void;
}

export default function BoxAnnotator(props: BoxAnnotatorProps) {
  const { colourOf } = props;
  const byId = useMemo(() => new Map(props.boxes.map((b) => [b.id, b])), [props.boxes]);
  const style = useMemo(
    () =>
      (annotation: ImageAnnotation, state?: { selected?: boolean; hovered?: boolean }): DrawingStyle => {
        const box = byId.get(annotation.id);
        const colour = (box ? colourOf(box) : "#1677ff") as Color;
        return { stroke: colour, strokeWidth: state?.selected ? 3 : 2, fill: colour, fillOpacity: state?.selected || state?.hovered ? 0.25 : 0.1 };
      },
    [byId, colourOf],
  );
  const { width, height, displayWidth, displayHeight } = props;

  return (
    <div className="sampan-box-annotator" style={{ position: "relative", width: displayWidth, height: displayHeight }}>
      <Annotorious>
        <ImageAnnotator tool="rectangle" drawingMode="drag" drawingEnabled={props.drawingEnabled} style={style} theme="light">
          <img
            src={props.src}
            alt={props.alt}
            draggable={false}
            data-testid="detection-image"
            style={{ display: "block", width: displayWidth, height: displayHeight, imageRendering: width < displayWidth / 2 ? "pixelated" : "auto" }}
          />
        </ImageAnnotator>
        <StoreBridge {...props} />
      </Annotorious>
      <SuggestedBoxes
        boxes={props.suggestions ?? []}
        width={width}
        height={height}
        colourOf={props.colourOfClass ?? (() => "#faad14")}
        nameOf={props.nameOfClass ?? (() => "")}
      />
      {/* the class of each box, written on the image; the list beside it says the same for screen readers */}
      <div aria-hidden style={{ position: "absolute", inset: 0, pointerEvents: "none", overflow: "hidden" }}>
        {props.boxes.map((box) => {
          const inside = (box.y1 / height) * displayHeight < 18;
          return (
            <span
              key={box.id}
              className="sampan-box-label"
              style={{
                left: `${(box.x1 / width) * 100}%`,
                top: `${(box.y1 / height) * 100}%`,
                transform: inside ? undefined : "translateY(-100%)",
                background: colourOf(box),
              }}
            >
              {props.labelOf(box)}
            </span>
          );
        })}
      </div>
    </div>
  );
}

/** Keeps the Annotorious store and the panel's box list in step (see the module comment). */
function StoreBridge(props: BoxAnnotatorProps) {
  const anno = useAnnotator<AnnotoriousImageAnnotator | undefined>();
  const latest = useRef(props);
  latest.current = props;

  // the mouse's changes -> the panel
  useEffect(() => {
    if (!anno) return;
    const { store, selection } = anno.state;
    let gesture = 0;
    const onPointerDown = (event: PointerEvent) => {
      gesture += 1;
      // Annotorious mounts its drawing tool only while no box is being edited: a drag on the
      // image beside the edited box would only end the editing, and draw nothing. Ending it as
      // the press starts (before the press reaches the image) lets that same drag draw.
      const onEditedBox = event.target instanceof Element && event.target.closest(".a9s-annotation.selected") !== null;
      const pressed = selection.selected[0]?.id;
      if (onEditedBox && pressed) latest.current.onPress?.(pressed);
      if (!onEditedBox && latest.current.drawingEnabled && selection.selected.some((s: { editable?: boolean }) => s.editable)) {
        selection.clear();
      }
      // A drag released outside the image must still end (and make its box, clamped to the
      // image): the layer keeps the pointer until the button is released. Annotorious listens on
      // that layer; without this a release outside was never seen, no box was made and the
      // draft kept following the mouse. An edit handle's own capture (bubble phase) still wins.
      const layer = anno.element.querySelector("svg.a9s-annotationlayer");
      if (layer && latest.current.drawingEnabled && event.target instanceof Node && layer.contains(event.target)) {
        try {
          layer.setPointerCapture(event.pointerId);
        } catch {
          // the pointer is already gone (released at once): nothing to keep
        }
      }
    };
    const clamped = (a: ImageAnnotation): Rect | null => {
      const rect = rectOfAnnotation(a);
      return rect && clampRect(rect, latest.current.width, latest.current.height);
    };
    const onLocalChange = (event: StoreChangeEvent<ImageAnnotation>) => {
      const p = latest.current;
      for (const a of event.changes.created ?? []) {
        const rect = clamped(a);
        if (!rect || isTooSmall(rect)) {
          // a click, not a drag: no box
          selection.clear();
          store.deleteAnnotation(a.id, Origin.REMOTE);
        } else {
          // Annotorious leaves the box it drew selected, and so does the panel: Escape deselects
          // it (instead of closing the drawer), Delete removes it. A class key pressed next still
          // chooses the class of the NEXT box (the panel knows this box as just drawn).
          p.onCreate(a.id, rect);
        }
      }
      for (const { newValue, targetUpdated } of event.changes.updated ?? []) {
        const rect = targetUpdated && clamped(newValue);
        if (rect) p.onChange(newValue.id, rect, gesture);
      }
      for (const a of event.changes.deleted ?? []) p.onDelete(a.id);
    };
    const unsubscribeSelection = selection.subscribe(({ selected }: { selected: { id: string }[] }) => {
      const id = selected[0]?.id ?? null;
      if (id !== latest.current.selectedId) latest.current.onSelect(id);
    });
    anno.element.addEventListener("pointerdown", onPointerDown, true);
    store.observe(onLocalChange, { origin: Origin.LOCAL });
    return () => {
      anno.element.removeEventListener("pointerdown", onPointerDown, true);
      store.unobserve(onLocalChange);
      unsubscribeSelection();
    };
  }, [anno]);

  // a viewer selects boxes but cannot edit them
  useEffect(() => {
    anno?.setUserSelectAction(props.readOnly ? UserSelectAction.SELECT : UserSelectAction.EDIT);
  }, [anno, props.readOnly]);

  // the panel's list and selection -> the store
  useEffect(() => {
    if (!anno) return;
    const { store, selection } = anno.state;
    const shown = store.all().flatMap((a) => {
      const rect = rectOfAnnotation(a);
      return rect ? [{ id: a.id, rect }] : [];
    });
    const { remove, add, update } = diffRects(shown, props.boxes);
    if (selection.selected.some((s: { id: string }) => remove.includes(s.id))) selection.clear();
    for (const id of remove) store.deleteAnnotation(id, Origin.REMOTE);
    for (const box of add) store.addAnnotation(annotationOfBox(box), Origin.REMOTE);
    for (const box of update) store.updateAnnotation(annotationOfBox(box), Origin.REMOTE);
    const shownSelected = selection.selected[0]?.id ?? null;
    if (shownSelected !== props.selectedId) {
      if (props.selectedId && store.getAnnotation(props.selectedId)) selection.setSelected(props.selectedId, true);
      else if (!props.selectedId) selection.clear();
    }
  }, [anno, props.boxes, props.selectedId]);

  // Annotorious does not destroy itself on unmount (its undo keys stay bound to the document).
  // The destroy waits a tick so that StrictMode's unmount-and-mount-again keeps the annotator.
  const pendingDestroy = useRef<ReturnType<typeof setTimeout> | null>(null);
  useEffect(() => {
    if (!anno) return;
    if (pendingDestroy.current !== null) clearTimeout(pendingDestroy.current);
    return () => {
      pendingDestroy.current = setTimeout(() => anno.destroy(), 0);
    };
  }, [anno]);

  return null;
}
