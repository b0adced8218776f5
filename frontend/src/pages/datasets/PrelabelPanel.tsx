// "Pre-label with a model" on the dataset page: choose a model version of the dataset's task that
// shares a class with it (suggestions.ts), start a run over the unlabeled samples, follow its
// progress (polled every second) with Cancel, read what it did. Its suggestions then show in the
// gallery and the labeling panels, most uncertain first (platform/sampan/datasets/prelabel.py).
import { ThunderboltOutlined } from "@ant-design/icons";
import { useQueryClient } from "@tanstack/react-query";
import { Alert, Button, Form, Modal, Progress, Select, Slider, Space, Typography } from "antd";
import { useEffect, useMemo, useRef, useState, type ReactNode } from "react";
import { useTranslation } from "react-i18next";

import { datasetKeys, progressOf, TERMINAL_JOB_STATES, type Dataset } from "../../api/queries/datasets";
import { reportOf, useCancelPrelabel, usePrelabelJobs, useProjectModelVersions, useStartPrelabel, type ModelVersion, type PrelabelJob } from "../../api/queries/prelabel";
import { useCanEdit } from "../../api/queries/projects";
import { CancelJobButton } from "../../components/CancelJobButton";
import { useReportError } from "../../components/errors";
import { EditorOnly } from "../../components/ReadOnly";
import { compatibleVersions, sharedClasses } from "./suggestions";

/** The action beside `children` (the dataset's classes, one line), and the newest run's state below. */
export function PrelabelPanel({ projectId, dataset, children }: { projectId: string; dataset: Dataset; children?: ReactNode }) {
  const { t } = useTranslation();
  const canEdit = useCanEdit(projectId);
  const jobs = usePrelabelJobs(projectId, dataset.id);
  const [open, setOpen] = useState(false);
  const [dismissed, setDismissed] = useState<string | null>(null);
  const newest = jobs.data?.[0];
  const running = newest !== undefined && !TERMINAL_JOB_STATES.has(newest.status);

  // a run that ends changes the samples' suggestions and the gallery's default order. Watch
  // for a finished newest job not seen finished before: a run that ends before the jobs list
  // is polled again is never seen running (CI's worker pre-labeled 2 samples that fast, and
  // the gallery kept its old order)
  const queryClient = useQueryClient();
  const settled = useRef<string | null | undefined>(undefined);
  const finished = jobs.isSuccess ? (newest !== undefined && !running ? newest.id : null) : undefined;
  useEffect(() => {
    if (finished === undefined) return;
    if (settled.current !== undefined && finished !== null && finished !== settled.current) {
      void queryClient.invalidateQueries({ queryKey: datasetKeys.samples(projectId, dataset.id) });
      void queryClient.invalidateQueries({ queryKey: datasetKeys.detail(projectId, dataset.id) });
    }
    settled.current = finished;
  }, [finished, queryClient, projectId, dataset.id]);

  return (
    <Space orientation="vertical" size="small" style={{ width: "100%" }}>
      <div style={{ display: "flex", justifyContent: "space-between", alignItems: "center", gap: 12, flexWrap: "wrap" }}>
        <div style={{ minWidth: 0 }}>{children}</div>
        <EditorOnly canEdit={canEdit}>
          <Button icon={<ThunderboltOutlined />} onClick={() => setOpen(true)} disabled={!canEdit || running}>
            {t("prelabel.button")}
          </Button>
        </EditorOnly>
      </div>
      {newest && running && <RunningJob projectId={projectId} datasetId={dataset.id} job={newest} />}
      {newest && !running && dismissed !== newest.id && <EndedJob job={newest} onClose={() => setDismissed(newest.id)} />}
      {open && <PrelabelDialog projectId={projectId} dataset={dataset} onClose={() => setOpen(false)} />}
    </Space>
  );
}

function RunningJob({ projectId, datasetId, job }: { projectId: string; datasetId: string; job: PrelabelJob }) {
  const { t } = useTranslation();
  const cancel = useCancelPrelabel(projectId, datasetId, job.id);
  const progress = progressOf(job);
  return (
    <div data-testid="prelabel-job" style={{ display: "flex", gap: 12, alignItems: "center", maxWidth: 720 }}>
      <div style={{ flex: 1 }}>
        <Typography.Text>
          {t("prelabel.running", { model: job.model_version_label, done: progress.done ?? 0, total: progress.total ?? "…" })}
        </Typography.Text>
        <Progress percent={Math.floor(100 * (progress.fraction ?? 0))} status="active" size="small" />
      </div>
      <CancelJobButton projectId={projectId} cancel={cancel} label={t("prelabel.cancel")} confirm={t("prelabel.cancelConfirm")} />
    </div>
  );
}

