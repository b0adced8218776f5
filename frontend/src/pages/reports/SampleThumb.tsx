import { Tag, Typography } from "antd";
import type { TFunction } from "i18next";
import { useTranslation } from "react-i18next";

/** "predicted 5 · 69%" (not "5 69%", which reads as 5.69%); without a probability "predicted 5". */
export function thumbCaption(t: TFunction, predicted: string, probability: number | null): string {
  return probability === null
    ? t("report.predictedLabel", { label: predicted })
    : t("report.predictedWithProbability", { label: predicted, percent: Math.round(100 * probability) });
}

/** A validation sample's thumbnail with its predicted and true label. */
export function SampleThumb(props: {
  projectId: string;
  sampleId: string;
  predicted: string;
  true: string;
  probability: number | null;
}) {
  const { t } = useTranslation();
  const correct = props.predicted === props.true;
  const caption = t("report.predictedVsTrue", { predicted: props.predicted, true: props.true });
  return (
    <figure
      data-testid="report-sample"
      title={caption}
      style={{ margin: 0, padding: 4, width: 112, border: "1px solid #f0f0f0", borderRadius: 6, textAlign: "center", background: "#fff" }}
    >
      <img
        src={`/api/v1/projects/${props.projectId}/samples/${props.sampleId}/image/`}
        alt={caption}
        loading="lazy"
        decoding="async"
        width={96}
        height={96}
        style={{ objectFit: "contain", display: "block", margin: "0 auto", imageRendering: "pixelated" }}
      />
      <figcaption style={{ marginTop: 4, lineHeight: 1.4 }}>
        <Tag color={correct ? "success" : "error"} style={{ marginInlineEnd: 0, whiteSpace: "normal" }} data-testid="thumb-predicted">
          {thumbCaption(t, props.predicted, props.probability)}
        </Tag>
        {!correct && (
          <div>
            <Typography.Text type="secondary" style={{ fontSize: 12 }}>
              {t("report.trueLabel", { label: props.true })}
            </Typography.Text>
          </div>
        )}
      </figcaption>
    </figure>
  );
}
