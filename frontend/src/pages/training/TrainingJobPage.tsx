// One training job, live: status, phase, epoch, a progress bar with time left, loss and
// validation curves fed by the websocket (polling every 2 s while the socket is down), cancel;
// then the links to its report and model version, or the server's error.
import type { TFunction } from "i18next";
import { useQueryClient } from "@tanstack/react-query";
import { Alert, Breadcrumb, Card, Descriptions, Progress, Skeleton, Space, Statistic, Tag, Tooltip, Typography } from "antd";
import { useCallback, useEffect, useMemo, useState } from "react";
import { useTranslation } from "react-i18next";
import { Link, useParams } from "react-router";

import { NotEvaluatedTag } from "../../components/NotEvaluatedTag";
import { recipeOf, trainingKeys, useCancelTraining, useModelVersion, useTrainingJob, type TrainingJob } from "../../api/queries/training";
import { Chart } from "../../components/charts/Chart";
import { DatasetVersionLink } from "../../components/DatasetVersionLink";
import { ErrorAlert } from "../../components/errors";
import { CancelJobButton } from "../../components/CancelJobButton";
import { formatDate } from "../../format";
import { curvesOption, validationMetric, validationValue } from "./curves";
import { applyMessage, applySnapshot, formatDuration, isTerminal, keptIndex, lastValidation, type JobMessage, type LiveJob } from "./jobState";
import { augmentationWhyText, elapsedOf, entryStageName, outputLayerOnly, percentText, phaseName, resolutionWhyText, runName, stopReasonText, validationHeadline, wonOnValidationText } from "./jobText";
import { JobStatusTag } from "../../components/JobStatusTag";
import { headlineMetric } from "../models/headlineMetric";
import { jobSocketUrl, useJobSocket } from "./useJobSocket";
import { CandidatesCard } from "./TextCandidates";
import { familyOf, fitOf, isTextTask, modelName, textPhaseName } from "./textJob";

