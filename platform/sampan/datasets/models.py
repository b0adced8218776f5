"""Datasets, samples, annotations, imports and immutable dataset versions."""

from __future__ import annotations

from typing import Any

from django.db import models
from django.db.models import Q

from sampan.accounts.models import Project
from sampan.core.models import BaseModel, Job


class TaskType(models.TextChoices):
    IMAGE_CLASSIFICATION = "image_classification"
    OBJECT_DETECTION = "object_detection"
    TEXT_CLASSIFICATION = "text_classification"


class Split(models.TextChoices):
    TRAIN = "train"
    VAL = "val"
    TEST = "test"


class Dataset(BaseModel):
    """A collection of samples and their annotations inside a project."""

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="datasets")
    name = models.CharField(max_length=200)
    task_type = models.CharField(max_length=32, choices=TaskType.choices,
                                 default=TaskType.IMAGE_CLASSIFICATION)
    description = models.TextField(blank=True, default="")
    #: when it was archived (null: active); an archived dataset is hidden from the default
    #: list and refuses new work (``sampan.datasets.lifecycle``)
    archived_at = models.DateTimeField(null=True, blank=True)

    @property
    def archived(self) -> bool:
        return self.archived_at is not None

    class Meta:
        constraints = [models.UniqueConstraint(fields=["project", "name"],
                                               name="dataset_unique_name")]


class ClassLabel(BaseModel):
    """A class of a dataset. ``position`` is the stable, explicit order (index in the model).

    ``hotkey`` is the labeling key a person chose for the class (one of ``0-9``, ``a-z``,
    lower-case), or "" for the automatic one the console derives (``sampan.datasets.hotkeys``).
    """

    dataset = models.ForeignKey(Dataset, on_delete=models.CASCADE, related_name="class_labels")
    name = models.CharField(max_length=200)  # trimmed, Unicode NFC (archives.normalise_label)
    position = models.PositiveIntegerField()
    hotkey = models.CharField(max_length=1, blank=True, default="")

    class Meta:
        ordering = ["position"]
        constraints = [
            models.UniqueConstraint(fields=["dataset", "name"], name="class_label_unique_name"),
            models.UniqueConstraint(fields=["dataset", "position"], name="class_label_unique_pos"),
            models.UniqueConstraint(fields=["dataset", "hotkey"], condition=~Q(hotkey=""),
                                    name="class_label_unique_hotkey"),
        ]


class Sample(BaseModel):
    """One image, decoded and normalised by the one image rule, stored once by content hash; or,
    in a text classification dataset, one text (``text``, stored whole; ``file`` empty, ``width``
    and ``height`` 0; ``content_sha256`` the sha256 of its normalised UTF-8 bytes:
    ``sampan.datasets.text_imports``).

    ``file`` is a storage name (``sampan.core.storage``: relative to MEDIA_ROOT, or a key in the
    bucket); ``width`` and ``height`` (px) are those of the upright image.
    ``content_sha256`` is the sha256 of the uploaded bytes. ``no_objects`` (object detection):
    a person (or the annotation file it was imported with) checked the image and found nothing
    to box: a background image, kept in versions with no boxes. Any box written clears it.
    ``uncertainty`` (0..1, higher: the model was less sure; ``sampan.datasets.uncertainty``)
    comes from the latest pre-labeling run over the sample, null when no model looked at it.
    """

    dataset = models.ForeignKey(Dataset, on_delete=models.CASCADE, related_name="samples")
    content_sha256 = models.CharField(max_length=64)
    file = models.CharField(max_length=300)
    original_name = models.CharField(max_length=500)
    width = models.PositiveIntegerField()
    height = models.PositiveIntegerField()
    import_job = models.ForeignKey("ImportJob", null=True, blank=True, on_delete=models.SET_NULL,
                                   related_name="samples")
    source = models.CharField(max_length=32, default="upload")  # upload | device
    no_objects = models.BooleanField(default=False)
    uncertainty = models.FloatField(null=True, blank=True)
    text = models.TextField(blank=True, default="")

    class Meta:
        ordering = ["created_at", "id"]
        constraints = [models.UniqueConstraint(fields=["dataset", "content_sha256"],
                                               name="sample_unique_content")]
        indexes = [models.Index(fields=["dataset", "uncertainty"],
                                name="sample_uncertainty")]


class AnnotationKind(models.TextChoices):
    CLASS = "class"  # an image-level class label
    BOX = "box"  # a bounding box, xyxy in pixels of the upright image


class Annotation(BaseModel):
    """An image-level class label or a bounding box (xyxy, px of the upright image)."""

    sample = models.ForeignKey(Sample, on_delete=models.CASCADE, related_name="annotations")
    kind = models.CharField(max_length=8, choices=AnnotationKind.choices)
    class_label = models.ForeignKey(ClassLabel, on_delete=models.PROTECT, related_name="+")
    x1 = models.FloatField(null=True, blank=True)
    y1 = models.FloatField(null=True, blank=True)
    x2 = models.FloatField(null=True, blank=True)
    y2 = models.FloatField(null=True, blank=True)

    class Meta:
        ordering = ["created_at", "id"]
        constraints = [
            models.UniqueConstraint(fields=["sample"], condition=Q(kind="class"),
                                    name="annotation_one_class_label"),
            models.CheckConstraint(
                condition=Q(kind="class") | (Q(x1__isnull=False) & Q(y1__isnull=False)
                                             & Q(x2__isnull=False) & Q(y2__isnull=False)),
                name="annotation_box_has_coordinates"),
        ]


