// A model's suggested boxes over the image in the detection drawer: dashed, in their class's
// colour, each with its class and score ("car 87%"). They are not boxes yet: the layer takes no
// pointer events (drawing and editing go to the image below) until a person accepts them.
import type { SuggestedBox } from "./suggestions";
import { percent } from "./suggestions";

export function SuggestedBoxes(props: {
  boxes: SuggestedBox[];
  /** The image's size in px: the boxes' coordinates are in these. */
  width: number;
  height: number;
  colourOf: (classLabelId: string) => string;
  nameOf: (classLabelId: string) => string;
}) {
  if (props.boxes.length === 0) return null;
  const { width, height } = props;
  return (
    <div aria-hidden data-testid="suggested-boxes" style={{ position: "absolute", inset: 0, pointerEvents: "none", overflow: "hidden" }}>
      {/* the viewBox is the image in px, stretched over the image as shown (same aspect ratio) */}
      <svg viewBox={`0 0 ${width} ${height}`} preserveAspectRatio="none" style={{ position: "absolute", inset: 0, width: "100%", height: "100%" }}>
        {props.boxes.map((box) => (
          <rect
            key={box.id}
            data-testid="suggested-box"
            x={box.x1}
            y={box.y1}
            width={box.x2 - box.x1}
            height={box.y2 - box.y1}
            fill="none"
            stroke={props.colourOf(box.classLabelId)}
            strokeWidth={2}
            strokeDasharray="6 4"
            vectorEffect="non-scaling-stroke"
          />
        ))}
      </svg>
      {props.boxes.map((box) => (
        // below the box, in CSS px: the text keeps its size whatever the image's scale
        <span
          key={box.id}
          className="sampan-box-label"
          style={{ left: `${(box.x1 / width) * 100}%`, top: `${(box.y2 / height) * 100}%`, background: "rgba(255,255,255,0.9)", color: props.colourOf(box.classLabelId), border: `1px dashed ${props.colourOf(box.classLabelId)}` }}
        >
          {`${props.nameOf(box.classLabelId)} ${percent(box.score)}`}
        </span>
      ))}
    </div>
  );
}
