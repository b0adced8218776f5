// The wizard's augmentation and model choices: the presets explained, a preview of a version's
// images as a preset may transform them (CSS transforms drawn from the preset's ranges), and the
// two model preferences as cards with their expected latency on a device.
import { CheckCircleFilled, ReloadOutlined } from "@ant-design/icons";
import { Button, Card, Empty, Radio, Space, Typography } from "antd";
import { useMemo, useState } from "react";
import { useTranslation } from "react-i18next";

import { useSampleList } from "../../api/queries/datasets";
import { AUGMENTATIONS, MODEL_PREFERENCES, type Augmentation, type ModelPreference } from "../../api/queries/training";
import { drawStyle, drawTransform, previewSamples } from "./augmentation";

export const PREVIEW_IMAGES = 4;
/** Samples fetched to choose the preview from (one page). */
const PREVIEW_POOL = 100;
export const PREVIEW_DRAWS = 3;

/** A Form control: the four presets with a one-line explanation each, and when flips are added. */
export function AugmentationChoice(props: { value?: Augmentation; onChange?: (value: Augmentation) => void }) {
  const { t } = useTranslation();
  return (
    <Space orientation="vertical" size={4} style={{ maxWidth: 520 }}>
      <Radio.Group
        value={props.value}
        onChange={(e) => props.onChange?.(e.target.value as Augmentation)}
        aria-label={t("training.augmentation")}
        style={{ display: "flex", flexDirection: "column", gap: 4 }}
      >
        {AUGMENTATIONS.map((a) => (
          <Radio key={a} value={a}>
            <Typography.Text strong>{t(`training.augmentations.${a}`)}</Typography.Text>
            <Typography.Text type="secondary"> — {t(`training.augmentationHints.${a}`)}</Typography.Text>
          </Radio>
        ))}
      </Radio.Group>
      <Typography.Text type="secondary" style={{ fontSize: 12 }} data-testid="flips-note">
        {t("training.flipsNote")}
      </Typography.Text>
    </Space>
  );
}

/** 4 images of the version's training split, each 3 times with a random draw of the preset; Shuffle draws again. */
export function AugmentationPreview(props: { projectId: string; datasetId?: string; versionId?: string; preset: Augmentation }) {
  const { t } = useTranslation();
  const [round, setRound] = useState(0);
  const samples = useSampleList(
    props.projectId,
    props.datasetId ?? "",
    { version: props.versionId, split: "train" },
    PREVIEW_POOL,
    Boolean(props.datasetId && props.versionId),
  );
  const images = previewSamples(props.datasetId && props.versionId ? (samples.data?.pages[0]?.results ?? []) : [], PREVIEW_IMAGES);
  const draws = useMemo(
    () => images.map(() => Array.from({ length: PREVIEW_DRAWS }, () => drawTransform(props.preset))),
    // a new draw per preset, per Shuffle and per set of images
    [props.preset, round, images.map((s) => s.id).join()],
  );
  if (!props.versionId || images.length === 0) {
    return <Empty image={Empty.PRESENTED_IMAGE_SIMPLE} description={t("training.noPreview")} style={{ margin: 0 }} />;
  }
  return (
    <Space orientation="vertical" size={4} data-testid="augmentation-preview">
      <Space wrap>
        <Typography.Text type="secondary">{t(props.preset === "auto" ? "training.augmentationPreviewAuto" : "training.augmentationPreview")}</Typography.Text>
        <Button size="small" icon={<ReloadOutlined />} onClick={() => setRound((r) => r + 1)} disabled={props.preset === "none"}>
          {t("training.shuffle")}
        </Button>
      </Space>
      <div style={{ display: "grid", gridTemplateColumns: `repeat(${PREVIEW_DRAWS}, 72px)`, gap: 6 }}>
        {images.flatMap((sample, i) =>
          (draws[i] ?? []).map((d, k) => (
            <div key={`${sample.id}-${k}`} style={{ width: 72, height: 72, overflow: "hidden", borderRadius: 4, background: "#f5f5f5" }}>
              <img
                src={sample.image_url ?? undefined}
                alt={sample.original_name}
                data-testid="augmented"
                width={72}
                height={72}
                decoding="async"
                style={{ objectFit: "contain", display: "block", imageRendering: sample.width < 72 ? "pixelated" : undefined, ...drawStyle(d) }}
              />
            </div>
          )),
        )}
      </div>
      {props.preset !== "none" && (
        <Typography.Text type="secondary" style={{ fontSize: 12 }} data-testid="preview-flips">
          {t("training.previewFlips")}
        </Typography.Text>
      )}
    </Space>
  );
}

