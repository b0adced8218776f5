"""Writes for datasets: datasets, class labels and annotations (imports: ``datasets.imports``)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from django.db import IntegrityError, transaction
from django.utils.translation import gettext as _

from sampan.accounts.models import Project
from sampan.core.errors import Conflict, ValidationFailed
from sampan.core.validation import validated_name, validated_text
from sampan.datasets.archives import normalise_label
from sampan.datasets.etags import (BOXES_CHANGED, LABEL_CHANGED, annotations_etag,
                                   check_if_match)
from sampan.datasets.models import (Annotation, AnnotationKind, ClassLabel, Dataset, Sample,
                                    Suggestion, TaskType)
from sampan.accounts.audit import audit_record
from sampan.accounts.lifecycle import ensure_active


def dataset_create(*, project: Project, name: str, task_type: str = TaskType.IMAGE_CLASSIFICATION,
                   description: str = "", labels: Iterable[str] = (),
                   user: Any = None) -> Dataset:
    """Create a dataset with ``labels`` as its first classes; audited (``dataset.create``, by
    ``user``).

    Raises ValidationFailed for a name or description the rule of ``sampan.core.names`` refuses
    (field ``name`` / ``description``) or a bad class label (field ``labels``); Conflict when the
    project has a dataset of that name.
    """
    ensure_active(project=project, doing=_("creating a dataset"))
    name = validated_name(name, field="name")
    description = validated_text(description, field="description")
    try:
        with transaction.atomic():
            dataset = Dataset.objects.create(project=project, name=name, task_type=task_type,
                                             description=description)
            class_labels_ensure(dataset=dataset, names=list(labels))
            audit_record(actor=user, action="dataset.create", project=project, target=dataset,
                         details={"name": name, "task_type": task_type})
    except IntegrityError:
        raise Conflict(_("a dataset named %(name)r exists in this project") % {"name": name},
                       field="name") from None
    return dataset


def class_labels_ensure(*, dataset: Dataset, names: list[str]) -> dict[str, ClassLabel]:
    """Return ClassLabel rows for ``names`` (normalised), appending new ones at the end.

    New labels are added in the order given; existing labels keep their position, so the index
    order of a dataset is stable.
    """
    wanted = []
    for raw in names:
        try:
            name = normalise_label(raw)
        except ValueError as exc:
            raise ValidationFailed(_("class label %(name)r: %(reason)s")
                                   % {"name": raw, "reason": exc}, field="labels") from None
        if name not in wanted:
            wanted.append(name)
    with transaction.atomic():
        existing = {c.name: c
                    for c in ClassLabel.objects.select_for_update().filter(dataset=dataset)}
        position = max((c.position for c in existing.values()), default=-1) + 1
        for name in wanted:
            if name not in existing:
                existing[name] = ClassLabel.objects.create(dataset=dataset, name=name,
                                                           position=position)
                position += 1
    return existing


def class_labels_add(*, dataset: Dataset, names: list[str]) -> dict[str, ClassLabel]:
    """``class_labels_ensure`` for a person adding classes (``POST .../class-labels/``).

    Raises Archived (409 ``archived``) when the dataset or its project is archived: new classes
    are new labeling work (an import queued before the archive still adds the classes it reads,
    through ``class_labels_ensure``); ValidationFailed (field ``labels``) for a bad name."""
    ensure_active(project=dataset.project, dataset=dataset, doing=_("adding class labels"))
    return class_labels_ensure(dataset=dataset, names=names)


def _class_label(dataset: Dataset, label: str | None, label_id: Any | None) -> ClassLabel:
    """The class named ``label`` (created when new) or the existing class ``label_id``.

    Raises ValidationFailed when both or neither are given, or ``label_id`` is not in the dataset.
    """
    if label is not None and label_id is not None:
        raise ValidationFailed(_("give class_label (a name) or class_label_id, not both"),
                               field="class_label")
    if label_id is not None:
        found = ClassLabel.objects.filter(dataset=dataset, pk=label_id).first()
        if found is None:
            raise ValidationFailed(_("no class label with id %(id)s in this dataset")
                                   % {"id": label_id}, field="class_label_id")
        return found
    if label is None:
        raise ValidationFailed(_("give class_label (a name) or class_label_id"),
                               field="class_label")
    return class_labels_ensure(dataset=dataset, names=[label])[normalise_label(label)]


def sample_check_unchanged(sample: Sample, if_match: str | None, message: str) -> None:
    """With ``if_match`` (an ``If-Match`` header), lock the sample's row and raise
    PreconditionFailed (412) when its annotations are no longer the ones that tag names. The
    lock holds until the caller's transaction ends, so two writes with the same tag cannot both
    pass (PostgreSQL; SQLite serialises writers)."""
    if if_match is None:
        return
    no_objects = (Sample.objects.select_for_update().filter(pk=sample.pk)
                  .values_list("no_objects", flat=True).first())
    current = annotations_etag(sample.pk, Annotation.objects.filter(sample=sample),
                               bool(no_objects))
    check_if_match(if_match, current, message)


@transaction.atomic
def sample_label_set(*, sample: Sample, label: str | None = None, label_id: Any | None = None,
                     if_match: str | None = None) -> Annotation | None:
    """Set (or with label=None and label_id=None, clear) the image-level class label of a sample.
    A label set replaces the model's class suggestion of the sample (``Suggestion``).

    Raises PreconditionFailed (412) when ``if_match`` is given and the sample's annotations
    changed since that tag (``sampan.datasets.etags``).
    """
    ensure_active(project=sample.dataset.project, dataset=sample.dataset, doing=_("labeling"))
    sample_check_unchanged(sample, if_match, LABEL_CHANGED)
    Annotation.objects.filter(sample=sample, kind=AnnotationKind.CLASS).delete()
    if label is None and label_id is None:
        return None
    class_label = _class_label(sample.dataset, label, label_id)
    Suggestion.objects.filter(sample=sample, kind=AnnotationKind.CLASS).delete()
    return Annotation.objects.create(sample=sample, kind=AnnotationKind.CLASS,
                                     class_label=class_label)


@transaction.atomic
def samples_label_bulk(*, dataset: Dataset, sample_ids: list[Any], label: str | None = None,
                       label_id: Any | None = None) -> int:
    """Give many samples the same class label in one transaction; all or nothing. With
    label=None and label_id=None, clear their labels (the console's undo of a bulk label).

    Raises ValidationFailed naming the first sample id that is not in the dataset.
    """
    ensure_active(project=dataset.project, dataset=dataset, doing=_("labeling"))
    samples = {str(s.pk): s for s in Sample.objects.filter(dataset=dataset, pk__in=sample_ids)}
    for sample_id in sample_ids:
        if str(sample_id) not in samples:
            raise ValidationFailed(_("sample %(id)s is not in this dataset") % {"id": sample_id},
                                   field="sample_ids")
    clear = label is None and label_id is None
    class_label = None if clear else _class_label(dataset, label, label_id)
    Annotation.objects.filter(sample__in=samples.values(), kind=AnnotationKind.CLASS).delete()
    if class_label is None:
        return len(samples)
    Suggestion.objects.filter(sample__in=samples.values(), kind=AnnotationKind.CLASS).delete()
    Annotation.objects.bulk_create([
        Annotation(sample=s, kind=AnnotationKind.CLASS, class_label=class_label)
        for s in samples.values()])
    return len(samples)


def _check_box(sample: Sample, box: dict[str, Any], index: int
               ) -> tuple[float, float, float, float]:
    try:
        x1, y1, x2, y2 = (float(box[k]) for k in ("x1", "y1", "x2", "y2"))
    except (KeyError, TypeError, ValueError):
        raise ValidationFailed(_("boxes[%(index)s]: needs numbers x1, y1, x2, y2")
                               % {"index": index}, field=f"boxes[{index}]") from None
    if not (0 <= x1 < x2 <= sample.width and 0 <= y1 < y2 <= sample.height):
        raise ValidationFailed(
            _("boxes[%(index)s]: (%(x1)s, %(y1)s, %(x2)s, %(y2)s) is not a box inside the "
              "%(width)sx%(height)s image (xyxy, px, x1<x2, y1<y2)")
            % {"index": index, "x1": x1, "y1": y1, "x2": x2, "y2": y2, "width": sample.width,
               "height": sample.height},
            field=f"boxes[{index}]")
    return x1, y1, x2, y2


@transaction.atomic
def sample_boxes_set(*, sample: Sample, boxes: list[dict[str, Any]],
                     if_match: str | None = None, no_objects: bool = False,
                     resolved_suggestion_ids: Iterable[Any] = ()) -> list[Annotation]:
    """Replace the bounding boxes of a sample. Each box: x1, y1, x2, y2 (px, upright image) and
    ``class_label`` (name) or ``class_label_id``. Nothing changes if any box is invalid.

    ``no_objects`` marks the sample "checked: no objects" (a background image, kept in versions
    with no boxes); it needs an empty ``boxes`` (else ValidationFailed on ``no_objects``). Every
    write sets the mark to ``no_objects``: a write with boxes clears it, and the mark deletes the
    sample's box suggestions. ``resolved_suggestion_ids``: the sample's suggestions this list
    took in or the person rejected; they are deleted with the write (ids of suggestions that
    are gone already, or of another sample, change nothing).

    Raises ValidationFailed on a dataset whose task is not object detection: boxes there would
    add classes that an image classifier would learn as dead outputs. Raises PreconditionFailed
    (412) when ``if_match`` is given and the sample's annotations changed since that tag: the
    boxes were saved by someone else meanwhile, and these would overwrite them unseen.
    """
    ensure_active(project=sample.dataset.project, dataset=sample.dataset, doing=_("labeling"))
    if sample.dataset.task_type != TaskType.OBJECT_DETECTION:
        raise ValidationFailed(_("bounding boxes need an %(needed)s dataset; this one is "
                                 "%(task_type)s")
                               % {"needed": TaskType.OBJECT_DETECTION,
                                  "task_type": sample.dataset.task_type}, field="boxes")
    if no_objects and boxes:
        raise ValidationFailed(_("no_objects says the image holds nothing to box, and boxes has "
                                 "%(count)s: send one or the other") % {"count": len(boxes)},
                               field="no_objects")
    sample_check_unchanged(sample, if_match, BOXES_CHANGED)
    checked = []
    for index, box in enumerate(boxes):
        coords = _check_box(sample, box, index)
        try:
            class_label = _class_label(sample.dataset, box.get("class_label"),
                                       box.get("class_label_id"))
        except ValidationFailed as exc:  # name the box, as the coordinate errors do
            raise ValidationFailed(_("boxes[%(index)s]: %(reason)s")
                                   % {"index": index, "reason": exc.message},
                                   field=f"boxes[{index}].{exc.field}") from None
        checked.append((coords, class_label))
    Annotation.objects.filter(sample=sample, kind=AnnotationKind.BOX).delete()
    Sample.objects.filter(pk=sample.pk).update(no_objects=no_objects)
    sample.no_objects = no_objects
    resolved = Suggestion.objects.filter(sample=sample)
    if not no_objects:
        resolved = resolved.filter(pk__in=[str(i) for i in resolved_suggestion_ids])
    resolved.delete()
    return [Annotation.objects.create(sample=sample, kind=AnnotationKind.BOX, class_label=label,
                                      x1=c[0], y1=c[1], x2=c[2], y2=c[3])
            for c, label in checked]


__all__ = ["dataset_create", "class_labels_add", "class_labels_ensure", "sample_label_set",
           "samples_label_bulk", "sample_boxes_set", "sample_check_unchanged"]