function EndedJob({ job, onClose }: { job: PrelabelJob; onClose: () => void }) {
  const { t } = useTranslation();
  const report = reportOf(job);
  const counts = report.counts ?? {};
  const failed = report.failed ?? [];
  if (job.status === "FAILED") return <Alert type="error" showIcon closable onClose={onClose} data-testid="prelabel-job" title={t("prelabel.failed", { error: job.error })} />;
  const text =
    job.status === "CANCELLED"
      ? t("prelabel.cancelled", { done: counts.done ?? 0 })
      : t("prelabel.done", { model: job.model_version_label, count: counts.suggested_samples ?? 0, suggestions: counts.suggestions ?? 0 });
  return (
    <Alert
      type={job.status === "CANCELLED" ? "warning" : "success"}
      showIcon
      closable
      onClose={onClose}
      data-testid="prelabel-job"
      title={text}
      description={
        failed.length > 0 ? (
          <details>
            <summary>{t("prelabel.failedImages", { count: counts.failed ?? failed.length })}</summary>
            <ul style={{ margin: 0 }}>
              {failed.map((f) => (
                <li key={`${f.name}\u0000${f.reason}`}>
                  {f.name}: {f.reason}
                </li>
              ))}
            </ul>
          </details>
        ) : undefined
      }
    />
  );
}

/** The model version's score threshold from its manifest (detection), else 0.3. */
function manifestThreshold(version: ModelVersion | undefined): number {
  const detection = (version?.manifest as { detection?: { score_threshold?: number } } | undefined)?.detection;
  return typeof detection?.score_threshold === "number" ? detection.score_threshold : 0.3;
}

function PrelabelDialog({ projectId, dataset, onClose }: { projectId: string; dataset: Dataset; onClose: () => void }) {
  const { t } = useTranslation();
  const reportError = useReportError();
  const versions = useProjectModelVersions(projectId);
  const start = useStartPrelabel(projectId, dataset.id);
  const candidates = useMemo(() => compatibleVersions(versions.data ?? [], dataset), [versions.data, dataset]);
  const [chosenId, setChosenId] = useState<string | null>(null);
  const chosen = candidates.find((v) => v.id === chosenId) ?? candidates[0];
  const [threshold, setThreshold] = useState<number | null>(null);
  const detection = dataset.task_type === "object_detection";
  const shownThreshold = threshold ?? manifestThreshold(chosen);

  const submit = () => {
    if (!chosen) return;
    start.mutate(
      { model_version_id: chosen.id, ...(detection && threshold !== null ? { score_threshold: threshold } : {}) },
      { onSuccess: onClose, onError: (error) => reportError(error) },
    );
  };

  return (
    <Modal
      open
      title={t("prelabel.title")}
      onCancel={onClose}
      onOk={submit}
      okText={t("prelabel.start")}
      okButtonProps={{ disabled: !chosen }}
      confirmLoading={start.isPending}
    >
      <Typography.Paragraph type="secondary">{t("prelabel.intro")}</Typography.Paragraph>
      {versions.isSuccess && candidates.length === 0 ? (
        <Alert type="info" showIcon title={t("prelabel.noModels")} />
      ) : (
        <Form layout="vertical">
          <Form.Item label={t("prelabel.model")}>
            <Select
              aria-label={t("prelabel.model")}
              loading={versions.isPending}
              value={chosen?.id}
              onChange={(id: string) => {
                setChosenId(id);
                setThreshold(null);
              }}
              options={candidates.map((v) => ({ value: v.id, label: `${v.model_name} v${v.version}` }))}
            />
            {chosen && (
              <Typography.Text type="secondary" style={{ fontSize: 12 }}>
                {t("prelabel.shared", { classes: sharedClasses(chosen, dataset).join(", ") })}
              </Typography.Text>
            )}
          </Form.Item>
          {detection && chosen && (
            <Form.Item label={t("prelabel.threshold", { value: shownThreshold.toFixed(2) })}>
              <Slider min={0.05} max={0.95} step={0.05} value={shownThreshold} onChange={(value: number) => setThreshold(value)} />
            </Form.Item>
          )}
        </Form>
      )}
    </Modal>
  );
}
