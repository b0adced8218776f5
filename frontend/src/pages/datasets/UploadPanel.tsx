// Drag and drop a zip or many images; the upload shows its own progress (percent, speed, time
// left, and a notice while a cut connection resumes), then each import job shows the job's
// progress and, when it ends, its report. Zips and large files go up resumably (tus), small
// loose images in multipart batches. An object detection dataset explains the COCO, Pascal VOC
// and YOLO layouts it takes instead of class folders, and has no class for loose images. A text
// classification dataset takes CSV / TSV / XLSX / .txt / zip and previews a table's columns first
// (TextUploadOptions.tsx); the columns, encoding and sheet chosen go with the upload.
import { InboxOutlined } from "@ant-design/icons";
import { Alert, Button, Card, Form, Input, Progress, Space, Typography, Upload } from "antd";
import { useRef, useState } from "react";
import { useTranslation } from "react-i18next";

import { importFromUpload, uploadResumable } from "../../api/resumable";
import { stepFiles, uploadImport, uploadPlan, type ImportJob, type TextImportFields } from "../../api/upload";
import { useDataset } from "../../api/queries/datasets";
import { useCanEdit } from "../../api/queries/projects";
import { useReportError } from "../../components/errors";
import { formatBytes } from "../../format";
import { DetectionFormatsHelp } from "./DetectionFormatsHelp";
import { ImportJobCard } from "./ImportJobCard";
import { TextFormatsHelp, TextImportOptions } from "./TextUploadOptions";
import { formatDuration, formatSpeed, RateMeter } from "./transferRate";

interface Sending {
  batch: number; // 1-based step
  batches: number;
  percent: number; // of all bytes
  bytesPerSecond: number | null;
  secondsLeft: number | null;
  reconnecting: boolean; // a cut connection is being resumed
}

