// Rollouts: the project's rollouts, newest first (refreshed every 10 s while any is rolling), and
// "New rollout", a form that sends one model version to devices in batches — a canary first —
// with the thresholds that roll it back. `?new` opens the form (`?new&version=<id>` with the
// version picked), so other pages can link to it.
import { CheckCircleOutlined, CloseCircleOutlined, RocketOutlined, SyncOutlined } from "@ant-design/icons";
import { Alert, Button, Collapse, Form, InputNumber, Modal, Radio, Select, Space, Table, Tag, Typography } from "antd";
import { useEffect, useMemo } from "react";
import { useTranslation } from "react-i18next";
import { Link, useNavigate, useParams, useSearchParams } from "react-router";

import { fleetTags, useDevices, type Device, type ModelVersionRef } from "../../api/queries/fleet";
import { useProjectModelVersions } from "../../api/queries/prelabel";
import { useCanEdit } from "../../api/queries/projects";
import {
  ROLLOUT_DEFAULTS,
  ROLLOUT_STRATEGIES,
  useCreateRollout,
  useRollouts,
  type Rollout,
  type RolloutInput,
  type RolloutState,
  type RolloutStrategy,
} from "../../api/queries/rollouts";
import { ErrorAlert, useReportError } from "../../components/errors";
import { EditorOnly } from "../../components/ReadOnly";
import { formatDate } from "../../format";

const STATE_COLORS: Record<RolloutState, string> = { rolling: "processing", completed: "success", rolled_back: "error" };
const STATE_ICONS: Record<RolloutState, React.ReactNode> = {
  rolling: <SyncOutlined spin />,
  completed: <CheckCircleOutlined />,
  rolled_back: <CloseCircleOutlined />,
};

export function RolloutStateTag({ state }: { state: RolloutState }) {
  const { t } = useTranslation();
  return (
    <Tag color={STATE_COLORS[state]} icon={STATE_ICONS[state]}>
      {t(`rollouts.states.${state}`)}
    </Tag>
  );
}

export function versionLabel(version: ModelVersionRef): string {
  return `${version.model_name} v${version.version}`;
}

/** "Canary" for batch 0 of a canary rollout, "All devices" for the one batch of an all-at-once one, else "Batch n". */
export function useBatchName(): (strategy: RolloutStrategy, batch: number) => string {
  const { t } = useTranslation();
  return (strategy, batch) => (strategy === "all" ? t("rollouts.allAtOnceBatch") : batch === 0 ? t("rollouts.canary") : t("rollouts.batchN", { n: batch }));
}

type Target = "all" | "tag" | "devices";
type CanaryUnit = "devices" | "percent";

/** The form's values; `max_error_rate_increase` is in percentage points here (the API's is a fraction). */
export interface RolloutFormValues {
  model_version_id: string;
  target: Target;
  tag?: string;
  device_ids?: string[];
  strategy: RolloutStrategy;
  canary_unit: CanaryUnit;
  canary_devices?: number;
  canary_percent?: number;
  batch_size: number;
  observe_minutes: number;
  max_error_rate_increase: number;
  max_latency_ratio: number;
  max_confidence_drop: number;
  max_restarts: number;
  min_requests: number;
}

/** The POST body of the form's values: one of tag / device_ids (neither: every device), one canary size (none for "all"). */
export function rolloutBody(values: RolloutFormValues): RolloutInput {
  const canary = values.strategy === "canary";
  return {
    model_version_id: values.model_version_id,
    ...(values.target === "tag" && values.tag ? { tag: values.tag } : {}),
    ...(values.target === "devices" ? { device_ids: values.device_ids ?? [] } : {}),
    strategy: values.strategy,
    ...(canary && values.canary_unit === "percent" && values.canary_percent != null ? { canary_percent: values.canary_percent } : {}),
    ...(canary && values.canary_unit === "devices" && values.canary_devices != null ? { canary_devices: values.canary_devices } : {}),
    batch_size: canary ? values.batch_size : 0,
    observe_minutes: values.observe_minutes,
    // percentage points -> a fraction of requests, without 0.07 becoming 0.07000000000000001
    max_error_rate_increase: Number((values.max_error_rate_increase / 100).toFixed(6)),
    max_latency_ratio: values.max_latency_ratio,
    max_confidence_drop: values.max_confidence_drop,
    max_restarts: values.max_restarts,
    min_requests: values.min_requests,
  };
}

/** Devices per batch (index 0 first) as the API splits `count` devices (fleet/rollouts.py `_batches`). */
export function planBatches(count: number, strategy: RolloutStrategy, canary: number, batchSize: number): number[] {
  if (count <= 0) return [];
  if (strategy === "all") return [count];
  const first = count > 1 ? Math.min(Math.max(1, canary), count - 1) : 1;
  const rest = count - first;
  const size = batchSize || rest || 1;
  const sizes = [first];
  for (let left = rest; left > 0; left -= size) sizes.push(Math.min(size, left));
  return sizes;
}

