// Compressing a model version for a device, from its page: the form (target device, accuracy
// budget in points, time budget in minutes, methods), this version's compression jobs, and, for
// a version that is itself a compressed one, where it came from and the latency it was picked at.
import { CompressOutlined } from "@ant-design/icons";
import { Alert, Button, Card, Checkbox, Collapse, Form, InputNumber, Modal, Select, Space, Table, Tag, Typography } from "antd";
import { useEffect, useState } from "react";
import { useTranslation } from "react-i18next";
import { Link, useNavigate } from "react-router";

import {
  compressionMethodsFor,
  DEFAULT_ACCURACY_BUDGET_PT,
  DEFAULT_COMPRESSION_BUDGET_S,
  MAX_ACCURACY_BUDGET_PT,
  MAX_COMPRESSION_BUDGET_S,
  MIN_COMPRESSION_BUDGET_S,
  useCompressionJobs,
  useStartCompression,
  type CompressionJob,
  type CompressionMethod,
} from "../../api/queries/compression";
import { useDevices, type Device } from "../../api/queries/fleet";
import { useCanEdit } from "../../api/queries/projects";
import type { ModelVersion } from "../../api/queries/training";
import { useReportError } from "../../components/errors";
import { JobStatusTag } from "../../components/JobStatusTag";
import { EditorOnly } from "../../components/ReadOnly";
import { formatDate } from "../../format";
import { formatMs } from "../compression/candidates";
import { isTextTask } from "../training/textJob";
import { DeviceStatusBadge } from "../devices/DeploymentStateTag";
import { isDetectionTask } from "./headlineMetric";

/** The "no device" choice of the select (the API takes null). */
export const WORKER_CHOICE = "";

interface CompressValues {
  device_id: string;
  accuracy_budget_pt: number;
  /** minutes in the form; named after the API's field so that its field errors land here */
  budget_s: number;
  methods: CompressionMethod[];
}

function runtimeOf(device: Device): { onnxruntime?: string } {
  return (device.runtime && typeof device.runtime === "object" ? device.runtime : {}) as { onnxruntime?: string };
}

/**
 * The version's compression jobs and the button that opens the form. An object detector cannot be
 * compressed yet (the API answers 400): its card says so, with no button that would only fail.
 */
export function CompressCard({ projectId, version }: { projectId: string; version: ModelVersion }) {
  const { t } = useTranslation();
  if (isDetectionTask(version.task_type)) {
    return (
      <Card size="small" title={t("compression.card")} data-testid="compress-card">
        <Typography.Paragraph type="secondary" style={{ marginBottom: 0 }} data-testid="compress-unavailable">
          {t("compression.unavailableDetection")}
        </Typography.Paragraph>
      </Card>
    );
  }
  return <CompressJobsCard projectId={projectId} version={version} />;
}

function CompressJobsCard({ projectId, version }: { projectId: string; version: ModelVersion }) {
  const { t } = useTranslation();
  const [open, setOpen] = useState(false);
  const canEdit = useCanEdit(projectId);
  const jobs = useCompressionJobs(projectId, version.id);
  const rows = jobs.data?.results ?? [];
  return (
    <Card
      size="small"
      title={t("compression.card")}
      data-testid="compress-card"
      extra={
        <EditorOnly canEdit={canEdit}>
          <Button icon={<CompressOutlined />} onClick={() => setOpen(true)} disabled={!canEdit} data-testid="compress-button">
            {t("compression.compress")}
          </Button>
        </EditorOnly>
      }
    >
      <Typography.Paragraph type="secondary" style={{ marginBottom: rows.length ? 8 : 0 }}>
        {rows.length ? t("compression.cardIntro") : `${t("compression.cardIntro")} ${t("compression.noJobs")}`}
      </Typography.Paragraph>
      {rows.length > 0 && (
        <Table<CompressionJob>
          data-testid="compression-jobs"
          rowKey="id"
          size="small"
          pagination={false}
          dataSource={rows}
          columns={[
            { title: t("common.createdAt"), dataIndex: "created_at", render: (value: string) => formatDate(value) },
            { title: t("compression.status"), dataIndex: "status", render: (status: string) => <JobStatusTag status={status} /> },
            {
              title: t("compression.measuredOn"),
              dataIndex: "device_name",
              render: (name: string, job) => (job.device_id ? name || job.device_id.slice(0, 8) : t("compression.workerName")),
            },
            {
              title: t("compression.pick"),
              dataIndex: "picked",
              render: (picked: string, job) =>
                picked ? (
                  job.model_version ? (
                    <Link to={`/projects/${projectId}/models/versions/${job.model_version.id}`}>
                      {picked} → v{job.model_version.version}
                    </Link>
                  ) : (
                    picked
                  )
                ) : job.status === "SUCCEEDED" ? (
                  <Typography.Text type="secondary">{t("compression.noPick")}</Typography.Text>
                ) : (
                  t("compression.pending")
                ),
            },
            {
              title: "",
              key: "open",
              render: (_, job) => <Link to={`/projects/${projectId}/compression-jobs/${job.id}`}>{t("common.open")}</Link>,
            },
          ]}
        />
      )}
      <CompressModal projectId={projectId} version={version} open={open} onClose={() => setOpen(false)} />
    </Card>
  );
}

