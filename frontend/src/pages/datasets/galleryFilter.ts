// The gallery's filter lives in the URL's search params, so a reload or a shared link keeps it:
// `label=<class name>`, `unlabeled=1` or `no_objects=1` (background images), `order=uncertainty`
// or `order=oldest` (none: the gallery's default, suggestions.ts `effectiveOrder`), and `version=<dataset version id>&split=train|val|test`.
// Other params (the dataset page's `tab`) are left as they are.
import type { SampleFilter } from "../../api/queries/datasets";
import { SPLITS, type Split } from "../../api/queries/versions";

const KEYS = ["label", "unlabeled", "no_objects", "order", "version", "split"] as const;

export function filterFromParams(params: URLSearchParams): SampleFilter {
  const filter: SampleFilter = {};
  const label = params.get("label");
  if (params.get("unlabeled") === "1") filter.unlabeled = true;
  else if (params.get("no_objects") === "1") filter.noObjects = true;
  else if (label) filter.label = label;
  const order = params.get("order");
  if (order === "uncertainty" || order === "oldest") filter.order = order;
  const version = params.get("version");
  const split = params.get("split");
  if (version) {
    filter.version = version;
    // a version filters only with a split (the API ignores a version alone): train by default
    filter.split = (SPLITS as readonly string[]).includes(split ?? "") ? (split as Split) : "train";
  }
  return filter;
}

export function paramsWithFilter(params: URLSearchParams, filter: SampleFilter): URLSearchParams {
  const next = new URLSearchParams(params);
  for (const key of KEYS) next.delete(key);
  if (filter.unlabeled) next.set("unlabeled", "1");
  else if (filter.noObjects) next.set("no_objects", "1");
  else if (filter.label) next.set("label", filter.label);
  if (filter.order) next.set("order", filter.order);
  if (filter.version) {
    next.set("version", filter.version);
    next.set("split", filter.split ?? "train");
  }
  return next;
}
