// Drag and drop a zip or many images; the upload shows its own progress, then each import job
// shows the job's progress and, when it ends, its report.
import { InboxOutlined } from "@ant-design/icons";
import { Alert, Button, Card, Form, Input, Progress, Space, Typography, Upload } from "antd";
import { useState } from "react";
import { useTranslation } from "react-i18next";

import { uploadBatches, uploadImport } from "../../api/upload";
import { useCanEdit } from "../../api/queries/projects";
import { useReportError } from "../../components/errors";
import { formatBytes } from "../../format";
import { ImportJobCard } from "./ImportJobCard";

interface Sending {
  batch: number; // 1-based
  batches: number;
  percent: number; // of all bytes
}

export function UploadPanel({ projectId, datasetId }: { projectId: string; datasetId: string }) {
  const { t } = useTranslation();
  const reportError = useReportError();
  const [pending, setPending] = useState<File[]>([]);
  const [label, setLabel] = useState("");
  const [sending, setSending] = useState<Sending | null>(null);
  const [jobIds, setJobIds] = useState<string[]>([]);
  const canEdit = useCanEdit(projectId);

  const totalBytes = pending.reduce((sum, f) => sum + f.size, 0);

  async function start() {
    const batches = uploadBatches(pending);
    const all = Math.max(totalBytes, 1);
    let sentBefore = 0;
    try {
      for (const [index, files] of batches.entries()) {
        setSending({ batch: index + 1, batches: batches.length, percent: Math.floor((100 * sentBefore) / all) });
        const batchBytes = files.reduce((sum, f) => sum + f.size, 0);
        const job = await uploadImport({
          projectId,
          datasetId,
          files,
          label: label.trim() || undefined,
          onProgress: ({ loaded, total }) => {
            // multipart framing makes `total` a little larger than the files themselves
            const fraction = total > 0 ? loaded / total : 0;
            setSending({
              batch: index + 1,
              batches: batches.length,
              percent: Math.min(100, Math.floor((100 * (sentBefore + fraction * batchBytes)) / all)),
            });
          },
        });
        sentBefore += batchBytes;
        setJobIds((ids) => [job.id, ...ids]);
        // a batch that is in is not sent again if a later batch fails
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
        accept=".zip,image/*"
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
        <p className="ant-upload-text">{t("upload.dropTitle")}</p>
        <p className="ant-upload-hint">{t("upload.dropHint")}</p>
      </Upload.Dragger>

      {pending.length > 0 && (
        <Card size="small">
          <Space orientation="vertical" style={{ width: "100%" }}>
            <Typography.Text strong data-testid="pending-files">
              {t("upload.pending", { count: pending.length, size: formatBytes(totalBytes) })}
            </Typography.Text>
            <Form layout="inline">
              <Form.Item label={t("upload.looseLabel")} tooltip={t("upload.looseLabelHint")}>
                <Input value={label} onChange={(e) => setLabel(e.target.value)} maxLength={200} style={{ width: 200 }} />
              </Form.Item>
              <Space>
                <Button type="primary" onClick={() => void start()} loading={sending !== null} disabled={!canEdit}>
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