const INITIAL: Omit<RolloutFormValues, "model_version_id"> = {
  target: "all",
  strategy: "canary",
  canary_unit: "devices",
  canary_devices: 1,
  canary_percent: 10,
  batch_size: 0,
  observe_minutes: ROLLOUT_DEFAULTS.observe_minutes,
  max_error_rate_increase: ROLLOUT_DEFAULTS.max_error_rate_increase * 100,
  max_latency_ratio: ROLLOUT_DEFAULTS.max_latency_ratio,
  max_confidence_drop: ROLLOUT_DEFAULTS.max_confidence_drop,
  max_restarts: ROLLOUT_DEFAULTS.max_restarts,
  min_requests: ROLLOUT_DEFAULTS.min_requests,
};

function targetDevices(devices: readonly Device[], target: Target | undefined, tag: string | undefined, ids: string[] | undefined): number {
  if (target === "tag") return tag ? devices.filter((d) => d.tags.includes(tag)).length : 0;
  if (target === "devices") return ids?.length ?? 0;
  return devices.length;
}

function NewRolloutDialog({ projectId, open, versionId, onClose }: { projectId: string; open: boolean; versionId: string | null; onClose: () => void }) {
  const { t } = useTranslation();
  const navigate = useNavigate();
  const reportError = useReportError();
  const batchName = useBatchName();
  const [form] = Form.useForm<RolloutFormValues>();
  const versions = useProjectModelVersions(projectId, open);
  const devices = useDevices(projectId, open ? 5000 : false);
  const create = useCreateRollout(projectId);
  const target = Form.useWatch("target", form);
  const tag = Form.useWatch("tag", form);
  const deviceIds = Form.useWatch("device_ids", form);
  const strategy = Form.useWatch("strategy", form);
  const canaryUnit = Form.useWatch("canary_unit", form);
  const canaryDevices = Form.useWatch("canary_devices", form);
  const canaryPercent = Form.useWatch("canary_percent", form);
  const batchSize = Form.useWatch("batch_size", form);

  const versionOptions = useMemo(
    () =>
      [...(versions.data ?? [])]
        .sort((a, b) => b.created_at.localeCompare(a.created_at))
        .map((v) => ({ value: v.id, label: versionLabel(v) })),
    [versions.data],
  );
  const tags = fleetTags(devices.data);

  // ?version=<id>: that version picked once the list has it
  useEffect(() => {
    if (open && versionId && versions.data?.some((v) => v.id === versionId) && !form.getFieldValue("model_version_id")) {
      form.setFieldValue("model_version_id", versionId);
    }
  }, [open, versionId, versions.data, form]);

  const count = targetDevices(devices.data ?? [], target, tag, deviceIds);
  const canary = canaryUnit === "percent" ? Math.ceil((count * (canaryPercent ?? 0)) / 100) : (canaryDevices ?? 1);
  const plan = planBatches(count, strategy ?? "canary", canary, batchSize ?? 0);

  const submit = (values: RolloutFormValues) =>
    create.mutate(rolloutBody(values), {
      onSuccess: (rollout) => {
        form.resetFields();
        void navigate(`/projects/${projectId}/rollouts/${rollout.id}`);
      },
      onError: (error) => reportError(error, form),
    });

  const unit = (text: string) => <Typography.Text type="secondary">{text}</Typography.Text>;

  return (
    <Modal
      open={open}
      title={t("rollouts.newTitle")}
      width={760}
      okText={t("rollouts.start")}
      okButtonProps={{ loading: create.isPending, icon: <RocketOutlined /> }}
      onOk={() => form.submit()}
      onCancel={onClose}
      cancelText={t("common.cancel")}
      forceRender
    >
      <Typography.Paragraph type="secondary">{t("rollouts.newIntro")}</Typography.Paragraph>
      {versions.isError && <ErrorAlert error={versions.error} onRetry={() => void versions.refetch()} />}
      {devices.isError && <ErrorAlert error={devices.error} onRetry={() => void devices.refetch()} />}
      <Form<RolloutFormValues> form={form} layout="horizontal" labelCol={{ flex: "170px" }} initialValues={INITIAL} onFinish={submit}>
        <Form.Item name="model_version_id" label={t("rollouts.modelVersion")} rules={[{ required: true, message: t("rollouts.pickVersion") }]}>
          <Select
            showSearch={{ optionFilterProp: "label" }}
            placeholder={t("rollouts.pickVersion")}
            loading={versions.isPending}
            options={versionOptions}
            notFoundContent={versions.isSuccess ? t("rollouts.noVersions") : undefined}
          />
        </Form.Item>
        <Form.Item name="target" label={t("rollouts.target")}>
          <Radio.Group
            options={[
              { value: "all", label: t("rollouts.targets.all") },
              { value: "tag", label: t("rollouts.targets.tag"), disabled: tags.length === 0 },
              { value: "devices", label: t("rollouts.targets.devices") },
            ]}
          />
        </Form.Item>
        {target === "tag" && (
          <Form.Item name="tag" label={t("devices.tags")} rules={[{ required: true, message: t("rollouts.pickTag") }]}>
            <Select placeholder={t("rollouts.pickTag")} options={tags.map((value) => ({ value, label: value }))} />
          </Form.Item>
        )}
        {target === "devices" && (
          <Form.Item name="device_ids" label={t("rollouts.devices")} rules={[{ required: true, message: t("rollouts.pickDevices") }]}>
            <Select
              mode="multiple"
              placeholder={t("rollouts.pickDevices")}
              optionFilterProp="label"
              loading={devices.isPending}
              options={(devices.data ?? []).map((d) => ({ value: d.id, label: d.name }))}
            />
          </Form.Item>
        )}
        <Form.Item name="strategy" label={t("rollouts.strategy")} extra={t(`rollouts.strategyHelp.${strategy ?? "canary"}`)}>
          <Radio.Group options={ROLLOUT_STRATEGIES.map((value) => ({ value, label: t(`rollouts.strategies.${value}`) }))} />
        </Form.Item>
        {strategy !== "all" && (
          <>
            <Form.Item label={t("rollouts.canarySize")} extra={t("rollouts.canarySizeHelp")} required>
              <Space.Compact>
                {canaryUnit === "percent" ? (
                  <Form.Item name="canary_percent" noStyle rules={[{ required: true, message: t("common.required") }]}>
                    <InputNumber aria-label={t("rollouts.canarySize")} min={0.1} max={99.9} step={5} style={{ width: 120 }} />
                  </Form.Item>
                ) : (
                  <Form.Item name="canary_devices" noStyle rules={[{ required: true, message: t("common.required") }]}>
                    <InputNumber aria-label={t("rollouts.canarySize")} min={1} max={1000} precision={0} style={{ width: 120 }} />
                  </Form.Item>
                )}
                <Form.Item name="canary_unit" noStyle>
                  <Select
                    aria-label={t("rollouts.canaryUnit")}
                    style={{ width: 120 }}
                    options={[
                      { value: "devices", label: t("rollouts.units.devices") },
                      { value: "percent", label: "%" },
                    ]}
                  />
                </Form.Item>
              </Space.Compact>
            </Form.Item>
            <Form.Item name="batch_size" label={t("rollouts.batchSize")} extra={t("rollouts.batchSizeHelp")}>
              <InputNumber min={0} max={1000} precision={0} suffix={t("rollouts.units.devices")} style={{ width: 160 }} />
            </Form.Item>
          </>
        )}
        <Form.Item name="observe_minutes" label={t("rollouts.observe")} extra={t("rollouts.observeHelp")} rules={[{ required: true }]}>
          <InputNumber min={0} max={7 * 24 * 60} suffix={t("rollouts.units.minutes")} style={{ width: 160 }} />
        </Form.Item>
        {plan.length > 0 && (
          <Form.Item label={t("rollouts.plan")}>
            <Space size={[4, 4]} wrap data-testid="rollout-plan">
              <Typography.Text>{t("rollouts.planDevices", { count })}:</Typography.Text>
              {plan.map((size, batch) => (
                <Tag key={batch}>
                  {batchName(strategy ?? "canary", batch)} · {size}
                </Tag>
              ))}
            </Space>
          </Form.Item>
        )}
        {devices.data && devices.data.length === 0 && <Alert type="warning" showIcon title={t("rollouts.noDevices")} style={{ marginBottom: 16 }} />}
        <Collapse
          size="small"
          items={[
            {
              key: "thresholds",
              label: t("rollouts.thresholds"),
              forceRender: true,
              children: (
                <>
                  <Typography.Paragraph type="secondary">{t("rollouts.thresholdsIntro")}</Typography.Paragraph>
                  <Form.Item name="max_error_rate_increase" label={t("rollouts.threshold.errorRate")} extra={t("rollouts.threshold.errorRateHelp")} rules={[{ required: true }]}>
                    <InputNumber min={0} max={100} step={0.5} prefix="+" suffix={t("rollouts.units.percentPoints")} style={{ width: 180 }} />
                  </Form.Item>
                  <Form.Item name="max_latency_ratio" label={t("rollouts.threshold.latency")} extra={t("rollouts.threshold.latencyHelp")} rules={[{ required: true }]}>
                    <InputNumber min={1} max={100} step={0.1} suffix="×" style={{ width: 180 }} />
                  </Form.Item>
                  <Form.Item name="max_confidence_drop" label={t("rollouts.threshold.confidence")} extra={t("rollouts.threshold.confidenceHelp")} rules={[{ required: true }]}>
                    <InputNumber min={0} max={1} step={0.05} prefix="−" suffix={unit("0–1")} style={{ width: 180 }} />
                  </Form.Item>
                  <Form.Item name="max_restarts" label={t("rollouts.threshold.restarts")} extra={t("rollouts.threshold.restartsHelp")} rules={[{ required: true }]}>
                    <InputNumber min={0} max={1000} precision={0} suffix={t("rollouts.units.restarts")} style={{ width: 180 }} />
                  </Form.Item>
                  <Form.Item
                    name="min_requests"
                    label={t("rollouts.threshold.minRequests")}
                    extra={t("rollouts.threshold.minRequestsHelp")}
                    rules={[{ required: true }]}
                    style={{ marginBottom: 0 }}
                  >
                    <InputNumber min={1} precision={0} suffix={t("rollouts.units.requests")} style={{ width: 180 }} />
                  </Form.Item>
                </>
              ),
            },
          ]}
        />
      </Form>
    </Modal>
  );
}

