// "Try it": one image in, the version's answer out (POST .../predict/), as the device would run
// it: an image classifier's top-k classes, or an object detector's boxes drawn over the image
// with a score slider (the server is asked down to SCORE_FLOOR once; the slider filters here).
// Nothing is uploaded until the image is dropped; the preview is a local object URL. A text
// classifier takes a text typed or pasted in a box (multipart `text`) and answers its top-k
// classes the same way, saying when the text was longer than the model reads.
import { InboxOutlined, SendOutlined } from "@ant-design/icons";
import { Alert, Button, Card, Col, Empty, Image, Input, InputNumber, Progress, Row, Slider, Space, Spin, Statistic, Tag, Typography, Upload } from "antd";
import { useEffect, useState } from "react";
import { useTranslation } from "react-i18next";

import { usePredict, usePredictText, type PredictResult, type TextPredictResult } from "../../api/queries/models";
import { ErrorAlert } from "../../components/errors";
import { classColour } from "../datasets/boxes";
import { DetectionOverlay } from "./DetectionOverlay";
import { classCounts, DEFAULT_SCORE_THRESHOLD, SCORE_FLOOR, visibleDetections } from "./detections";

type DetectionResult = Extract<PredictResult, { task: "object_detection" }>;
type ClassificationResult = Extract<PredictResult, { task: "image_classification" }>;

/** The characters of a text a text model reads (the manifest's `text.max_chars`), when it says. */
export function textMaxChars(manifest: unknown): number | undefined {
  const text = manifest && typeof manifest === "object" ? (manifest as { text?: unknown }).text : undefined;
  const value = text && typeof text === "object" ? (text as { max_chars?: unknown }).max_chars : undefined;
  return typeof value === "number" && Number.isInteger(value) && value > 0 ? value : undefined;
}

export function TryItCard({
  projectId,
  versionId,
  task = "image_classification",
  scoreThreshold = DEFAULT_SCORE_THRESHOLD,
  maxChars,
}: {
  projectId: string;
  versionId: string;
  /** the version's task: which controls to show before any answer came */
  task?: string;
  /** where the score slider starts (the manifest's detection.score_threshold) */
  scoreThreshold?: number;
  /** a text model: the characters it reads (the manifest's text.max_chars), for the truncation note */
  maxChars?: number;
}) {
  if (task === "text_classification") return <TryTextCard projectId={projectId} versionId={versionId} maxChars={maxChars} />;
  return <TryImageCard projectId={projectId} versionId={versionId} task={task} scoreThreshold={scoreThreshold} />;
}

