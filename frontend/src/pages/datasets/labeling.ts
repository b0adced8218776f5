// Pure rules of classification labeling, kept apart from the components so they are tested alone.
import type { Sample } from "../../api/queries/datasets";

/** The image-level class label of a sample, or null when it has none. */
export function classLabelOf(sample: Sample): string | null {
  return sample.annotations.find((a) => a.kind === "class")?.class_label ?? null;
}

export function boxCountOf(sample: Sample): number {
  return sample.annotations.filter((a) => a.kind === "box").length;
}

/** Number keys pick classes in position order: "1" is the first class ... "9" the ninth, "0" the tenth. */
export function classIndexForKey(key: string): number | null {
  if (!/^[0-9]$/.test(key)) return null;
  return key === "0" ? 9 : Number(key) - 1;
}

export function keyForClassIndex(index: number): string | null {
  if (index < 0 || index > 9) return null;
  return index === 9 ? "0" : String(index + 1);
}

/**
 * The sample to show after `currentId` was labeled: the next unlabeled one after it on the page,
 * wrapping around to the start; null when every other sample on the page is labeled.
 */
export function nextUnlabeledId(samples: Sample[], currentId: string | null): string | null {
  const start = samples.findIndex((s) => s.id === currentId);
  for (let step = 1; step <= samples.length; step += 1) {
    const sample = samples[(start + step + samples.length) % samples.length];
    if (sample && sample.id !== currentId && classLabelOf(sample) === null) return sample.id;
  }
  return null;
}

/** True when a key press belongs to a text field rather than to the labeling shortcuts. */
export function isTypingTarget(target: EventTarget | null): boolean {
  if (!(target instanceof HTMLElement)) return false;
  return target.isContentEditable || ["INPUT", "TEXTAREA", "SELECT"].includes(target.tagName);
}
