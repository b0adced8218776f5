"""Freezing a dataset version: an immutable snapshot with a stratified, deterministic split."""

from __future__ import annotations

import hashlib
import json
import statistics
from collections import defaultdict
from typing import Any

from django.db import IntegrityError, transaction
from django.utils.translation import gettext as _
from django.utils.translation import gettext_noop

from sampan.core.errors import ValidationFailed
from sampan.datasets.models import (Annotation, AnnotationKind, ClassLabel, Dataset,
                                    DatasetVersion, DatasetVersionItem, Sample, Split, TaskType)
from sampan.accounts.audit import audit_record
from sampan.accounts.lifecycle import ensure_active

DEFAULT_VAL_FRACTION = 0.15
DEFAULT_TEST_FRACTION = 0.15  # 70/15/15: the test split is held out from model selection
# A class contributes to the test split only with at least this many labelled samples: with the
# default 15 % that is 2 test images (round(1.5)), the fewest from which a per-class recall is
# more than a yes/no, while it still keeps 6 images for training and 2 for validation.
MIN_SAMPLES_FOR_TEST = 10
# The version is flagged when its largest class has at least this many times the samples of its
# smallest. A heuristic, not a limit: from about 3:1 on, a model can reach a high accuracy while
# it neglects the small class (it is 25 % or less of a two-class set), so the console points at
# macro F1 and at labelling more of the small class; milder imbalance is common and harmless.
CLASS_IMBALANCE_RATIO = 3.0

# A version's flags: ``message`` is stored in English (a version is frozen once; the request that
# froze it may have asked for another language) and read in the request's language
# (sampan.datasets.report_texts); ``code`` is for programs.
CLASS_WITHOUT_TEST_SPLIT = gettext_noop(
    "class %(name)r has %(samples)d samples: too few for a test split (needs %(needed)d); it is "
    "left out of the test report")
CLASS_TOO_SMALL = gettext_noop("class %(name)r has %(samples)d sample(s): too few to appear in "
                               "validation")
NO_CLASS_FOR_TEST_SPLIT = gettext_noop(
    "no class has the %(needed)d labelled samples a test split needs (the largest has "
    "%(largest)d): this version has train and val splits only, and training reports on the "
    "validation split")
TEST_FRACTION_ZERO = gettext_noop(
    "the test fraction is 0: this version has train and val splits only, and training reports "
    "on the validation split, which also chose the model kept")
CLASS_IMBALANCE = gettext_noop(
    "classes are imbalanced: %(large)r has %(large_samples)d samples, %(small)r only "
    "%(small_samples)d (%(ratio).1fx); accuracy can hide errors on the small class: look at "
    "macro F1 and per-class recall, or label more %(small)r samples")
#: the sentence of a class's flag, by code (``stratified_split`` says it without the class name)
CLASS_FLAGS = {"no_test_split_for_class": CLASS_WITHOUT_TEST_SPLIT,
               "class_too_small": CLASS_TOO_SMALL}
FLAG_MESSAGES = (CLASS_WITHOUT_TEST_SPLIT, CLASS_TOO_SMALL, NO_CLASS_FOR_TEST_SPLIT,
                 TEST_FRACTION_ZERO, CLASS_IMBALANCE)


def _rank(seed: int, content_sha256: str) -> str:
    """Deterministic pseudo-random order key of a sample for a seed (independent of db order)."""
    return hashlib.sha256(f"{seed}:{content_sha256}".encode()).hexdigest()