function TryImageCard({ projectId, versionId, task, scoreThreshold }: { projectId: string; versionId: string; task: string; scoreThreshold: number }) {
  const { t } = useTranslation();
  const predict = usePredict(projectId, versionId);
  const [file, setFile] = useState<File | null>(null);
  const [preview, setPreview] = useState<string | null>(null);
  const [topK, setTopK] = useState(5);
  const [threshold, setThreshold] = useState(scoreThreshold);
  const detector = task === "object_detection";

  useEffect(() => {
    if (!file) return undefined;
    const url = URL.createObjectURL(file);
    setPreview(url);
    return () => URL.revokeObjectURL(url);
  }, [file]);

  const [small, setSmall] = useState(false);
  const run = (image: File, k: number) => predict.mutate(detector ? { file: image, scoreThreshold: SCORE_FLOOR } : { file: image, topK: k });
  const result = predict.isPending ? undefined : predict.data;

  return (
    <Card
      size="small"
      title={t("models.tryIt")}
      extra={
        <Space>
          {!detector && (
            <>
              {t("models.topK")}
              <InputNumber size="small" min={1} max={20} value={topK} onChange={(value) => setTopK(value ?? 5)} aria-label={t("models.topK")} />
            </>
          )}
          <Button size="small" disabled={!file || predict.isPending} onClick={() => file && run(file, topK)}>
            {t("models.predict")}
          </Button>
        </Space>
      }
    >
      <Row gutter={[16, 16]}>
        <Col xs={24} md={10}>
          <Upload.Dragger
            accept="image/*"
            multiple={false}
            showUploadList={false}
            beforeUpload={(image) => {
              setFile(image);
              run(image, topK);
              return false; // no automatic upload: the predict call sends it
            }}
          >
            {preview ? (
              // shown 200 px tall; a small image (a 28 px digit) is scaled up with sharp pixels
              <Image
                src={preview}
                preview={false}
                alt={file?.name}
                onLoad={(event) => setSmall(event.currentTarget.naturalHeight < 200)}
                style={{ height: 200, maxWidth: "100%", objectFit: "contain", imageRendering: small ? "pixelated" : "auto" }}
              />
            ) : (
              <>
                <p className="ant-upload-drag-icon">
                  <InboxOutlined />
                </p>
                <p className="ant-upload-text">{t("models.tryHint")}</p>
                <p className="ant-upload-hint">{t("models.tryHintSub")}</p>
              </>
            )}
          </Upload.Dragger>
        </Col>
        <Col xs={24} md={14}>
          {predict.isError && <ErrorAlert error={predict.error} onRetry={() => file && run(file, topK)} />}
          {predict.isPending && <Spin />}
          {result?.task === "object_detection" && (
            <DetectionAnswer result={result} src={preview} alt={file?.name} threshold={threshold} onThreshold={setThreshold} />
          )}
          {result && result.task !== "object_detection" && result.task !== "text_classification" && <ClassificationAnswer result={result} />}
          {!predict.isPending && !predict.data && !predict.isError && <Empty image={Empty.PRESENTED_IMAGE_SIMPLE} description={t("models.tryHint")} />}
        </Col>
      </Row>
    </Card>
  );
}

/** The most probable classes, best first, as bars (image and text classifiers alike). */
function PredictionBars({ predictions }: { predictions: { label: string; index: number; probability: number }[] }) {
  return (
    <>
      {predictions.map((p, i) => (
        <div key={p.index} data-testid="prediction">
          <Space style={{ width: "100%", justifyContent: "space-between" }}>
            <Typography.Text strong={i === 0}>{p.label}</Typography.Text>
            <Typography.Text type="secondary">{(100 * p.probability).toFixed(1)}%</Typography.Text>
          </Space>
          <Progress percent={Math.round(1000 * p.probability) / 10} showInfo={false} status={i === 0 ? "success" : "normal"} />
        </div>
      ))}
    </>
  );
}

function ClassificationAnswer({ result }: { result: ClassificationResult }) {
  const { t } = useTranslation();
  return (
    <Space orientation="vertical" style={{ width: "100%" }}>
      <Statistic data-testid="predict-latency" title={t("models.latency")} value={t("models.latencyMs", { ms: result.latency_ms.toFixed(1) })} />
      <Typography.Text strong>{t("models.predictions")}</Typography.Text>
      <PredictionBars predictions={result.predictions.map((p) => ({ label: p.label, index: p.index, probability: p.probability }))} />
    </Space>
  );
}