export function CompressModal({ projectId, version, open, onClose }: { projectId: string; version: ModelVersion; open: boolean; onClose: () => void }) {
  const { t } = useTranslation();
  const navigate = useNavigate();
  const reportError = useReportError();
  const [form] = Form.useForm<CompressValues>();
  const devices = useDevices(projectId, open ? 5000 : false);
  const start = useStartCompression(projectId);
  // a text classifier gets graph-level candidates only: no students to offer
  const methods = compressionMethodsFor(version.task_type);

  // the first online device, once the list arrives, unless the person already chose
  useEffect(() => {
    if (!open || !devices.data || form.isFieldTouched("device_id")) return;
    const online = devices.data.find((d) => d.status === "online");
    if (online && form.getFieldValue("device_id") === WORKER_CHOICE) form.setFieldValue("device_id", online.id);
  }, [open, devices.data, form]);

  const submit = (values: CompressValues) =>
    start.mutate(
      {
        source_model_version_id: version.id,
        device_id: values.device_id === WORKER_CHOICE ? null : values.device_id,
        accuracy_budget_pt: values.accuracy_budget_pt,
        budget_s: Math.round(values.budget_s * 60),
        methods: methods.filter((m) => values.methods.includes(m)),
      },
      {
        onSuccess: (job) => {
          onClose();
          void navigate(`/projects/${projectId}/compression-jobs/${job.id}`);
        },
        onError: (error) => reportError(error, form),
      },
    );

  const deviceOptions = [
    ...(devices.data ?? []).map((device) => {
      const runtime = runtimeOf(device).onnxruntime;
      return {
        value: device.id,
        label: (
          <Space size={4}>
            {device.name}
            <DeviceStatusBadge status={device.status} />
            <Typography.Text type="secondary" style={{ fontSize: 12 }}>
              {runtime ? t("compression.onnxruntime", { version: runtime }) : t("compression.runtimeUnknown")}
            </Typography.Text>
          </Space>
        ),
      };
    }),
    { value: WORKER_CHOICE, label: <span>{t("compression.worker")}</span> },
  ];

  return (
    <Modal
      open={open}
      title={t("compression.compressTitle", { name: version.model_name, version: version.version })}
      okText={t("compression.start")}
      okButtonProps={{ loading: start.isPending }}
      onOk={() => form.submit()}
      onCancel={onClose}
      cancelText={t("common.cancel")}
      width={600}
      forceRender
    >
      <Form<CompressValues>
        form={form}
        layout="vertical"
        onFinish={submit}
        initialValues={{
          device_id: WORKER_CHOICE,
          accuracy_budget_pt: DEFAULT_ACCURACY_BUDGET_PT,
          budget_s: DEFAULT_COMPRESSION_BUDGET_S / 60,
          methods: [...methods],
        }}
      >
        <Form.Item name="device_id" label={t("compression.device")} extra={t("compression.deviceHelp")}>
          <Select
            aria-label={t("compression.device")}
            options={deviceOptions}
            loading={devices.isLoading}
          />
        </Form.Item>
        <Form.Item
          name="accuracy_budget_pt"
          label={t("compression.accuracyBudget")}
          extra={<span data-testid="accuracy-help">{t(isTextTask(version.task_type) ? "compression.accuracyBudgetHelpText" : "compression.accuracyBudgetHelp")}</span>}
          rules={[{ required: true, type: "number", min: 0, max: MAX_ACCURACY_BUDGET_PT, message: `0 – ${MAX_ACCURACY_BUDGET_PT}` }]}
        >
          <InputNumber step={0.5} precision={1} style={{ width: 140 }} aria-label={t("compression.accuracyBudget")} />
        </Form.Item>
        <Form.Item
          name="budget_s"
          label={t("compression.timeBudget")}
          extra={t("compression.timeBudgetHelp")}
          rules={[
            {
              required: true,
              type: "number",
              min: MIN_COMPRESSION_BUDGET_S / 60,
              max: MAX_COMPRESSION_BUDGET_S / 60,
              message: t("compression.timeBudgetHelp"),
            },
          ]}
        >
          <InputNumber step={1} precision={0} style={{ width: 140 }} aria-label={t("compression.timeBudget")} />
        </Form.Item>
        <Collapse
          size="small"
          ghost
          items={[
            {
              key: "advanced",
              label: t("compression.advanced"),
              forceRender: true,
              children: (
                <Form.Item
                  name="methods"
                  label={t("compression.methods")}
                  rules={[{ required: true, type: "array", min: 1, message: t("compression.methodsRequired") }]}
                  style={{ marginBottom: 0 }}
                >
                  <Checkbox.Group>
                    <Space orientation="vertical" size={2}>
                      {methods.map((method) => (
                        <Checkbox key={method} value={method}>
                          {t(`compression.methodNames.${method}`)}
                        </Checkbox>
                      ))}
                    </Space>
                  </Checkbox.Group>
                </Form.Item>
              ),
            },
          ]}
        />
      </Form>
    </Modal>
  );
}

