// Pure rules of assisted labeling in the console: which model versions can pre-label a dataset,
// a sample's suggestions as the panels show them, and the sample list's order. The server has the
// last word (platform/sampan/datasets/prelabel.py); these only decide what to offer and show.
import type { Dataset, Sample } from "../../api/queries/datasets";
import type { ModelVersion, Suggestion } from "../../api/queries/prelabel";
import type { Box } from "./boxes";

/** A class name as the server compares them: trimmed, Unicode NFC. */
const normalised = (name: string) => name.trim().normalize("NFC");

/** The model's labels that are classes of the dataset, in the model's order. */
export function sharedClasses(version: Pick<ModelVersion, "labels">, dataset: Pick<Dataset, "class_labels">): string[] {
  const classes = new Set(dataset.class_labels.map((c) => normalised(c.name)));
  return version.labels.map(normalised).filter((name) => classes.has(name));
}

/** Versions that can pre-label the dataset: its task, at least one class in common; newest first per model. */
export function compatibleVersions(versions: ModelVersion[], dataset: Pick<Dataset, "task_type" | "class_labels">): ModelVersion[] {
  return versions.filter((v) => v.task_type === dataset.task_type && sharedClasses(v, dataset).length > 0);
}

/** "87%": a score or probability (0..1) as the console shows it. */
export function percent(score: number): string {
  return `${Math.round(score * 100)}%`;
}

/** The class suggestion of a sample (a classifier's best class), or null. */
export function classSuggestionOf(sample: Pick<Sample, "suggestions">): Suggestion | null {
  return sample.suggestions.find((s) => s.kind === "class") ?? null;
}

/** A suggested box as the detection drawer holds it: the suggestion's id, class, corners, score. */
export interface SuggestedBox extends Box {
  score: number;
}

/** The sample's box suggestions, best first (as the API orders them). */
export function suggestedBoxesOf(sample: Pick<Sample, "suggestions">): SuggestedBox[] {
  const boxes: SuggestedBox[] = [];
  for (const s of sample.suggestions) {
    if (s.kind !== "box" || s.x1 == null || s.y1 == null || s.x2 == null || s.y2 == null) continue;
    boxes.push({ id: s.id, classLabelId: s.class_label_id, x1: s.x1, y1: s.y1, x2: s.x2, y2: s.y2, score: s.score });
  }
  return boxes;
}

/** The gallery's order: as imported, or most uncertain first (the labeling queue of pre-labeling). */
export type SampleOrder = "oldest" | "uncertainty";

/**
 * The order the gallery shows: the one chosen (kept in the URL), else most uncertain first when
 * the dataset holds suggestions (a model pre-labeled it: the queue starts where it is least sure).
 */
export function effectiveOrder(chosen: SampleOrder | undefined, dataset: Pick<Dataset, "suggested_samples">): SampleOrder {
  return chosen ?? ((dataset.suggested_samples ?? 0) > 0 ? "uncertainty" : "oldest");
}
