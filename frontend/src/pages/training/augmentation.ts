// The augmentation presets' ranges, for the wizard's preview (pure, tested in augmentation.test.ts).
// The ranges are the engine's presets (workers/ml/augmentation.py); "auto" is chosen from the data
// when training starts, so the preview shows it as "light". The engine adds horizontal flips to
// light and strong alike, for colour photos only (never grayscale or small images such as digits
// and text): the data decides, so the preview shows no flips and says so in words.
import type { Sample } from "../../api/queries/datasets";
import type { Augmentation } from "../../api/queries/training";
import { classLabelOf } from "../datasets/labeling";

export interface PresetRanges {
  /** degrees, ± */
  rotate: number;
  /** share of the image size, ± */
  translate: number;
  scale: [number, number];
  brightness: [number, number];
}

export const PRESET_RANGES: Record<Exclude<Augmentation, "none" | "auto">, PresetRanges> = {
  light: { rotate: 10, translate: 0.08, scale: [0.9, 1.1], brightness: [0.8, 1.2] },
  strong: { rotate: 20, translate: 0.12, scale: [0.8, 1.2], brightness: [0.6, 1.4] },
};

/** The ranges the preview draws from; null: images unchanged. */
export function previewRanges(preset: Augmentation): PresetRanges | null {
  if (preset === "none") return null;
  if (preset === "auto") return PRESET_RANGES.light;
  return PRESET_RANGES[preset];
}

export interface Draw {
  rotate: number;
  /** share of the image size */
  translateX: number;
  translateY: number;
  scale: number;
  brightness: number;
}

export const IDENTITY: Draw = { rotate: 0, translateX: 0, translateY: 0, scale: 1, brightness: 1 };

/** One random draw from the preset's ranges; `random` returns [0, 1) like Math.random. */
export function drawTransform(preset: Augmentation, random: () => number = Math.random): Draw {
  const r = previewRanges(preset);
  if (!r) return IDENTITY;
  const between = (lo: number, hi: number) => lo + (hi - lo) * random();
  return {
    rotate: between(-r.rotate, r.rotate),
    translateX: between(-r.translate, r.translate),
    translateY: between(-r.translate, r.translate),
    scale: between(r.scale[0], r.scale[1]),
    brightness: between(r.brightness[0], r.brightness[1]),
  };
}

/** The draw as CSS on an <img>: transform (translate in % of the image) and filter. */
export function drawStyle(d: Draw): { transform: string; filter: string } {
  const pct = (x: number) => `${(100 * x).toFixed(1)}%`;
  return {
    transform: `translate(${pct(d.translateX)}, ${pct(d.translateY)}) rotate(${d.rotate.toFixed(1)}deg) scale(${d.scale.toFixed(3)}, ${d.scale.toFixed(3)})`,
    filter: `brightness(${d.brightness.toFixed(2)})`,
  };
}

/** Up to `n` samples of different classes first (a page in storage order is often all one or two
 * classes), then the others in order. */
export function previewSamples<T extends Sample>(pool: T[], n: number): T[] {
  const seen = new Set<string | null>();
  const distinct = pool.filter((sample) => {
    const key = classLabelOf(sample);
    if (seen.has(key)) return false;
    seen.add(key);
    return true;
  });
  return [...distinct, ...pool.filter((sample) => !distinct.includes(sample))].slice(0, n);
}
