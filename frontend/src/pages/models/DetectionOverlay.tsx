// An image with its detections drawn over it: a frame with the image's aspect ratio holds the
// image and one absolutely placed box per detection, in % of the image (detections.ts), so the
// boxes stay where the objects are at any displayed size. The browser shows the image upright
// (EXIF applied), as the server measured it.
import { classColour } from "../datasets/boxes";
import { boxPercent, frameSize, labelInside, type Detection } from "./detections";

export function DetectionOverlay(props: { src: string; alt?: string; width: number; height: number; detections: readonly Detection[]; maxHeight?: number }) {
  const { width, height } = props;
  // a small image (a 64 px crop) is scaled up with sharp pixels
  const small = height < (props.maxHeight ?? 360) / 2;
  return (
    <div data-testid="detection-overlay" style={{ position: "relative", ...frameSize(width, height, props.maxHeight ?? 360) }}>
      <img
        src={props.src}
        alt={props.alt}
        style={{ position: "absolute", inset: 0, width: "100%", height: "100%", display: "block", imageRendering: small ? "pixelated" : "auto" }}
      />
      {props.detections.map((d, i) => {
        const place = boxPercent(d.box, width, height);
        const colour = classColour(d.index);
        return (
          <div
            key={i}
            data-testid="detection-box"
            title={`${d.label} ${(100 * d.score).toFixed(1)}%`}
            style={{
              position: "absolute",
              left: `${place.left}%`,
              top: `${place.top}%`,
              width: `${place.width}%`,
              height: `${place.height}%`,
              border: `2px solid ${colour}`,
              boxSizing: "border-box",
              pointerEvents: "none",
            }}
          >
            <span
              style={{
                position: "absolute",
                left: -2,
                ...(labelInside(place) ? { top: 0 } : { bottom: "100%" }),
                background: colour,
                color: "#fff",
                fontSize: 12,
                lineHeight: "16px",
                padding: "0 4px",
                whiteSpace: "nowrap",
              }}
            >
              {d.label} {(100 * d.score).toFixed(0)}%
            </span>
          </div>
        );
      })}
    </div>
  );
}
