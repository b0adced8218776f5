"""Compression jobs: candidates of a model version made, evaluated and measured on a device."""

from __future__ import annotations

from django.conf import settings
from django.db import models

from sampan.accounts.models import Project
from sampan.core.models import Job

#: The families a job may try (``workers.ml.compression.CompressRequest.methods``).
METHODS = ("int8", "resolution", "pruning", "fp16")
#: The families that make candidates of a text classifier (the default for one); ``resolution``
#: and ``pruning`` make distilled image students and are ignored for text, with a warning.
TEXT_METHODS = ("int8", "fp16")


class CompressionJob(Job):
    """Compress ``source`` for ``device`` within ``accuracy_budget_pt`` points of accuracy and
    ``budget_s`` seconds of wall-clock time.

    ``candidates``: one JSON object per candidate, written by the worker as each is made and
    measured (docs/contracts.md, "Compression"): ``key``, ``method``, ``params``, ``parent``,
    ``status`` (ready/failed/skipped), ``reason``, ``accuracy`` and ``evaluated_on`` (test or
    val), ``val_accuracy``, ``accuracy_drop_pt``, ``within_budget``, ``size_bytes``, ``macs``,
    ``onnx``, ``benchmark`` (``{"id", "status", "error"}`` of the device benchmark), ``latency``
    (the device's p50_ms/p99_ms/... or null), ``compatible`` and ``incompatibilities``.
    ``picked``: the key of the candidate registered as ``model_version`` (empty: none; see
    ``pick_reason``). ``device`` null: measured on the compression worker itself.
    """

    task_name, task_queue = "compression.run", "compression"

    project = models.ForeignKey(Project, on_delete=models.CASCADE,
                                related_name="compression_jobs")
    source = models.ForeignKey("registry.ModelVersion", on_delete=models.PROTECT,
                               related_name="compression_jobs")
    device = models.ForeignKey("fleet.Device", null=True, blank=True, on_delete=models.SET_NULL,
                               related_name="+")
    device_name = models.CharField(max_length=200, blank=True, default="")
    accuracy_budget_pt = models.FloatField(default=1.0)
    budget_s = models.FloatField(default=600.0)
    methods = models.JSONField(default=list)
    seed = models.IntegerField(default=0)
    candidates = models.JSONField(default=list, blank=True)
    warnings = models.JSONField(default=list, blank=True)
    picked = models.CharField(max_length=64, blank=True, default="")
    pick_reason = models.TextField(blank=True, default="")
    model_version = models.ForeignKey("registry.ModelVersion", null=True, blank=True,
                                      on_delete=models.SET_NULL, related_name="+")
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL,
                                   related_name="+")

    class Meta:
        ordering = ["-created_at"]
        constraints = [models.UniqueConstraint(
            fields=["project", "idempotency_key"], condition=~models.Q(idempotency_key=""),
            name="compression_job_idempotency_key_unique")]