export function UploadPanel({ projectId, datasetId }: { projectId: string; datasetId: string }) {
  const { t, i18n } = useTranslation();
  const meter = useRef(new RateMeter());
  const reportError = useReportError();
  const [pending, setPending] = useState<File[]>([]);
  const [label, setLabel] = useState("");
  const [sending, setSending] = useState<Sending | null>(null);
  const [jobIds, setJobIds] = useState<string[]>([]);
  const canEdit = useCanEdit(projectId);
  const taskType = useDataset(projectId, datasetId).data?.task_type;
  const detection = taskType === "object_detection";
  const text = taskType === "text_classification";
  // a text dataset's columns and encoding (null: the text column must still be chosen)
  const [textFields, setTextFields] = useState<TextImportFields | null>({});

  const totalBytes = pending.reduce((sum, f) => sum + f.size, 0);

  async function start() {
    const looseLabel = detection ? undefined : label.trim() || undefined;
    const textOptions = text ? (textFields ?? undefined) : undefined;
    const steps = uploadPlan(pending);
    const all = Math.max(totalBytes, 1);
    let sentBefore = 0;
    meter.current = new RateMeter();
    try {
      for (const [index, step] of steps.entries()) {
        const files = stepFiles(step);
        const stepBytes = files.reduce((sum, f) => sum + f.size, 0);
        let reconnecting = false;
        const show = (fraction: number) => {
          const loaded = sentBefore + fraction * stepBytes;
          meter.current.record(loaded, performance.now());
          setSending({
            batch: index + 1,
            batches: steps.length,
            percent: Math.min(100, Math.floor((100 * loaded) / all)),
            bytesPerSecond: meter.current.bytesPerSecond(),
            secondsLeft: meter.current.secondsLeft(all),
            reconnecting,
          });
        };
        show(0);
        let job: ImportJob;
        if (step.kind === "resumable") {
          const uploadId = await uploadResumable(step.file, {
            onProgress: (loaded, total) => {
              reconnecting = false;
              show(total > 0 ? loaded / total : 0);
            },
            onRetry: () => {
              reconnecting = true;
              setSending((current) => (current ? { ...current, reconnecting: true, bytesPerSecond: null, secondsLeft: null } : current));
            },
          });
          job = await importFromUpload({ projectId, datasetId, uploadId, label: looseLabel, text: textOptions });
        } else {
          job = await uploadImport({
            projectId,
            datasetId,
            files: step.files,
            label: looseLabel,
            text: textOptions,
            // multipart framing makes `total` a little larger than the files themselves
            onProgress: ({ loaded, total }) => show(total > 0 ? loaded / total : 0),
          });
        }
        sentBefore += stepBytes;
        setJobIds((ids) => [job.id, ...ids]);
        // a step that is in is not sent again if a later one fails
        setPending((files_) => files_.filter((f) => !files.includes(f)));
      }
    } catch (error) {
      reportError(error);
    } finally {
      setSending(null);
    }
  }

  return (
    <Space orientation="vertical" size="middle" style={{ width: "100%" }}>
      {!canEdit && <Alert type="info" showIcon title={t("role.readOnly")} description={t("role.needsEditor")} />}
      <Upload.Dragger
        multiple
        accept={text ? ".csv,.tsv,.tab,.xlsx,.txt,.zip" : ".zip,image/*"}
        showUploadList={false}
        disabled={sending !== null || !canEdit}
        beforeUpload={(file) => {
          setPending((files) => [...files, file]);
          return Upload.LIST_IGNORE; // we send the files ourselves, in batches, with progress
        }}
      >
        <p className="ant-upload-drag-icon">
          <InboxOutlined />
        </p>
        <p className="ant-upload-text">{t(text ? "text.upload.dropTitle" : "upload.dropTitle")}</p>
        <p className="ant-upload-hint">{t(detection ? "upload.detectionHint" : text ? "text.upload.dropHint" : "upload.dropHint")}</p>
      </Upload.Dragger>
      {detection && <DetectionFormatsHelp />}
      {text && <TextFormatsHelp />}

      {pending.length > 0 && (
        <Card size="small">
          <Space orientation="vertical" style={{ width: "100%" }}>
            <Typography.Text strong data-testid="pending-files">
              {t("upload.pending", { count: pending.length, size: formatBytes(totalBytes) })}
            </Typography.Text>
            {text && <TextImportOptions files={pending} onChange={setTextFields} />}
            <Form layout="inline">
              {!detection && (
                <Form.Item label={t(text ? "text.upload.looseLabel" : "upload.looseLabel")} tooltip={t(text ? "text.upload.looseLabelHint" : "upload.looseLabelHint")}>
                  <Input value={label} onChange={(e) => setLabel(e.target.value)} maxLength={200} style={{ width: 200 }} />
                </Form.Item>
              )}
              <Space>
                <Button type="primary" onClick={() => void start()} loading={sending !== null} disabled={!canEdit || (text && textFields === null)}>
                  {t("upload.start")}
                </Button>
                <Button onClick={() => setPending([])} disabled={sending !== null}>
                  {t("upload.clear")}
                </Button>
              </Space>
            </Form>
            {sending && (
              <div>
                <Typography.Text type="secondary">
                  {t("upload.uploading", { batch: sending.batch, batches: sending.batches })}
                </Typography.Text>
                <Progress percent={sending.percent} status="active" aria-label={t("upload.start")} />
                {sending.reconnecting ? (
                  <Alert type="warning" showIcon data-testid="upload-reconnecting" title={t("upload.reconnecting")} />
                ) : (
                  sending.bytesPerSecond !== null && (
                    <Typography.Text type="secondary" data-testid="upload-rate">
                      {sending.secondsLeft !== null
                        ? t("upload.rate", {
                            speed: formatSpeed(sending.bytesPerSecond),
                            left: formatDuration(sending.secondsLeft, i18n.language),
                          })
                        : formatSpeed(sending.bytesPerSecond)}
                    </Typography.Text>
                  )
                )}
              </div>
            )}
          </Space>
        </Card>
      )}

      {jobIds.map((jobId) => (
        <ImportJobCard key={jobId} projectId={projectId} datasetId={datasetId} jobId={jobId} />
      ))}
    </Space>
  );
}