export function TrainingJobPage() {
  const { t } = useTranslation();
  const { projectId = "", jobId = "" } = useParams();
  const queryClient = useQueryClient();
  const [live, setLive] = useState<LiveJob | null>(null);
  const terminal = live !== null && isTerminal(live.status);

  const onMessage = useCallback(
    (message: JobMessage) => {
      setLive((state) => (state ? applyMessage(state, message) : state));
      // the end: refetch for the model version, final history and metrics
      if (message.status && isTerminal(message.status)) {
        void queryClient.invalidateQueries({ queryKey: trainingKeys.detail(projectId, jobId) });
        void queryClient.invalidateQueries({ queryKey: trainingKeys.list(projectId) });
      }
    },
    [queryClient, projectId, jobId],
  );
  const connected = useJobSocket(jobSocketUrl("training", jobId), live !== null && !terminal, onMessage);
  const job = useTrainingJob(projectId, jobId, connected ? 5_000 : 2_000);

  useEffect(() => {
    if (job.data) setLive((state) => applySnapshot(state, job.data));
  }, [job.data]);

  if (job.isError) return <ErrorAlert error={job.error} onRetry={() => void job.refetch()} />;
  if (!job.data || !live) return <Skeleton active />;
  const j = job.data;

  return (
    <Space orientation="vertical" size="middle" style={{ width: "100%" }}>
      <Breadcrumb
        items={[
          { title: <Link to={`/projects/${projectId}/training`}>{t("training.title")}</Link> },
          { title: j.model_name || j.id.slice(0, 8) },
        ]}
      />
      <Space style={{ width: "100%", justifyContent: "space-between" }} wrap>
        <Space align="baseline" wrap>
          <Typography.Title level={3} style={{ margin: 0 }}>
            {t("training.jobTitle", { name: j.model_name || j.id.slice(0, 8) })}
          </Typography.Title>
          <JobStatusTag status={live.status} />
          {!terminal && (
            <Tooltip title={connected ? t("training.liveHint") : t("training.pollingHint")}>
              <Tag color={connected ? "green" : "default"} data-testid="live-tag">
                {connected ? t("training.live") : t("training.polling")}
              </Tag>
            </Tooltip>
          )}
        </Space>
        {!terminal && <CancelButton projectId={projectId} jobId={jobId} />}
      </Space>
      {live.status === "FAILED" && (
        <Alert type="error" showIcon role="alert" title={t("training.failed")} description={live.error || t("training.noReason")} />
      )}
      {live.status === "CANCELLED" && <Alert type="warning" showIcon title={t("training.cancelled")} />}
      {live.status === "SUCCEEDED" && <SucceededLinks projectId={projectId} jobId={jobId} modelVersionId={j.model_version_id} />}
      <ProgressCard
        live={live}
        budget={j.budget_s}
        metrics={live.status === "SUCCEEDED" ? j.metrics : undefined}
        task={j.task_type}
        recipe={live.status === "SUCCEEDED" ? j.recipe : undefined}
      />
      {live.status === "SUCCEEDED" && <OutcomeCard job={j} live={live} />}
      {live.status === "SUCCEEDED" && isTextTask(j.task_type) && <CandidatesCard job={j} />}
      <CurvesCard
        live={live}
        metrics={live.status === "SUCCEEDED" ? j.metrics : undefined}
        recipe={live.status === "SUCCEEDED" ? j.recipe : undefined}
        nVal={recipeOf(j).n_val}
      />
      <Descriptions
        size="small"
        bordered
        column={2}
        items={[
          { key: "budget", label: t("training.budget"), children: formatDuration(j.budget_s) },
          // a text job has no image architecture (the model families are in the candidates)
          ...(isTextTask(j.task_type) ? [] : [{ key: "arch", label: t("training.architecture"), children: j.architecture || "—" }]),
          {
            key: "version",
            label: t("training.version"),
            children: <DatasetVersionLink projectId={projectId} version={j.dataset_version} />,
          },
          { key: "seed", label: t("versions.seed"), children: j.seed },
          { key: "created", label: t("common.createdAt"), children: formatDate(j.created_at) },
          { key: "finished", label: t("training.finishedAt"), children: formatDate(j.finished_at) || "—" },
          ...(j.weights_note ? [{ key: "weights", label: t("training.weights"), children: j.weights_note, span: 2 }] : []),
        ]}
      />
    </Space>
  );
}

/**
 * Phase in plain words, the running epoch, the step loss, the newest validation figure with the
 * epoch it belongs to (while epoch n runs it is epoch n-1's), elapsed and time left; a bar that
 * only moves forward (jobState.advanceShown). An object detector (`task` object_detection, or
 * entries with mAP) counts steps and shows its validation mAP@0.5. A text classifier
 * (`task` text_classification) says which model family (and fit) is training, and once done in
 * one line which won on validation and its validation accuracy (`recipe.family`, its candidate's
 * `fit` and `val_accuracy`).
 */