/** A text model's card: a box to type or paste a text into, Predict (or Ctrl+Enter), the top-k classes. */
function TryTextCard({ projectId, versionId, maxChars }: { projectId: string; versionId: string; maxChars?: number }) {
  const { t } = useTranslation();
  const predict = usePredictText(projectId, versionId);
  const [text, setText] = useState("");
  const [topK, setTopK] = useState(5);
  const empty = text.trim() === "";
  const run = () => {
    if (!empty) predict.mutate({ text, topK });
  };
  const result = predict.isPending ? undefined : predict.data;
  return (
    <Card
      size="small"
      title={t("models.tryIt")}
      extra={
        <Space>
          {t("models.topK")}
          <InputNumber size="small" min={1} max={20} value={topK} onChange={(value) => setTopK(value ?? 5)} aria-label={t("models.topK")} />
        </Space>
      }
    >
      <Row gutter={[16, 16]}>
        <Col xs={24} md={12}>
          <Space orientation="vertical" style={{ width: "100%" }}>
            <Input.TextArea
              value={text}
              onChange={(event) => setText(event.target.value)}
              onKeyDown={(event) => {
                if (event.key === "Enter" && (event.ctrlKey || event.metaKey)) {
                  event.preventDefault();
                  run();
                }
              }}
              placeholder={t("models.textPlaceholder")}
              aria-label={t("models.textLabel")}
              autoSize={{ minRows: 6, maxRows: 16 }}
            />
            <Space wrap>
              <Button type="primary" icon={<SendOutlined />} disabled={empty} loading={predict.isPending} onClick={run}>
                {t("models.predict")}
              </Button>
              <Typography.Text type="secondary" style={{ fontSize: 12 }}>
                {t("models.tryTextSub")}
              </Typography.Text>
            </Space>
          </Space>
        </Col>
        <Col xs={24} md={12}>
          {predict.isError && <ErrorAlert error={predict.error} onRetry={run} />}
          {predict.isPending && <Spin />}
          {result && <TextAnswer result={result} maxChars={maxChars} />}
          {!predict.isPending && !predict.data && !predict.isError && (
            <Empty image={Empty.PRESENTED_IMAGE_SIMPLE} description={t("models.tryTextHint")} />
          )}
        </Col>
      </Row>
    </Card>
  );
}

function TextAnswer({ result, maxChars }: { result: TextPredictResult; maxChars?: number }) {
  const { t } = useTranslation();
  return (
    <Space orientation="vertical" style={{ width: "100%" }}>
      <Statistic data-testid="predict-latency" title={t("models.latency")} value={t("models.latencyMs", { ms: result.latency_ms.toFixed(1) })} />
      {result.truncated && (
        <Alert
          type="info"
          showIcon
          data-testid="predict-truncated"
          title={maxChars ? t("models.truncated", { chars: maxChars.toLocaleString() }) : t("models.truncatedPlain")}
        />
      )}
      <Typography.Text strong>{t("models.predictions")}</Typography.Text>
      <PredictionBars predictions={result.predictions.map((p) => ({ label: p.label, index: p.index, probability: p.score }))} />
    </Space>
  );
}

function DetectionAnswer(props: { result: DetectionResult; src: string | null; alt?: string; threshold: number; onThreshold: (value: number) => void }) {
  const { t } = useTranslation();
  const { result } = props;
  const shown = visibleDetections(result.detections, props.threshold);
  return (
    <Space orientation="vertical" style={{ width: "100%" }}>
      <Space size="large" wrap>
        <Statistic data-testid="predict-latency" title={t("models.latency")} value={t("models.latencyMs", { ms: result.latency_ms.toFixed(1) })} />
        <Statistic data-testid="detection-count" title={t("models.objects")} value={shown.length} />
        <Statistic title={t("models.imageSize")} value={`${result.width} × ${result.height}`} />
      </Space>
      <div>
        <Typography.Text>{t("models.scoreThreshold", { value: props.threshold.toFixed(2) })}</Typography.Text>
        <Slider min={SCORE_FLOOR} max={1} step={0.01} value={props.threshold} onChange={props.onThreshold} aria-label={t("models.scoreThresholdLabel")} />
      </div>
      {props.src && <DetectionOverlay src={props.src} alt={props.alt} width={result.width} height={result.height} detections={shown} />}
      {shown.length === 0 ? (
        <Typography.Text type="secondary">{t("models.noObjects")}</Typography.Text>
      ) : (
        <Space wrap size={[4, 4]}>
          {classCounts(shown).map(([label, count]) => (
            <Tag key={label} color={classColour(shown.find((d) => d.label === label)?.index ?? 0)} data-testid="detection-class">
              {label} × {count}
            </Tag>
          ))}
        </Space>
      )}
    </Space>
  );
}
