// The Training section: a one-form wizard (dataset version, task, time budget, augmentation with a
// preview, model preference) and the jobs. A text version's wizard has no augmentation, mirroring
// or image-size choices (nothing of them applies to texts): it says what the text engine trains.
import type { TFunction } from "i18next";
import { ExperimentOutlined } from "@ant-design/icons";
import { Alert, Button, Card, Checkbox, Collapse, Empty, Form, Input, InputNumber, Radio, Segmented, Select, Space, Table, Typography } from "antd";
import { useEffect, useState } from "react";
import { useTranslation } from "react-i18next";
import { Link, useNavigate, useParams, useSearchParams } from "react-router";

import { useCanEdit } from "../../api/queries/projects";
import { useDatasets } from "../../api/queries/datasets";
import {
  useStartTraining,
  useTrainingJobs,
  type Augmentation,
  type ModelPreference,
  type StartTrainingRequest,
  type TrainingJob,
} from "../../api/queries/training";
import { minBudgetOf, useDatasetVersion, useDatasetVersions, statsOf } from "../../api/queries/versions";
import { ErrorAlert, useReportError } from "../../components/errors";
import { EditorOnly } from "../../components/ReadOnly";
import { formatDate } from "../../format";
import { formatDuration } from "./jobState";
import { JobStatusTag } from "../../components/JobStatusTag";
import { NotEvaluatedTag } from "../../components/NotEvaluatedTag";
import { headlineMetric, isDetectionTask, percent } from "../models/headlineMetric";
import { AugmentationChoice, AugmentationPreview, PreferenceCards } from "./WizardOptions";
import { isTextTask } from "./textJob";

/** Seconds. 90 s fine-tunes the digits demo to ~98 % on a 2-core CPU (docs/ENVIRONMENT.md). */
export const BUDGET_PRESETS = [30, 90, 300, 900] as const;
export const DEFAULT_BUDGET_S = 90;
/** The server's default upper limit (SAMPAN_TRAINING_MAX_BUDGET_S; a server set lower answers its own limit on submit); the lower one is the version's min_budget_s. */
const MAX_BUDGET_S = 24 * 3600;
const TASKS = ["image_classification", "object_detection", "text_classification"] as const;
const SUPPORTED_TASKS = new Set<string>(["image_classification", "text_classification"]);

interface WizardValues {
  dataset_id?: string;
  dataset_version_id?: string;
  task_type: string;
  budget_s: number;
  seed: number;
  model_name?: string;
  augmentation: Augmentation;
  model_preference: ModelPreference;
  /** "never mirror the images" ticked: the job's allow_flips is false */
  never_flip?: boolean;
}

export function TrainingPage() {
  const { t } = useTranslation();
  return (
    <Space orientation="vertical" size="middle" style={{ width: "100%" }}>
      <Typography.Title level={3} style={{ margin: 0 }}>
        {t("training.title")}
      </Typography.Title>
      <TrainingWizard />
      <TrainingJobsTable />
    </Space>
  );
}

