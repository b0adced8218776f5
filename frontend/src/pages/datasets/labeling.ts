// Pure rules of classification labeling, kept apart from the components so they are tested alone.
import type { Sample } from "../../api/queries/datasets";

/** The image-level class label of a sample, or null when it has none. */
export function classLabelOf(sample: Sample): string | null {
  return sample.annotations.find((a) => a.kind === "class")?.class_label ?? null;
}

/** The id of the sample's image-level class label, or null. */
export function classLabelIdOf(sample: Sample): string | null {
  return sample.annotations.find((a) => a.kind === "class")?.class_label_id ?? null;
}

export function boxCountOf(sample: Sample): number {
  return sample.annotations.filter((a) => a.kind === "box").length;
}

/**
 * Undo or redo, by the keys both labeling panels take: Ctrl/Cmd+Z undoes, Ctrl/Cmd+Shift+Z and
 * Ctrl/Cmd+Y redo. Null for any other key.
 */
export function undoRedoOfKey(event: { key: string; ctrlKey: boolean; metaKey: boolean; shiftKey: boolean; altKey?: boolean }): "undo" | "redo" | null {
  if (!(event.ctrlKey || event.metaKey) || event.altKey) return null;
  const key = event.key.toLowerCase();
  if (key === "y") return "redo";
  if (key === "z") return event.shiftKey ? "redo" : "undo";
  return null;
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