export function ProgressCard({ live, budget, metrics, task, recipe }: { live: LiveJob; budget: number; metrics?: unknown; task?: string; recipe?: unknown }) {
  const { t } = useTranslation();
  const p = live.progress;
  const running = live.status === "RUNNING";
  const terminal = isTerminal(live.status);
  const text = isTextTask(task);
  const detector = !text && (task === "object_detection" || (p.phase === "train" && typeof p.epoch !== "number") || validationMetric(live.history) === "val_map50");
  // once done, the figure of the epoch whose weights were kept (the best, not always the last)
  const kept = metrics === undefined ? -1 : keptIndex(live.history, metrics, recipe);
  const keptEntry = kept >= 0 && validationValue(live.history[kept]) !== undefined ? live.history[kept] : undefined;
  const validation = keptEntry ?? lastValidation(live);
  // once done and evaluated on the test split: the test accuracy or mAP@0.5 (of the model kept),
  // said so; before that, the newest validation figure
  const final = metrics === undefined ? null : headlineMetric({ task_type: detector ? "object_detection" : "image_classification", metrics });
  const test = final?.split === "test" ? final : null;
  const training = p.phase === "head" || p.phase === "finetune" || p.phase === "train";
  const timeLeft = terminal
    ? "—"
    : running && live.shown.etaS !== null
      ? formatDuration(live.shown.etaS)
      : t("training.budgetOf", { budget: formatDuration(budget) });
  // a text job: the family (and fit) being measured, trained or exported now; once done, the
  // one that won on validation, with its validation accuracy
  const won = live.status === "SUCCEEDED" ? wonOnValidationText(t, recipe, metrics) : null;
  const family = won ?? modelName(t, familyOf(p), fitOf(p));
  return (
    <Card size="small">
      <Space size="large" wrap align="start">
        <Statistic title={t("training.phase")} value={text ? textPhaseName(t, p.phase, familyOf(p)) : phaseName(t, p.phase)} />
        {text && (
          <Statistic
            title={t("training.text.family")}
            value={family}
            data-testid="text-family"
            // the sentence once done is longer than a figure
            styles={won ? { content: { fontSize: 16 } } : undefined}
          />
        )}
        <div>
          {text ? (
            <>
              <Statistic title={t("training.epoch")} value={training && typeof p.epoch === "number" ? String(p.epoch) : "—"} />
              {training && typeof p.step === "number" && typeof p.steps === "number" && (
                // each family's steps are planned from its measured pace; epochs follow from them
                <Typography.Text type="secondary" style={{ fontSize: 12 }} data-testid="text-steps">
                  {t("training.text.stepOf", { step: p.step, steps: p.steps })}
                </Typography.Text>
              )}
            </>
          ) : detector ? (
            <Statistic title={t("training.step")} value={training && typeof p.step === "number" ? `${p.step} / ${p.steps ?? "?"}` : "—"} data-testid="training-step" />
          ) : (
            <Statistic
              title={t("training.epoch")}
              value={training && typeof p.epoch === "number" ? `${p.epoch} / ${p.epochs ?? "?"}` : "—"}
            />
          )}
          {p.phase === "finetune" && typeof p.epochs === "number" && (
            // the total is re-planned after every epoch from the measured pace, so it can move
            <Typography.Text type="secondary" style={{ fontSize: 12 }} data-testid="epochs-planned">
              {t("training.epochsPlanned")}
            </Typography.Text>
          )}
        </div>
        <div>
          <Statistic title={t("training.loss")} value={training && typeof p.loss === "number" ? p.loss.toFixed(4) : "—"} />
          {training && typeof p.loss === "number" && typeof p.epoch === "number" && (
            <Typography.Text type="secondary" style={{ fontSize: 12 }} data-testid="loss-epoch">
              {t("training.lossDuring", { epoch: p.epoch })}
            </Typography.Text>
          )}
        </div>
        {detector ? (
          <div>
            {test !== null ? (
              <Statistic title={t(test.labelKey)} value={percentText(test.value)} data-testid="test-map50" />
            ) : (
              <Statistic
                title={t("training.valMap50")}
                value={typeof validation?.val_map50 === "number" ? percentText(validation.val_map50) : "—"}
                data-testid="val-map50"
              />
            )}
            <Typography.Text type="secondary" style={{ fontSize: 12 }} data-testid="val-epoch">
              {validation ? t(keptEntry ? "training.valKeptStep" : "training.valAfterStep", { step: validation.step }) : t("training.noValidationYet")}
            </Typography.Text>
          </div>
        ) : (
        <div>
          {test !== null ? (
            <>
              <Statistic title={t(test.labelKey)} value={percentText(test.value)} data-testid="test-accuracy" />
              <NotEvaluatedTag headline={test} />
            </>
          ) : (
            <Statistic
              title={t("training.valAccuracy")}
              value={validation && typeof validation.val_accuracy === "number" ? percentText(validation.val_accuracy) : "—"}
            />
          )}
          <Typography.Text
            type="secondary"
            style={{ fontSize: 12 }}
            data-testid="val-epoch"
            title={validation ? validationHeadline(t, validation) : undefined}
          >
            {validation
              ? t(keptEntry ? "training.valKeptEpoch" : "training.valAfterEpoch", { epoch: validation.epoch, stage: entryStageName(t, validation) })
              : t("training.noValidationYet")}
          </Typography.Text>
        </div>
        )}
        <Statistic title={t("training.elapsed")} value={typeof p.elapsed_s === "number" ? formatDuration(p.elapsed_s) : "—"} />
        <Statistic title={t("training.timeLeft")} value={timeLeft} />
      </Space>
      <Progress
        data-testid="training-progress"
        percent={live.shown.percent}
        status={live.status === "FAILED" ? "exception" : live.status === "SUCCEEDED" ? "success" : running ? "active" : "normal"}
      />
      {!running && !terminal && <Typography.Text type="secondary">{t("training.waiting")}</Typography.Text>}
    </Card>
  );
}