/** Without the images' size: the latency at each choice's largest resolution (224 and 128 px). */
const LATENCY: Record<ModelPreference, string> = { more_accurate: "~7–9 ms", faster: "~2.5–3 ms" };
/** The resolutions the engine picks from (workers/ml/recipe.py RESOLUTIONS) and the faster cap. */
const RESOLUTIONS = [96, 128, 160, 224];
const FASTER_CAP = 128;
/** MobileNetV2, 1 CPU thread, batch 1: ~8 ms at 224 px, scaling with the pixels (~2.6 ms at 128 px). */
const MS_AT_224 = 8;

/**
 * The resolution the engine aims at for images whose shorter side is `side` px: the smallest
 * candidate >= the side, at most 128 px for "faster" (recipe.target_resolution; a short budget may
 * still lower it).
 */
export function expectedResolution(side: number, preference: ModelPreference): number {
  const allowed = RESOLUTIONS.filter((r) => preference === "more_accurate" || r <= FASTER_CAP);
  return allowed.find((r) => r >= side) ?? allowed[allowed.length - 1]!;
}

export function expectedLatencyMs(resolution: number): number {
  return MS_AT_224 * (resolution / 224) ** 2;
}

/** A Form control: the two model preferences as selectable cards; with the images' median
 * shorter side (px), each card says the size it would train at and the latency expected there. */
export function PreferenceCards(props: { value?: ModelPreference; onChange?: (value: ModelPreference) => void; shorterSide?: number }) {
  const { t } = useTranslation();
  const side = props.shorterSide;
  const latency = (p: ModelPreference) =>
    side ? `~${expectedLatencyMs(expectedResolution(side, p)).toFixed(1)} ms` : LATENCY[p];
  const same = side !== undefined && expectedResolution(side, "faster") === expectedResolution(side, "more_accurate");
  return (
    <Space orientation="vertical" size={4}>
      <div role="radiogroup" aria-label={t("training.modelPreference")} style={{ display: "flex", gap: 12, flexWrap: "wrap" }}>
        {MODEL_PREFERENCES.map((p) => {
          const selected = props.value === p;
          return (
            <Card
              key={p}
              size="small"
              role="radio"
              aria-checked={selected}
              aria-label={`${t(`training.preferences.${p}`)}: ${latency(p)}`}
              tabIndex={0}
              hoverable
              onClick={() => props.onChange?.(p)}
              onKeyDown={(e) => {
                if (e.key === " " || e.key === "Enter") {
                  e.preventDefault();
                  props.onChange?.(p);
                }
              }}
              style={{ width: 260, borderColor: selected ? "#1677ff" : undefined, boxShadow: selected ? "0 0 0 1px #1677ff" : undefined }}
            >
              <Space orientation="vertical" size={2}>
                <Space size={6}>
                  {selected ? <CheckCircleFilled aria-hidden style={{ color: "#1677ff" }} /> : <span style={{ display: "inline-block", width: 14 }} />}
                  <Typography.Text strong>{t(`training.preferences.${p}`)}</Typography.Text>
                </Space>
                <Typography.Text style={{ fontSize: 20 }} data-testid={`latency-${p}`}>
                  {latency(p)}
                </Typography.Text>
                {side !== undefined && (
                  <Typography.Text type="secondary" style={{ fontSize: 12 }}>
                    {t("training.atResolution", { px: expectedResolution(side, p) })}
                  </Typography.Text>
                )}
                <Typography.Text type="secondary" style={{ fontSize: 12 }}>
                  {t(`training.preferenceHints.${p}`)}
                </Typography.Text>
              </Space>
            </Card>
          );
        })}
      </div>
      {same && (
        <Typography.Text type="secondary" style={{ fontSize: 12 }} data-testid="same-model">
          {t("training.sameModel", { side, px: expectedResolution(side, "faster") })}
        </Typography.Text>
      )}
      <Typography.Text type="secondary" style={{ fontSize: 12 }}>
        {t("training.latencyNote")}
      </Typography.Text>
    </Space>
  );
}