def stratified_split(groups: dict[int, list[str]], *, val: float, test: float, seed: int
                     ) -> tuple[dict[str, str], list[dict[str, Any]]]:
    """Split each class separately: ``round(n * fraction)`` samples go to val and test.

    ``groups`` maps class index -> content hashes. Returns (hash -> split, flags). A class with
    at least 2 samples always gets at least one validation sample; a class too small to appear in
    validation (1 sample) stays in train and is flagged, not an error. A class contributes to test
    (at least one sample, and always at least one left for training) only when it has
    ``MIN_SAMPLES_FOR_TEST`` samples; a smaller one keeps its samples in train/val and is flagged
    ``no_test_split_for_class``. When no class can contribute, a single ``no_test_split`` flag
    replaces the per-class ones and the version has train and val only.
    """
    assignment: dict[str, str] = {}
    flags: list[dict[str, Any]] = []
    test_flags: list[dict[str, Any]] = []
    for class_index, hashes in sorted(groups.items()):
        ordered = sorted(hashes, key=lambda h: _rank(seed, h))
        n = len(ordered)
        n_val = round(n * val) if val > 0 else 0
        if val > 0 and n >= 2:
            n_val = max(1, n_val)
        n_val = min(n_val, n - 1) if n >= 2 else 0
        n_test = 0
        if test > 0 and n >= MIN_SAMPLES_FOR_TEST:
            n_test = min(max(1, round(n * test)), n - 1 - n_val)
        elif test > 0:
            test_flags.append({
                "code": "no_test_split_for_class", "class_index": class_index,
                "message": f"has {n} samples: too few for a test split (needs "
                           f"{MIN_SAMPLES_FOR_TEST}); it is left out of the test report"})
        for i, h in enumerate(ordered):
            assignment[h] = (Split.VAL if i < n_val else
                             Split.TEST if i < n_val + n_test else Split.TRAIN)
        if val > 0 and n_val == 0:
            flags.append({"code": "class_too_small", "class_index": class_index,
                          "message": f"has {n} sample(s): too few to appear in validation"})
    if test_flags and len(test_flags) == len(groups):
        largest = max((len(h) for h in groups.values()), default=0)
        flags.insert(0, {"code": "no_test_split", "message": NO_CLASS_FOR_TEST_SPLIT % {
            "needed": MIN_SAMPLES_FOR_TEST, "largest": largest}})
    else:
        flags = test_flags + flags
    if test <= 0 and groups:
        flags.insert(0, {"code": "no_test_split", "message": TEST_FRACTION_ZERO})
    return assignment, flags


def class_imbalance_flag(counts: dict[str, int]) -> dict[str, Any] | None:
    """The ``class_imbalance`` flag when the largest class has at least ``CLASS_IMBALANCE_RATIO``
    times the samples of the smallest (``counts``: class name -> samples), else None."""
    if len(counts) < 2:
        return None
    (small, n_small), (large, n_large) = (min(counts.items(), key=lambda kv: kv[1]),
                                          max(counts.items(), key=lambda kv: kv[1]))
    ratio = n_large / max(n_small, 1)
    if ratio < CLASS_IMBALANCE_RATIO:
        return None
    return {"code": "class_imbalance", "ratio": round(ratio, 2), "message": CLASS_IMBALANCE % {
        "large": large, "large_samples": n_large, "small": small, "small_samples": n_small,
        "ratio": ratio}}


# The group key of background images (detection samples checked "no objects") in the split: they
# are split like a class of their own, so every split gets its share of negatives.
BACKGROUND = -1


def dataset_version_create(*, dataset: Dataset, seed: int = 0,
                           val_fraction: float = DEFAULT_VAL_FRACTION,
                           test_fraction: float = DEFAULT_TEST_FRACTION,
                           note: str = "", user: Any = None) -> DatasetVersion:
    """Freeze the dataset's labeled samples into a new immutable version; audited
    (``dataset_version.create``, by ``user``).

    Labels keep the dataset's explicit order (``ClassLabel.position``); only classes with samples
    are kept, and their index in ``labels`` is the model's output index. An object detection
    version holds the samples with boxes and the background images (``Sample.no_objects``, with
    no boxes); suggestions of a model (``Suggestion``) are never part of it. Raises
    ValidationFailed when nothing is labeled (a detection version needs at least one box) or the
    fractions are out of range.
    """
    ensure_active(project=dataset.project, dataset=dataset, doing=_("freezing a version"))
    if not (0 <= val_fraction < 1 and 0 <= test_fraction < 1 and val_fraction + test_fraction < 1):
        raise ValidationFailed(_("val_fraction and test_fraction must be in [0, 1) with a sum < 1"),
                               field="val_fraction")
    for _attempt in range(5):  # bounded retry on a concurrent version number (MLflow's habit)
        try:
            with transaction.atomic():
                version = _create(dataset, seed, val_fraction, test_fraction, note)
                audit_record(actor=user, action="dataset_version.create",
                             project=dataset.project, target=version,
                             details={"dataset": dataset.name, "version": version.number,
                                      "digest": version.digest})
            return version
        except IntegrityError:
            continue
    raise ValidationFailed(_("could not allocate a version number; try again"))


