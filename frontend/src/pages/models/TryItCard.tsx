// "Try it": one image in, the version's top-k predictions out (POST .../predict/), as the device
// would run it. Nothing is uploaded until the image is dropped; the preview is a local object URL.
import { InboxOutlined } from "@ant-design/icons";
import { Button, Card, Col, Empty, Image, InputNumber, Progress, Row, Space, Spin, Statistic, Typography, Upload } from "antd";
import { useEffect, useState } from "react";
import { useTranslation } from "react-i18next";

import { usePredict } from "../../api/queries/models";
import { ErrorAlert } from "../../components/errors";

export function TryItCard({ projectId, versionId }: { projectId: string; versionId: string }) {
  const { t } = useTranslation();
  const predict = usePredict(projectId, versionId);
  const [file, setFile] = useState<File | null>(null);
  const [preview, setPreview] = useState<string | null>(null);
  const [topK, setTopK] = useState(5);

  useEffect(() => {
    if (!file) return undefined;
    const url = URL.createObjectURL(file);
    setPreview(url);
    return () => URL.revokeObjectURL(url);
  }, [file]);

  const [small, setSmall] = useState(false);
  const run = (image: File, k: number) => predict.mutate({ file: image, topK: k });

  return (
    <Card
      size="small"
      title={t("models.tryIt")}
      extra={
        <Space>
          {t("models.topK")}
          <InputNumber size="small" min={1} max={20} value={topK} onChange={(value) => setTopK(value ?? 5)} aria-label={t("models.topK")} />
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
          {!predict.isPending && predict.data && (
            <Space orientation="vertical" style={{ width: "100%" }}>
              <Statistic data-testid="predict-latency" title={t("models.latency")} value={t("models.latencyMs", { ms: predict.data.latency_ms.toFixed(1) })} />
              <Typography.Text strong>{t("models.predictions")}</Typography.Text>
              {predict.data.predictions.map((p, i) => (
                <div key={p.index} data-testid="prediction">
                  <Space style={{ width: "100%", justifyContent: "space-between" }}>
                    <Typography.Text strong={i === 0}>{p.label}</Typography.Text>
                    <Typography.Text type="secondary">{(100 * p.probability).toFixed(1)}%</Typography.Text>
                  </Space>
                  <Progress percent={Math.round(1000 * p.probability) / 10} showInfo={false} status={i === 0 ? "success" : "normal"} />
                </div>
              ))}
            </Space>
          )}
          {!predict.isPending && !predict.data && !predict.isError && <Empty image={Empty.PRESENTED_IMAGE_SIMPLE} description={t("models.tryHint")} />}
        </Col>
      </Row>
    </Card>
  );
}