export function RolloutsPage() {
  const { t } = useTranslation();
  const { projectId = "" } = useParams();
  const navigate = useNavigate();
  const [params, setParams] = useSearchParams();
  const canEdit = useCanEdit(projectId);
  const rollouts = useRollouts(projectId);
  const open = params.has("new");
  if (rollouts.isError) return <ErrorAlert error={rollouts.error} onRetry={() => void rollouts.refetch()} />;
  return (
    <Space orientation="vertical" size="middle" style={{ width: "100%" }}>
      <Space style={{ width: "100%", justifyContent: "space-between" }} wrap>
        <Typography.Title level={3} style={{ margin: 0 }}>
          {t("nav.rollouts")}
        </Typography.Title>
        <EditorOnly canEdit={canEdit}>
          <Button type="primary" icon={<RocketOutlined />} disabled={!canEdit} onClick={() => setParams({ new: "1" }, { replace: true })}>
            {t("rollouts.new")}
          </Button>
        </EditorOnly>
      </Space>
      <Typography.Text type="secondary">{t("rollouts.intro")}</Typography.Text>
      <Table<Rollout>
        data-testid="rollouts-table"
        rowKey="id"
        size="small"
        pagination={{ pageSize: 20, hideOnSinglePage: true }}
        loading={rollouts.isLoading}
        dataSource={rollouts.data ?? []}
        locale={{ emptyText: t("rollouts.empty") }}
        onRow={(rollout) => ({ onClick: () => void navigate(`/projects/${projectId}/rollouts/${rollout.id}`), style: { cursor: "pointer" } })}
        columns={[
          {
            title: t("rollouts.modelVersion"),
            key: "version",
            render: (_, r) => (
              <Link to={`/projects/${projectId}/rollouts/${r.id}`} onClick={(e) => e.stopPropagation()}>
                {versionLabel(r.model_version)}
              </Link>
            ),
          },
          {
            title: t("rollouts.strategy"),
            dataIndex: "strategy",
            render: (strategy: RolloutStrategy, r) => (
              <Space size={4} wrap>
                {t(`rollouts.strategies.${strategy}`)}
                {r.tag && <Tag>{r.tag}</Tag>}
              </Space>
            ),
          },
          { title: t("rollouts.state"), dataIndex: "state", render: (state: RolloutState) => <RolloutStateTag state={state} /> },
          {
            title: t("rollouts.progress"),
            key: "progress",
            render: (_, r) => <span title={t("rollouts.progressHint")}>{`${r.devices_running} / ${r.devices_total}`}</span>,
          },
          { title: t("rollouts.batch"), key: "batch", render: (_, r) => `${r.current_batch + 1} / ${r.batches}` },
          { title: t("common.createdAt"), dataIndex: "created_at", render: (value: string) => formatDate(value) },
          {
            title: t("rollouts.reason"),
            dataIndex: "reason",
            render: (reason: string, r) =>
              r.state === "rolled_back" && reason ? (
                <Typography.Text type="danger" ellipsis={{ tooltip: reason }} style={{ maxWidth: 360 }}>
                  {reason}
                </Typography.Text>
              ) : (
                "—"
              ),
          },
        ]}
      />
      <NewRolloutDialog projectId={projectId} open={open} versionId={params.get("version")} onClose={() => setParams({}, { replace: true })} />
    </Space>
  );
}
