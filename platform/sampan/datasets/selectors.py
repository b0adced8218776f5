"""Reads for datasets. Every lookup is scoped to a project: other projects' rows are invisible."""

from __future__ import annotations

import unicodedata

from collections.abc import Iterable
from typing import Any

from django.db.models import (Count, Exists, F, IntegerField, OuterRef, Prefetch, Q,
                              QuerySet, Subquery, Sum)
from django.db.models.functions import Coalesce
from django.utils.translation import gettext as _

from sampan.core.selectors import get_or_not_found
from sampan.accounts.models import Project
from sampan.datasets.models import (Annotation, AnnotationKind, Dataset, DatasetVersion,
                                    DatasetVersionItem, ImportJob, PrelabelJob, Sample,
                                    Suggestion)

#: orderings of the sample list: oldest first (the default), most uncertain first
SAMPLE_ORDERINGS = ("created_at", "-uncertainty")


def dataset_list(*, project: Project, archived: bool | None = None) -> QuerySet[Dataset]:
    """The project's datasets with ``sample_count`` and ``suggested_samples`` (samples holding
    a model's suggestions). ``archived``: False for the active ones only, True for the archived
    ones only, None (the default) for all.

    Both are correlated subqueries, not ``Count`` over a join: with an aggregate the dataset row
    is grouped and SQLite evaluated the suggestion subquery once per joined sample (20 s for
    one dataset of 10,000 samples)."""
    samples = Sample.objects.filter(dataset=OuterRef("pk")).order_by().values("dataset")
    suggested = samples.filter(Exists(Suggestion.objects.filter(sample=OuterRef("pk"))))
    count = Count("pk")
    datasets = project.datasets.all()
    if archived is not None:
        datasets = datasets.filter(archived_at__isnull=not archived)
    return datasets.annotate(
        sample_count=Coalesce(Subquery(samples.annotate(n=count).values("n"),
                                       output_field=IntegerField()), 0),
        suggested_samples=Coalesce(Subquery(suggested.annotate(n=count).values("n"),
                                            output_field=IntegerField()), 0),
    ).order_by("created_at")


def dataset_get(*, project: Project, dataset_id: Any) -> Dataset:
    return get_or_not_found(dataset_list(project=project), _("dataset"), pk=dataset_id)


def _with_labels(queryset: QuerySet[Sample]) -> QuerySet[Sample]:
    """Samples with their annotations and a model's suggestions, each with its class."""
    return queryset.prefetch_related(
        Prefetch("annotations", queryset=Annotation.objects.select_related("class_label")),
        Prefetch("suggestions", queryset=Suggestion.objects.select_related("class_label")))


def sample_list(*, dataset: Dataset, label: str | None = None, unlabeled: bool = False,
                no_objects: bool = False, split_version: DatasetVersion | None = None,
                split: str | None = None, ordering: str = "created_at",
                search: str = "") -> QuerySet[Sample]:
    """Samples of a dataset with their annotations and suggestions; filter by class label name,
    unlabeled (no annotation and not checked "no objects"), checked "no objects" (background
    images), or the split of a dataset version. ``ordering``: ``created_at`` (oldest first) or
    ``-uncertainty`` (most uncertain first, samples no model looked at last, then oldest).
    ``search``: only samples whose text or original name holds it (case-insensitive; NFC)."""
    queryset = _with_labels(dataset.samples.all())
    if search:
        wanted = unicodedata.normalize("NFC", search)
        queryset = queryset.filter(Q(text__icontains=wanted) | Q(original_name__icontains=wanted))
    if label:
        queryset = queryset.filter(annotations__class_label__name=label).distinct()
    if unlabeled:
        queryset = queryset.annotate(labeled=Exists(Annotation.objects.filter(
            sample=OuterRef("pk")))).filter(labeled=False, no_objects=False)
    if no_objects:
        queryset = queryset.filter(no_objects=True)
    if split_version is not None and split:
        queryset = queryset.filter(pk__in=split_version.items.filter(split=split)
                                   .values("sample_id"))
    if ordering == "-uncertainty":
        return queryset.order_by(F("uncertainty").desc(nulls_last=True), "created_at", "id")
    return queryset.order_by("created_at", "id")


def sample_get(*, project: Project, sample_id: Any) -> Sample:
    return get_or_not_found(_with_labels(Sample.objects.select_related("dataset__project")),
                            _("sample"), pk=sample_id, dataset__project=project)


def sample_class_label(sample: Sample) -> str | None:
    for a in sample.annotations.all():
        if a.kind == AnnotationKind.CLASS:
            return a.class_label.name
    return None


def import_job_get(*, project: Project, job_id: Any) -> ImportJob:
    return get_or_not_found(ImportJob.objects.all(), _("import job"), pk=job_id, project=project)


def dataset_version_list(*, project: Project, dataset: Dataset | None = None
                         ) -> QuerySet[DatasetVersion]:
    queryset = DatasetVersion.objects.filter(project=project)
    if dataset is not None:
        queryset = queryset.filter(dataset=dataset)
    return queryset.order_by("dataset", "number")


def dataset_version_get(*, project: Project, version_id: Any) -> DatasetVersion:
    return get_or_not_found(DatasetVersion.objects.select_related("dataset"), _("dataset version"),
                pk=version_id, project=project)


def dataset_version_items(*, version: DatasetVersion, sample_ids: Iterable[Any]
                          ) -> list[DatasetVersionItem]:
    """The version's items (split and frozen annotations) of ``sample_ids``, in the order asked;
    ids that are not in the version are left out. One query; the caller bounds the ids."""
    ids = list(dict.fromkeys(sample_ids))
    items = {item.sample_id: item for item in DatasetVersionItem.objects
             .filter(version=version, sample_id__in=ids)
             .select_related("sample").only("sample_id", "split", "class_index", "boxes",
                                            "sample__width", "sample__height")}
    return [items[i] for i in ids if i in items]


def dataset_version_pixels(version: DatasetVersion) -> int:
    """Pixels of all the version's images (sum of width x height of the stored, upright images):
    ``stats["pixels"]`` for versions frozen since it was recorded, else summed from the samples."""
    pixels = (version.stats or {}).get("pixels")
    if pixels is not None:
        return int(pixels)
    total = (DatasetVersionItem.objects.filter(version=version)
             .aggregate(total=Sum(F("sample__width") * F("sample__height")))["total"])
    return int(total or 0)


def prelabel_job_list(*, project: Project, dataset: Dataset) -> QuerySet[PrelabelJob]:
    """The dataset's pre-labeling runs, newest first."""
    return (PrelabelJob.objects.filter(project=project, dataset=dataset)
            .select_related("model_version__model").order_by("-created_at"))


def prelabel_job_get(*, project: Project, job_id: Any) -> PrelabelJob:
    return get_or_not_found(PrelabelJob.objects.select_related("model_version__model"),
                            _("pre-labeling job"), pk=job_id, project=project)