class Suggestion(BaseModel):
    """A label a model proposed for a sample, kept apart from the annotations (people's labels):
    versions, stats, training and exports never read it. Accepting one makes the annotation and
    deletes it; rejecting deletes it (``sampan.datasets.suggestions``).

    ``kind`` ``class``: the image-level class ``class_label`` with ``score`` = its probability;
    ``box``: a bounding box xyxy in px of the upright image with ``score`` = its detection
    score. Every suggestion of a sample comes from one pre-labeling run (``model_version``).
    """

    sample = models.ForeignKey(Sample, on_delete=models.CASCADE, related_name="suggestions")
    model_version = models.ForeignKey("registry.ModelVersion", on_delete=models.CASCADE,
                                      related_name="+")
    kind = models.CharField(max_length=8, choices=AnnotationKind.choices)
    class_label = models.ForeignKey(ClassLabel, on_delete=models.CASCADE, related_name="+")
    score = models.FloatField()
    x1 = models.FloatField(null=True, blank=True)
    y1 = models.FloatField(null=True, blank=True)
    x2 = models.FloatField(null=True, blank=True)
    y2 = models.FloatField(null=True, blank=True)

    class Meta:
        ordering = ["-score", "id"]
        constraints = [
            models.CheckConstraint(
                condition=Q(kind="class") | (Q(x1__isnull=False) & Q(y1__isnull=False)
                                             & Q(x2__isnull=False) & Q(y2__isnull=False)),
                name="suggestion_box_has_coordinates"),
        ]


class PrelabelJob(Job):
    """A run of a registered model version over a dataset's unlabeled samples that stores its
    ``Suggestion`` rows and each sample's uncertainty. ``score_threshold`` (object detection):
    boxes scoring above it are suggested (null: the manifest's). ``report``: what it did."""

    task_name, task_queue = "datasets.run_prelabel", "imports"

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="prelabel_jobs")
    dataset = models.ForeignKey(Dataset, on_delete=models.CASCADE, related_name="prelabel_jobs")
    model_version = models.ForeignKey("registry.ModelVersion", on_delete=models.CASCADE,
                                      related_name="+")
    score_threshold = models.FloatField(null=True, blank=True)
    report = models.JSONField(default=dict, blank=True)


class ImportJob(Job):
    """A background import of uploaded files or a zip. ``report``: imported, ignored, rejected."""

    task_name, task_queue = "datasets.run_import", "imports"

    @classmethod
    def after_reaped(cls, pk: Any) -> None:
        """The reaper failed this job (worker lost): take back the samples it had added."""
        from sampan.datasets.import_undo import import_job_undo

        import_job_undo(pk)

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="import_jobs")
    dataset = models.ForeignKey(Dataset, on_delete=models.CASCADE, related_name="import_jobs")
    staging_dir = models.CharField(max_length=500)
    default_label = models.CharField(max_length=200, blank=True, default="")
    report = models.JSONField(default=dict, blank=True)
    #: how tables are read into a text dataset (``text_imports.TextOptions``)
    options = models.JSONField(default=dict, blank=True)


class DatasetVersion(BaseModel):
    """An immutable snapshot: samples, labels in index order, split and a content digest."""

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="dataset_versions")
    dataset = models.ForeignKey(Dataset, on_delete=models.CASCADE, related_name="versions")
    number = models.PositiveIntegerField()
    task_type = models.CharField(max_length=32, choices=TaskType.choices)
    labels = models.JSONField()  # class names in index order
    seed = models.IntegerField(default=0)
    split_fractions = models.JSONField()  # {"val": 0.2, "test": 0.0}
    digest = models.CharField(max_length=80)  # "sha256:<hex>"
    flags = models.JSONField(default=list)  # [{"code", "class", "message"}]
    stats = models.JSONField(default=dict)  # counts per split and class
    note = models.TextField(blank=True, default="")

    class Meta:
        ordering = ["dataset", "number"]
        constraints = [models.UniqueConstraint(fields=["dataset", "number"],
                                               name="dataset_version_unique_number")]


class DatasetVersionItem(models.Model):
    """One sample in a version, with its split and a frozen copy of its annotations."""

    version = models.ForeignKey(DatasetVersion, on_delete=models.CASCADE, related_name="items")
    sample = models.ForeignKey(Sample, on_delete=models.PROTECT, related_name="+")
    split = models.CharField(max_length=8, choices=Split.choices)
    class_index = models.IntegerField(null=True)  # image-level label index into version.labels
    boxes = models.JSONField(default=list)  # [[x1, y1, x2, y2, class_index], ...]

    class Meta:
        constraints = [models.UniqueConstraint(fields=["version", "sample"],
                                               name="dataset_version_item_unique")]