function TrainingWizard() {
  const { t } = useTranslation();
  const { projectId = "" } = useParams();
  const [params] = useSearchParams();
  const navigate = useNavigate();
  const reportError = useReportError();
  const [form] = Form.useForm<WizardValues>();
  const canEdit = useCanEdit(projectId);
  const datasets = useDatasets(projectId);
  const datasetId = Form.useWatch("dataset_id", form);
  const versionId = Form.useWatch("dataset_version_id", form);
  const taskType = Form.useWatch("task_type", form);
  const budget = Form.useWatch("budget_s", form) ?? DEFAULT_BUDGET_S;
  const augmentation = Form.useWatch("augmentation", form) ?? "auto";
  const versions = useDatasetVersions(projectId, datasetId);
  const preset = useDatasetVersion(projectId, params.get("version") ?? undefined);
  const start = useStartTraining(projectId);
  const [prefilled, setPrefilled] = useState(false);

  // ?version=<id> (from a version's page): preselect its dataset and the version
  useEffect(() => {
    if (prefilled || !preset.data) return;
    form.setFieldsValue({ dataset_id: preset.data.dataset_id, dataset_version_id: preset.data.id });
    setPrefilled(true);
  }, [preset.data, prefilled, form]);

  // no ?version=: preselect the first dataset, so a project with one dataset needs no picking
  useEffect(() => {
    if (params.get("version") || !datasets.data?.length || form.getFieldValue("dataset_id")) return;
    form.setFieldValue("dataset_id", datasets.data[0]!.id);
  }, [datasets.data, params, form]);

  // a dataset picked by hand: preselect its newest version
  useEffect(() => {
    const list = versions.data;
    if (!list || list.length === 0) return;
    const current = form.getFieldValue("dataset_version_id") as string | undefined;
    if (!current || !list.some((v) => v.id === current)) {
      const newest = list.reduce((a, b) => (b.number > a.number ? b : a));
      form.setFieldValue("dataset_version_id", newest.id);
    }
  }, [versions.data, form]);

  const version = versions.data?.find((v) => v.id === versionId);

  // a version of a task the wizard trains: that task (a text version needs no second click)
  useEffect(() => {
    if (version && SUPPORTED_TASKS.has(version.task_type) && form.getFieldValue("task_type") !== version.task_type) {
      form.setFieldValue("task_type", version.task_type);
    }
  }, [version, form]);

  const versionTaskMismatch = version && taskType && version.task_type !== taskType;
  // texts: no augmentation, flips or image sizes; the budget's minimum counts texts, not pixels.
  // The version's task, else (while the versions load) its dataset's, so that no image option
  // shows, nor a preview fetches, for a text version in between
  const knownTask =
    version?.task_type ??
    (preset.data && preset.data.id === versionId ? preset.data.task_type : undefined) ??
    datasets.data?.find((d) => d.id === datasetId)?.task_type;
  const text = isTextTask(knownTask ?? taskType);
  const supported = SUPPORTED_TASKS.has(taskType ?? "");
  // the version's shortest accepted budget (API: min_budget_s), when it says
  const minBudget = minBudgetOf(version);

  // a version that needs more than the budget: a budget typed by hand is checked again (and
  // refused with the reason), an untouched default is raised to the smallest preset that fits
  useEffect(() => {
    if (minBudget === undefined) return;
    if (form.isFieldTouched("budget_s")) void form.validateFields(["budget_s"]).catch(() => undefined);
    else if (((form.getFieldValue("budget_s") as number | undefined) ?? 0) < minBudget) {
      form.setFieldValue("budget_s", BUDGET_PRESETS.find((s) => s >= minBudget) ?? minBudget);
    }
  }, [minBudget, form]);

  const submit = (values: WizardValues) => {
    if (!values.dataset_version_id) return;
    const body: StartTrainingRequest = {
      dataset_version_id: values.dataset_version_id,
      budget_s: values.budget_s,
      seed: values.seed,
      // the image options mean nothing to the text engine: not sent for a text version
      ...(text ? {} : { augmentation: values.augmentation, model_preference: values.model_preference, allow_flips: !values.never_flip }),
      ...(values.model_name?.trim() ? { model_name: values.model_name.trim() } : {}),
    };
    start.mutate(
      body,
      {
        onSuccess: (job) => void navigate(`/projects/${projectId}/training/${job.id}`),
        onError: (error) => reportError(error, form),
      },
    );
  };

  return (
    <Card size="small" title={t("training.newJob")}>
      {datasets.isError && <ErrorAlert error={datasets.error} onRetry={() => void datasets.refetch()} />}
      <Form<WizardValues>
        form={form}
        layout="horizontal"
        labelCol={{ flex: "160px" }}
        style={{ maxWidth: 980 }}
        initialValues={{
          task_type: "image_classification",
          budget_s: DEFAULT_BUDGET_S,
          seed: 0,
          augmentation: "auto",
          model_preference: "more_accurate",
        }}
        onFinish={submit}
        scrollToFirstError={{ focus: true }}
      >
        <Form.Item label={t("training.step1")} required style={{ marginBottom: 0 }}>
          <Space wrap>
            <Form.Item name="dataset_id" rules={[{ required: true, message: t("training.pickDataset") }]}>
              <Select
                aria-label={t("training.dataset")}
                placeholder={t("training.dataset")}
                style={{ width: 220 }}
                loading={datasets.isPending}
                options={(datasets.data ?? []).map((d) => ({ value: d.id, label: d.name }))}
                onChange={() => form.setFieldValue("dataset_version_id", undefined)}
              />
            </Form.Item>
            <Form.Item name="dataset_version_id" rules={[{ required: true, message: t("training.pickVersion") }]}>
              <Select
                aria-label={t("training.version")}
                placeholder={t("training.version")}
                style={{ width: 280 }}
                disabled={!datasetId}
                loading={versions.isFetching}
                notFoundContent={datasetId ? t("training.noVersions") : undefined}
                options={(versions.data ?? []).map((v) => ({
                  value: v.id,
                  label: t("training.versionOption", {
                    number: v.number,
                    samples: statsOf(v).samples,
                    classes: v.labels.length,
                  }),
                }))}
              />
            </Form.Item>
          </Space>
        </Form.Item>
        {datasetId && versions.data?.length === 0 && (
          <Form.Item label=" " colon={false}>
            <Alert
              type="info"
              showIcon
              title={t("training.noVersions")}
              action={
                <Link to={`/projects/${projectId}/datasets/${datasetId}?tab=versions`}>{t("training.freezeOne")}</Link>
              }
            />
          </Form.Item>
        )}
        {versions.isError && <ErrorAlert error={versions.error} onRetry={() => void versions.refetch()} />}
        <Form.Item name="task_type" label={t("training.step2")}>
          <Radio.Group
            options={TASKS.map((task) => ({
              value: task,
              label: SUPPORTED_TASKS.has(task)
                ? t(`datasets.taskTypes.${task}`)
                : `${t(`datasets.taskTypes.${task}`)} (${t("training.later")})`,
              disabled: !SUPPORTED_TASKS.has(task),
            }))}
          />
        </Form.Item>
        {versionTaskMismatch && (
          <Form.Item label=" " colon={false}>
            <Alert type="warning" showIcon title={t("training.taskMismatch")} />
          </Form.Item>
        )}
        <Form.Item label={t("training.step3")} tooltip={t("training.budgetHint")} required>
          <Space wrap>
            <Segmented
              aria-label={t("training.budget")}
              value={(BUDGET_PRESETS as readonly number[]).includes(budget) ? budget : undefined}
              onChange={(value) => form.setFieldValue("budget_s", value)}
              options={BUDGET_PRESETS.map((s) => ({ value: s, label: formatDuration(s), disabled: minBudget !== undefined && s < minBudget }))}
            />
            {/* no min/max on the input: it would clamp 0 to 10 s without a word; the rule says why */}
            <Form.Item
              name="budget_s"
              noStyle
              rules={[budgetRule(t, minBudget, text)]}
            >
              <InputNumber precision={0} suffix={t("training.seconds")} style={{ width: 130 }} aria-label={t("training.budget")} />
            </Form.Item>
            {minBudget !== undefined && (
              <Typography.Text type="secondary" data-testid="min-budget">
                {t("training.minBudget", { min: formatDuration(minBudget) })}
              </Typography.Text>
            )}
          </Space>
        </Form.Item>
        {text ? (
          <Form.Item label={t("training.text.step4")}>
            <Typography.Text type="secondary" data-testid="text-model-note" style={{ display: "block", maxWidth: 720, paddingTop: 5 }}>
              {t("training.text.modelNote")}
            </Typography.Text>
          </Form.Item>
        ) : (
          <>
            <Form.Item label={t("training.step4")} style={{ marginBottom: 8 }}>
              <Space align="start" wrap size="large">
                <Space orientation="vertical" size={4}>
                  <Form.Item name="augmentation" noStyle>
                    <AugmentationChoice />
                  </Form.Item>
                  <Form.Item name="never_flip" valuePropName="checked" noStyle>
                    <Checkbox data-testid="never-flip">{t("training.neverFlip")}</Checkbox>
                  </Form.Item>
                </Space>
                <AugmentationPreview projectId={projectId} datasetId={datasetId} versionId={version?.id} preset={augmentation} />
              </Space>
            </Form.Item>
            <Form.Item name="model_preference" label={t("training.step5")}>
              <PreferenceCards shorterSide={version ? statsOf(version).shorter_side_median : undefined} />
            </Form.Item>
          </>
        )}
        <Form.Item label=" " colon={false}>
          <Collapse
            size="small"
            ghost
            items={[
              {
                key: "advanced",
                label: t("training.advanced"),
                forceRender: true,
                children: (
                  <Space wrap>
                    <Form.Item name="model_name" label={t("training.modelName")} tooltip={t("training.modelNameHint")} style={{ marginBottom: 0 }}>
                      <Input maxLength={200} style={{ width: 200 }} />
                    </Form.Item>
                    <Form.Item name="seed" label={t("versions.seed")} style={{ marginBottom: 0 }}>
                      <InputNumber min={0} precision={0} style={{ width: 100 }} />
                    </Form.Item>
                  </Space>
                ),
              },
            ]}
          />
        </Form.Item>
        <Form.Item label=" " colon={false}>
          <EditorOnly canEdit={canEdit}>
            <Button
              type="primary"
              htmlType="submit"
              icon={<ExperimentOutlined />}
              loading={start.isPending}
              disabled={!canEdit || !supported || Boolean(versionTaskMismatch)}
            >
              {t("training.start")}
            </Button>
          </EditorOnly>
        </Form.Item>
      </Form>
    </Card>
  );
}