/** After the end: why training stopped (and the time it saved), the image size and why, the augmentation. */
export function OutcomeCard({ job, live }: { job: TrainingJob; live: LiveJob }) {
  const { t, i18n } = useTranslation();
  const recipe = recipeOf(job);
  // the engine gives its reasons in English: in another language they go in a tooltip, and the
  // augmentation says in that language whether it flipped images
  const english = i18n.language.startsWith("en");
  const flips = typeof recipe.augmentation_flip === "boolean" && recipe.augmentation !== "none"
    ? t(recipe.augmentation_flip ? "training.withFlips" : "training.noFlips")
    : "";
  // a model of the output layer only is said plainly, above the rest
  const headOnly = outputLayerOnly(recipe, live.history);
  const stop = headOnly ? null : stopReasonText(t, recipe, job.budget_s, elapsedOf(job, live.progress.elapsed_s));
  const augmentationWhy = augmentationWhyText(t, recipe, english);
  const items = [
    ...(stop ? [{ key: "stop", label: t("training.stopReason"), children: <span data-testid="stop-reason">{stop}</span>, span: 2 }] : []),
    ...(typeof recipe.resolution === "number"
      ? [
          {
            key: "resolution",
            label: t("training.resolution"),
            children: (
              <span data-testid="resolution" title={english || recipe.resolution_why?.code ? undefined : recipe.resolution_reason || undefined}>
                {t("training.resolutionValue", { px: recipe.resolution })}
                {resolutionWhyText(t, recipe, english)}
              </span>
            ),
            span: 2,
          },
        ]
      : []),
    ...(recipe.augmentation
      ? [
          {
            key: "augmentation",
            label: t("training.augmentation"),
            children: (
              <span data-testid="augmentation" title={english || recipe.augmentation_why?.code ? undefined : recipe.augmentation_reason || undefined}>
                {optionName(t, "augmentations", recipe.augmentation)}
                {augmentationWhy ? ` — ${augmentationWhy}` : flips && t("training.flipsAside", { flips })}
              </span>
            ),
            span: augmentationWhy ? 2 : 1,
          },
        ]
      : []),
    ...(recipe.model_preference
      ? [{ key: "preference", label: t("training.modelPreference"), children: optionName(t, "preferences", recipe.model_preference) }]
      : []),
    ...(recipe.device
      ? [{ key: "device", label: t("training.trainedOn"), children: <span data-testid="device">{recipe.device === "cpu" ? t("training.cpu") : recipe.device}</span> }]
      : []),
  ];
  const alert = headOnly && <Alert type="warning" showIcon data-testid="output-layer-only" title={t("training.headOnly")} />;
  if (items.length === 0) return alert || null;
  return (
    <>
      {alert}
      <Descriptions size="small" bordered column={2} title={t("training.outcome")} items={items} data-testid="outcome" />
    </>
  );
}

function optionName(t: TFunction, group: "augmentations" | "preferences", value: string): string {
  const names: Record<string, string> =
    group === "augmentations"
      ? { auto: t("training.augmentations.auto"), none: t("training.augmentations.none"), light: t("training.augmentations.light"), strong: t("training.augmentations.strong") }
      : { more_accurate: t("training.preferences.more_accurate"), faster: t("training.preferences.faster") };
  return names[value] ?? value;
}

