"""Writes on a model's suggestions (``Suggestion``): accept one or all of a sample's, which makes
the annotations a person would have made, or reject them. Pre-labeling runs that make them:
``sampan.datasets.prelabel``. Rules: docs/contracts.md, "Assisted labeling".
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from django.db import transaction
from django.utils.translation import gettext as _

from sampan.core.errors import ValidationFailed
from sampan.datasets.etags import BOXES_CHANGED, LABEL_CHANGED
from sampan.datasets.models import Annotation, AnnotationKind, Sample, Suggestion, TaskType
from sampan.datasets.services import sample_check_unchanged
from sampan.accounts.lifecycle import ensure_active


def _chosen(sample: Sample, suggestion_ids: Iterable[Any] | None) -> list[Suggestion]:
    """The sample's suggestions named by ``suggestion_ids`` (None or empty: all of them), best
    first. Raises ValidationFailed (``suggestion_ids``) naming an id that is not one of the
    sample's suggestions now (another sample's, or accepted or rejected already)."""
    rows = list(Suggestion.objects.filter(sample=sample).select_related("class_label"))
    if not suggestion_ids:
        return rows
    by_id = {str(s.pk): s for s in rows}
    chosen = []
    for index, raw in enumerate(suggestion_ids):
        found = by_id.get(str(raw))
        if found is None:
            raise ValidationFailed(
                _("suggestion_ids[%(index)s]: %(id)s is not a suggestion of this sample (accepted "
                  "or rejected already, or another sample's)") % {"index": index, "id": raw},
                field="suggestion_ids")
        if found not in chosen:
            chosen.append(found)
    return chosen


@transaction.atomic
def sample_suggestions_accept(*, sample: Sample, suggestion_ids: Iterable[Any] | None = None,
                              if_match: str | None = None) -> list[Annotation]:
    """Accept suggestions of ``sample`` (None or empty ``suggestion_ids``: all of them, "accept
    all boxes"): each becomes the annotation a person would have made and is deleted. Image
    classification: the class suggestion becomes the sample's class label (replacing one it
    had). Object detection: each box suggestion is added to the sample's boxes (the boxes it
    has stay), and the "no objects" mark goes. Returns the annotations made.

    Raises PreconditionFailed (412) when ``if_match`` is given and the sample's annotations
    changed since that tag; ValidationFailed (``suggestion_ids``) when the sample has no
    suggestion to accept, or an id is not one of its suggestions.
    """
    ensure_active(project=sample.dataset.project, dataset=sample.dataset, doing=_("labeling"))
    detection = sample.dataset.task_type == TaskType.OBJECT_DETECTION
    sample_check_unchanged(sample, if_match, BOXES_CHANGED if detection else LABEL_CHANGED)
    chosen = _chosen(sample, suggestion_ids)
    if not chosen:
        raise ValidationFailed(_("this sample has no suggestions to accept"),
                               field="suggestion_ids")
    made: list[Annotation] = []
    if detection:
        for suggestion in chosen:
            made.append(Annotation.objects.create(
                sample=sample, kind=AnnotationKind.BOX, class_label=suggestion.class_label,
                x1=suggestion.x1, y1=suggestion.y1, x2=suggestion.x2, y2=suggestion.y2))
        Sample.objects.filter(pk=sample.pk).update(no_objects=False)
        sample.no_objects = False
    else:
        best = chosen[0]  # a pre-labeling run suggests one class per sample
        Annotation.objects.filter(sample=sample, kind=AnnotationKind.CLASS).delete()
        made.append(Annotation.objects.create(sample=sample, kind=AnnotationKind.CLASS,
                                              class_label=best.class_label))
        chosen = list(Suggestion.objects.filter(sample=sample, kind=AnnotationKind.CLASS))
    Suggestion.objects.filter(pk__in=[s.pk for s in chosen]).delete()
    return made


@transaction.atomic
def sample_suggestions_reject(*, sample: Sample, suggestion_ids: Iterable[Any] | None = None
                              ) -> int:
    """Delete suggestions of ``sample`` (None or empty ``suggestion_ids``: all of them). The
    annotations do not change, nor the sample's etag. Returns how many were deleted. Raises
    ValidationFailed (``suggestion_ids``) for an id that is not one of its suggestions."""
    chosen = _chosen(sample, suggestion_ids)
    Suggestion.objects.filter(pk__in=[s.pk for s in chosen]).delete()
    return len(chosen)