@transaction.atomic
def _create(dataset: Dataset, seed: int, val: float, test: float, note: str) -> DatasetVersion:
    class_rows = list(ClassLabel.objects.filter(dataset=dataset).order_by("position"))
    samples = list(Sample.objects.filter(dataset=dataset).order_by("content_sha256"))
    annotations: dict[Any, list[Annotation]] = defaultdict(list)
    for a in Annotation.objects.filter(sample__dataset=dataset).select_related("class_label"):
        annotations[a.sample_id].append(a)

    per_sample: dict[Any, tuple[int | None, list[Annotation]]] = {}
    used: set[Any] = set()
    # a text classifier, like an image classifier, learns one class per sample
    classification = dataset.task_type in (TaskType.IMAGE_CLASSIFICATION,
                                           TaskType.TEXT_CLASSIFICATION)
    for s in samples:
        anns = annotations.get(s.pk, [])
        cls = next((a.class_label_id for a in anns if a.kind == AnnotationKind.CLASS), None)
        boxes = [a for a in anns if a.kind == AnnotationKind.BOX]
        if classification and cls is None:
            continue
        if dataset.task_type == TaskType.OBJECT_DETECTION and not boxes and not s.no_objects:
            continue
        if classification:
            boxes = []  # a classifier learns image-level labels only
        else:
            cls = None  # a detector learns boxes only
        per_sample[s.pk] = (cls, boxes)
        used.update([cls] if cls else [])
        used.update(b.class_label_id for b in boxes)
    if not per_sample:
        raise ValidationFailed(_("no labeled samples: label some samples before freezing a "
                                 "version"))
    if not used:
        raise ValidationFailed(_("no boxes: every labeled sample is a background image (no "
                                 "objects); draw boxes on some samples before freezing a version"))

    kept = [c for c in class_rows if c.pk in used]
    index_of = {c.pk: i for i, c in enumerate(kept)}
    labels = [c.name for c in kept]
    groups: dict[int, list[str]] = defaultdict(list)
    by_hash = {s.content_sha256: s for s in samples if s.pk in per_sample}
    background: list[str] = []
    for h, s in by_hash.items():
        cls, boxes = per_sample[s.pk]
        if cls is None and not boxes:
            background.append(h)
            continue
        key = index_of[cls] if cls is not None else index_of[boxes[0].class_label_id]
        groups[key].append(h)
    assignment, flags = stratified_split(groups, val=val, test=test, seed=seed)
    if background:
        # split like a class, but without flags: a class's flags speak of classes
        assignment.update(stratified_split({BACKGROUND: background}, val=val, test=test,
                                           seed=seed)[0])
    for flag in flags:
        if "class_index" in flag:
            flag["class"] = labels[flag["class_index"]]
            flag["message"] = CLASS_FLAGS[flag["code"]] % {
                "name": flag["class"], "samples": len(groups[flag["class_index"]]),
                "needed": MIN_SAMPLES_FOR_TEST}

    items, digest_rows, shorter_sides = [], [], []
    stats: dict[str, Any] = {"samples": 0, "pixels": 0, "splits": defaultdict(int),
                             "classes": {name: defaultdict(int) for name in labels}}
    if dataset.task_type == TaskType.OBJECT_DETECTION:
        stats["background_images"] = defaultdict(int)  # per split: images with no boxes
    for h in sorted(by_hash):
        s = by_hash[h]
        cls, boxes = per_sample[s.pk]
        split = assignment[h]
        class_index = index_of[cls] if cls is not None else None
        box_rows = [[b.x1, b.y1, b.x2, b.y2, index_of[b.class_label_id]] for b in boxes]
        items.append(DatasetVersionItem(sample=s, split=split, class_index=class_index,
                                        boxes=box_rows))
        digest_rows.append([h, split, class_index, box_rows])
        stats["samples"] += 1
        stats["pixels"] += s.width * s.height
        shorter_sides.append(min(s.width, s.height))
        stats["splits"][split] += 1
        for name in {labels[i] for i in ([class_index] if class_index is not None else [])
                     + [b[4] for b in box_rows]}:
            stats["classes"][name][split] += 1
        if "background_images" in stats and not box_rows:
            stats["background_images"][split] += 1
    # the images' typical size: the console's expected latency per model choice reads it
    stats["shorter_side_median"] = int(statistics.median(shorter_sides)) if shorter_sides else 0
    imbalance = class_imbalance_flag({name: sum(per_split.values())
                                      for name, per_split in stats["classes"].items()})
    if imbalance is not None:
        flags.append(imbalance)
    payload = json.dumps({"task": dataset.task_type, "labels": labels, "items": digest_rows},
                         sort_keys=True, separators=(",", ":")).encode()
    number = (DatasetVersion.objects.filter(dataset=dataset).order_by("-number")
              .values_list("number", flat=True).first() or 0) + 1
    version = DatasetVersion.objects.create(
        project=dataset.project, dataset=dataset, number=number, task_type=dataset.task_type,
        labels=labels, seed=seed, split_fractions={"val": val, "test": test},
        digest="sha256:" + hashlib.sha256(payload).hexdigest(), flags=flags,
        stats=json.loads(json.dumps(stats)), note=note)
    for item in items:
        item.version = version
    DatasetVersionItem.objects.bulk_create(items, batch_size=500)
    return version