/**
 * The one rule on the budget: at least the version's min_budget_s (rounded up; 1 s while the
 * version does not say) and at most 24 h, with one message saying both (for a text version, how
 * its minimum counts texts).
 */
export function budgetRule(t: TFunction, minBudget: number | undefined, text = false) {
  const min = minBudget ?? 1;
  const message = t(minBudget === undefined ? "training.budgetRange" : text ? "training.text.budgetRangeVersion" : "training.budgetRangeVersion", {
    min: formatDuration(min),
    max: formatDuration(MAX_BUDGET_S),
  });
  return {
    validator: (_: unknown, value: unknown) =>
      typeof value === "number" && value >= min && value <= MAX_BUDGET_S ? Promise.resolve() : Promise.reject(new Error(message)),
  };
}

function TrainingJobsTable() {
  const { t } = useTranslation();
  const { projectId = "" } = useParams();
  const [page, setPage] = useState(1);
  const pageSize = 20;
  const jobs = useTrainingJobs(projectId, page, pageSize);

  if (jobs.isError) return <ErrorAlert error={jobs.error} onRetry={() => void jobs.refetch()} />;
  // classifiers are judged by accuracy, detectors by mAP@0.5: the column says which this page
  // holds, and when it holds both each detector's figure says it is an mAP
  const detectors = (jobs.data?.results ?? []).map((job) => isDetectionTask(job.task_type));
  const mixed = detectors.includes(true) && detectors.includes(false);
  const columnTitle = !detectors.includes(true)
    ? t("training.accuracyColumn")
    : mixed
      ? t("training.accuracyOrMapColumn")
      : t("report.detection.map50");
  return (
    <Card size="small" title={t("training.jobs")}>
      <Table<TrainingJob>
        rowKey="id"
        size="small"
        data-testid="training-jobs"
        loading={jobs.isPending}
        dataSource={jobs.data?.results}
        locale={{ emptyText: <Empty description={t("training.noJobs")} /> }}
        pagination={{ current: page, pageSize, total: jobs.data?.count ?? 0, onChange: setPage, showSizeChanger: false, hideOnSinglePage: true }}
        columns={[
          {
            title: t("training.job"),
            render: (_, job) => (
              <Space size={4}>
                <Link to={`/projects/${projectId}/training/${job.id}`}>{job.model_name || job.id.slice(0, 8)}</Link>
                <Typography.Text type="secondary" style={{ fontSize: 12 }}>
                  {job.id.slice(0, 8)}
                </Typography.Text>
              </Space>
            ),
          },
          { title: t("training.status"), dataIndex: "status", render: (status: string) => <JobStatusTag status={status} /> },
          { title: t("training.budget"), dataIndex: "budget_s", render: (s: number) => formatDuration(s) },
          {
            // on the test split when the report used it, else on validation: each row says which
            title: columnTitle,
            render: (_, job) => {
              const headline = headlineMetric(job);
              if (!headline) return "";
              return (
                <span data-testid="job-accuracy" title={t(headline.labelKey)}>
                  {percent(headline.value)}{" "}
                  <Typography.Text type="secondary" style={{ fontSize: 12 }}>
                    {mixed && headline.kind === "map50"
                      ? t("training.mapSplitShort", { split: t(`training.splitShort.${headline.split}`) })
                      : t(`training.splitShort.${headline.split}`)}
                  </Typography.Text>
                  <NotEvaluatedTag headline={headline} />
                </span>
              );
            },
          },
          { title: t("common.createdAt"), dataIndex: "created_at", render: (value: string) => formatDate(value) },
        ]}
      />
    </Card>
  );
}