/** `manifest.lineage` of a compressed version (platform/sampan/compression/services.py). */
interface CompressedLineage {
  compressed_from?: { model_version_id?: string; version?: number };
  method?: string;
  candidate?: string;
  compression_job_id?: string;
}

export function compressedLineageOf(version: { manifest?: unknown }): CompressedLineage | null {
  const manifest = version.manifest && typeof version.manifest === "object" ? (version.manifest as { lineage?: unknown }) : {};
  const lineage = manifest.lineage && typeof manifest.lineage === "object" ? (manifest.lineage as CompressedLineage) : null;
  return lineage?.compressed_from?.model_version_id ? lineage : null;
}

/** "Compressed from v1 (int8, int8)", the parent and the job as links, and the device latency it was picked at. */
export function CompressedFrom({ projectId, version }: { projectId: string; version: ModelVersion }) {
  const { t } = useTranslation();
  const lineage = compressedLineageOf(version);
  if (!lineage?.compressed_from) return null;
  const from = lineage.compressed_from;
  const metrics = (version.metrics && typeof version.metrics === "object" ? version.metrics : {}) as {
    device_latency?: { p50_ms?: number | null; p99_ms?: number | null } | null;
    measured_on?: string;
  };
  const p50 = metrics.device_latency?.p50_ms;
  const p99 = metrics.device_latency?.p99_ms;
  const device = metrics.measured_on && metrics.measured_on !== "compression worker" ? metrics.measured_on : t("compression.workerName");
  return (
    <Alert
      type="info"
      showIcon
      data-testid="compressed-from"
      title={
        <Space wrap size={4}>
          <Link to={`/projects/${projectId}/models/versions/${from.model_version_id}`} data-testid="parent-link">
            {t("compression.compressedFrom", { version: from.version ?? "?", method: lineage.method ?? "?", candidate: lineage.candidate ?? "?" })}
          </Link>
          {lineage.compression_job_id && (
            <>
              ·
              <Link to={`/projects/${projectId}/compression-jobs/${lineage.compression_job_id}`} data-testid="job-link">
                {t("compression.openJob")}
              </Link>
            </>
          )}
        </Space>
      }
      description={
        typeof p50 === "number" ? (
          <span data-testid="picked-latency">
            {typeof p99 === "number"
              ? t("compression.pickedAtP99", { p50: formatMs(p50), p99: formatMs(p99), device })
              : t("compression.pickedAt", { p50: formatMs(p50), device })}
          </span>
        ) : undefined
      }
      action={<Tag color="purple">{t("compression.compressedFromTitle")}</Tag>}
    />
  );
}