export function CurvesCard({ live, metrics, nVal, recipe }: { live: LiveJob; metrics: unknown; nVal?: number; recipe?: unknown }) {
  const { t } = useTranslation();
  // the model kept is the best epoch, which may not be the last: mark it, and say so
  const kept = keptIndex(live.history, metrics, recipe);
  const keptEntry = kept >= 0 ? live.history[kept] : undefined;
  // an object detector's entries: validation mAP@0.5 at training steps
  const bySteps = validationMetric(live.history) === "val_map50" || (live.progress.phase === "train" && typeof live.progress.epoch !== "number");
  const option = useMemo(
    () =>
      curvesOption(live.history, kept, {
        loss: t("training.loss"),
        valLoss: t("training.valLoss"),
        valAccuracy: t("training.valAccuracy"),
        valMap50: t("training.valMap50"),
        epoch: t("training.epoch"),
        step: t("training.step"),
        kept: t("training.keptMark"),
        outputLayer: t("training.outputLayer"),
        outputLayerTitle: t("training.outputLayerTitle"),
        // a band per phase, or per model family for a text job
        stage: (key) => runName(t, key),
        entryTitle: (h) =>
          typeof h.epoch === "number" ? t("training.entryTitle", { epoch: h.epoch, stage: entryStageName(t, h) }) : t("training.stepTitle", { step: h.step }),
      }),
    [live.history, t, kept],
  );
  return (
    <Card size="small" title={t(bySteps ? "training.curvesSteps" : "training.curves")}>
      {live.history.length === 0 ? (
        <Typography.Text type="secondary">{t(bySteps ? "training.noValidations" : "training.noEpochs")}</Typography.Text>
      ) : (
        <Chart option={option} height={300} ariaLabel={t(bySteps ? "training.curvesSteps" : "training.curves")} />
      )}
      {!bySteps && typeof nVal === "number" && nVal > 0 && nVal <= 100 && live.history.length > 0 && (
        // one image of a small validation split moves its accuracy by whole points
        <Typography.Paragraph type="secondary" style={{ marginBottom: 4 }} data-testid="small-validation">
          {t("training.smallValidation", { count: nVal, points: (100 / nVal).toFixed(1) })}
        </Typography.Paragraph>
      )}
      {keptEntry && typeof keptEntry.val_map50 === "number" && (
        <Typography.Text type="secondary" data-testid="kept-epoch">
          {t("training.keptStep", { step: keptEntry.step, map: percentText(keptEntry.val_map50) })}
        </Typography.Text>
      )}
      {keptEntry && typeof keptEntry.val_map50 !== "number" && (
        <Typography.Text type="secondary" data-testid="kept-epoch">
          {t("training.kept", {
            epoch: keptEntry.epoch,
            stage: entryStageName(t, keptEntry),
            accuracy: typeof keptEntry.val_accuracy === "number" ? percentText(keptEntry.val_accuracy) : "—",
          })}
        </Typography.Text>
      )}
    </Card>
  );
}

function CancelButton({ projectId, jobId }: { projectId: string; jobId: string }) {
  const { t } = useTranslation();
  const cancel = useCancelTraining(projectId, jobId);
  return <CancelJobButton projectId={projectId} cancel={cancel} label={t("training.cancelJob")} confirm={t("training.cancelConfirm")} />;
}

function SucceededLinks({ projectId, jobId, modelVersionId }: { projectId: string; jobId: string; modelVersionId: string | null }) {
  const { t } = useTranslation();
  const model = useModelVersion(projectId, modelVersionId);
  return (
    <Alert
      type="success"
      showIcon
      title={t("training.succeeded")}
      description={
        <Space wrap>
          <Link to={`/projects/${projectId}/training/${jobId}/report`} data-testid="report-link">
            {t("training.openReport")}
          </Link>
          {modelVersionId && (
            <Link to={`/projects/${projectId}/models/versions/${modelVersionId}`} data-testid="model-link">
              {model.data ? t("training.openModel", { name: model.data.model_name, version: model.data.version }) : t("training.openModelPlain")}
            </Link>
          )}
        </Space>
      }
    />
  );
}
