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
    """An immutable model package: ``model.onnx`` + signed ``manifest.json`` (docs/architecture.md).

    ``package_dir`` is a storage folder name (``models/<model id>/<version id>``,
    ``sampan.core.storage``); ``manifest`` is the signed manifest exactly as written to disk;
    ``model_sha256``/``model_size`` (bytes) describe ``model.onnx``.
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


class SigningKeyState(models.TextChoices):
    ACTIVE = "active"  # the key new manifests are signed with
    TRUSTED = "trusted"  # a previous key: devices still accept manifests it signed
    RETIRED = "retired"  # devices refuse manifests it signed


class SigningKey(models.Model):
    """One public key of the platform's model-signing key ring (sampan.registry.signing).

    ``key_id`` is ``edge_agent.runtime.public_key_id`` of ``public_key`` (base64 of the 32 raw
    Ed25519 bytes). Only public halves live here; private keys stay in SAMPAN_SIGNING_KEY_FILE.
    Devices trust every key that is not retired; at most one key is active.
    """

    key_id = models.CharField(max_length=16, primary_key=True)
    public_key = models.CharField(max_length=64, unique=True)
    state = models.CharField(max_length=8, choices=SigningKeyState.choices)
    created_at = models.DateTimeField(auto_now_add=True)
    retired_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["created_at"]
        constraints = [models.UniqueConstraint(fields=["state"],
                                               condition=models.Q(state="active"),
                                               name="signing_key_one_active")]

    def __str__(self) -> str:
        return f"{self.key_id} ({self.state})"
