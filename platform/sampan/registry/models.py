"""The model registry: models and their immutable versions (model packages)."""

from __future__ import annotations

from django.db import models

from sampan.accounts.models import Project
from sampan.core.models import BaseModel


class RegisteredModel(BaseModel):
    """A named model in a project; its versions are immutable model packages."""

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="models")
    name = models.CharField(max_length=200)
    task_type = models.CharField(max_length=32)
    description = models.TextField(blank=True, default="")

    class Meta:
        constraints = [models.UniqueConstraint(fields=["project", "name"],
                                               name="registered_model_unique_name")]


class ModelVersion(BaseModel):
    """An immutable model package: ``model.onnx`` + signed ``manifest.json`` (DESIGN.md).

    ``package_dir`` is relative to MEDIA_ROOT (``models/<model id>/<version id>/``); ``manifest``
    is the signed manifest exactly as written to disk; ``model_sha256``/``model_size`` (bytes)
    describe ``model.onnx``.
    """

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="model_versions")
    model = models.ForeignKey(RegisteredModel, on_delete=models.CASCADE, related_name="versions")
    version = models.PositiveIntegerField()
    task_type = models.CharField(max_length=32)
    labels = models.JSONField()
    metrics = models.JSONField(default=dict)
    manifest = models.JSONField()
    package_dir = models.CharField(max_length=300)
    model_sha256 = models.CharField(max_length=64)
    model_size = models.PositiveBigIntegerField()
    pretrained = models.BooleanField(default=False)
    dataset_version = models.ForeignKey("datasets.DatasetVersion", null=True,
                                        on_delete=models.SET_NULL, related_name="+")
    training_job = models.ForeignKey("training.TrainingJob", null=True, on_delete=models.SET_NULL,
                                     related_name="+")
    parent = models.ForeignKey("self", null=True, blank=True, on_delete=models.SET_NULL,
                               related_name="children")

    class Meta:
        ordering = ["model", "version"]
        constraints = [models.UniqueConstraint(fields=["model", "version"],
                                               name="model_version_unique_number")]

    @property
    def label(self) -> str:
        return f"{self.model.name} v{self.version}"
