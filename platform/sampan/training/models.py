"""Training jobs and their evaluation reports."""

from __future__ import annotations

from django.db import models

from sampan.accounts.models import Project
from sampan.core.models import BaseModel, Job


class Augmentation(models.TextChoices):
    """Augmentation preset passed to the engine (``workers.ml.specs.AUGMENTATIONS``)."""

    AUTO = "auto", "Auto (chosen from the data)"
    NONE = "none", "None"
    LIGHT = "light", "Light"
    STRONG = "strong", "Strong"


class ModelPreference(models.TextChoices):
    """What to favour (``workers.ml.specs.MODEL_PREFERENCES``): accuracy (resolution up to 224 px)
    or speed on the device (at most 128 px, ~3x fewer FLOPs)."""

    MORE_ACCURATE = "more_accurate", "More accurate"
    FASTER = "faster", "Faster"


class TrainingJob(Job):
    """Train a model on a dataset version within a time budget (seconds) on a Celery worker.

    ``history``: one entry per epoch (loss, val_accuracy, ...); ``recipe``: what the worker chose
    (resolution, epochs, learning rate, phases); ``pretrained``: whether ImageNet weights were used
    (null until known). ``augmentation``, ``model_preference`` and ``allow_flips`` (False: never
    mirror the images): the user's options, passed to the engine as they are. ``metrics``: what
    the engine returned; newer jobs add ``evaluated_on`` ("test" or "val") and, with a test
    split, ``test_accuracy`` and ``test_macro_f1``.
    """

    task_name, task_queue = "training.run", "training"

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="training_jobs")
    dataset_version = models.ForeignKey("datasets.DatasetVersion", on_delete=models.PROTECT,
                                        related_name="training_jobs")
    task_type = models.CharField(max_length=32)
    model_name = models.CharField(max_length=200)
    budget_s = models.FloatField()
    seed = models.IntegerField(default=0)
    architecture = models.CharField(max_length=64, default="mobilenet_v2")
    augmentation = models.CharField(max_length=16, choices=Augmentation.choices,
                                    default=Augmentation.AUTO)
    model_preference = models.CharField(max_length=16, choices=ModelPreference.choices,
                                        default=ModelPreference.MORE_ACCURATE)
    allow_flips = models.BooleanField(default=True)
    pretrained = models.BooleanField(null=True)
    weights_note = models.TextField(blank=True, default="")
    history = models.JSONField(default=list, blank=True)
    recipe = models.JSONField(default=dict, blank=True)
    metrics = models.JSONField(default=dict, blank=True)
    model_version = models.ForeignKey("registry.ModelVersion", null=True, blank=True,
                                      on_delete=models.SET_NULL, related_name="+")

    class Meta:
        constraints = [models.UniqueConstraint(
            fields=["project", "idempotency_key"], condition=~models.Q(idempotency_key=""),
            name="training_job_idempotency_key_unique")]


class EvaluationReport(BaseModel):
    """Evaluation of a trained model on the test split of its dataset version, or on the
    validation split when the version has no test split (``split``: "test" or "val").

    ``report``: accuracy, per-class precision/recall/F1/support, macro_f1, confusion_matrix (rows
    true, columns predicted, label order of the version), misclassified samples with predicted
    labels. Newer reports also carry ``split`` and ``validation`` ({"accuracy", "macro_f1", "n"}
    on the validation split); older ones lack them. ``parity``: the export gate's
    torch-vs-onnxruntime comparison.
    """

    training_job = models.OneToOneField(TrainingJob, on_delete=models.CASCADE,
                                        related_name="evaluation")
    split = models.CharField(max_length=8, default="val")
    labels = models.JSONField()
    report = models.JSONField()
    parity = models.JSONField(default=dict)
