"""Compression API: create, list, inspect and cancel compression jobs."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response

from sampan.compression import selectors, services
from sampan.compression.models import METHODS, CompressionJob
from sampan.compression.stored_texts import (COMPRESSION_ERRORS, PICK_REASONS, WARNINGS,
                                             candidate_text)
from sampan.core.stored_text import StoredTextField
from sampan.core.apis import IDEMPOTENCY_KEY_PARAMETER, ProjectApi, created_or_replayed
from sampan.core.idempotency import idempotency_key, idempotent_create
from sampan.core.pagination import Pagination
from sampan.fleet.selectors import device_get
from sampan.fleet.serializers import ModelVersionRefOutput
from sampan.registry.selectors import model_version_get


class CompressionJobInput(serializers.Serializer):
    source_model_version_id = serializers.UUIDField(help_text="The float model to compress.")
    device_id = serializers.UUIDField(
        required=False, allow_null=True, default=None,
        help_text="The device to measure the candidates on (its agent runs them); null: the "
                  "compression worker measures them itself.")
    accuracy_budget_pt = serializers.FloatField(
        default=1.0, min_value=0.0, max_value=services.MAX_ACCURACY_BUDGET_PT,
        help_text="Largest accuracy drop allowed, in percentage points, on held-out images (or "
                  "texts).")
    budget_s = serializers.FloatField(
        default=services.DEFAULT_BUDGET_S, min_value=services.MIN_BUDGET_S,
        max_value=services.MAX_BUDGET_S, help_text="Wall-clock budget of the whole job, seconds.")
    methods = serializers.ListField(
        child=serializers.ChoiceField(choices=[(m, m) for m in METHODS]), required=False,
        allow_empty=False,
        help_text="Candidate families to try (default: all that apply to the source: int8 and "
                  "fp16 for a text classifier, which ignores resolution and pruning with a "
                  "warning).")
    seed = serializers.IntegerField(default=0, min_value=0, max_value=2**31 - 1)


class CompressionJobOutput(serializers.Serializer):
    id = serializers.UUIDField()
    source_id = serializers.UUIDField()
    source = ModelVersionRefOutput()
    device_id = serializers.UUIDField(allow_null=True)
    device_name = serializers.CharField(help_text="Empty: measured on the compression worker.")
    accuracy_budget_pt = serializers.FloatField()
    budget_s = serializers.FloatField()
    methods = serializers.ListField(child=serializers.CharField())
    status = serializers.CharField()
    progress = serializers.JSONField()
    candidates = serializers.SerializerMethodField(
        help_text="One object per candidate: key, method, params, parent, status, reason, "
                  "accuracy, evaluated_on, val_accuracy, accuracy_drop_pt, within_budget, "
                  "size_bytes, macs, onnx, benchmark {id, status, error}, latency {p50_ms, "
                  "p99_ms, mean_ms, throughput_ips, load_s, peak_memory_bytes, serving_p99_ms, "
                  "...} or null, compatible, incompatibilities, n_evaluated, "
                  "val_accuracy_drop_pt, elapsed_s.")
    warnings = serializers.ListField(child=StoredTextField(templates=WARNINGS))
    picked = serializers.CharField(help_text="Key of the registered candidate; empty: none.")
    pick_reason = StoredTextField(templates=PICK_REASONS)
    model_version_id = serializers.UUIDField(allow_null=True)
    model_version = ModelVersionRefOutput(allow_null=True)
    error = StoredTextField(templates=COMPRESSION_ERRORS,
                            help_text="Why the job failed or was cancelled, in the "
                                      "request's language where the platform wrote it.")
    created_at = serializers.DateTimeField()
    started_at = serializers.DateTimeField(allow_null=True)
    finished_at = serializers.DateTimeField(allow_null=True)

    def get_candidates(self, job: Any) -> list[dict[str, Any]]:
        # the worker's file paths are its own business (and gone after the job); the reasons
        # in the request's language
        return [candidate_text({k: v for k, v in c.items() if k != "onnx_path"})
                for c in job.candidates or []]


class CompressionJobListQuery(serializers.Serializer):
    source = serializers.UUIDField(required=False,
                                   help_text="Only jobs compressing this model version.")


class CompressionJobListApi(ProjectApi):
    pagination_class = Pagination

    @extend_schema(parameters=[CompressionJobListQuery],
                   responses=CompressionJobOutput(many=True), operation_id="compression_jobs_list")
    def get(self, request: Request, project_id: str) -> Response:
        query = CompressionJobListQuery(data=request.query_params)
        query.is_valid(raise_exception=True)
        jobs = selectors.compression_job_list(project=self.get_project(request),
                                              source_id=query.validated_data.get("source"))
        return self.paginate(request, jobs, CompressionJobOutput)

    @extend_schema(request=CompressionJobInput, parameters=[IDEMPOTENCY_KEY_PARAMETER],
                   responses={201: CompressionJobOutput, 200: CompressionJobOutput},
                   operation_id="compression_jobs_create",
                   description="Creates and queues a compression job (201). With an "
                   "`Idempotency-Key` header that a job of this project already holds, answers "
                   "that job (200, `Idempotent-Replayed: true`) and starts nothing; the same key "
                   "with a different body: 422 `idempotency_key_reused`.")
    def post(self, request: Request, project_id: str) -> Response:
        project = self.get_project(request)
        key = idempotency_key(request)

        def create() -> CompressionJob:
            data = CompressionJobInput(data=request.data)
            data.is_valid(raise_exception=True)
            values = dict(data.validated_data)
            source = model_version_get(project=project,
                                       version_id=values.pop("source_model_version_id"))
            device_id = values.pop("device_id")
            device = device_get(project=project, device_id=device_id) if device_id else None
            return services.compression_job_create(project=project, source=source,
                                                   device=device, user=request.user,
                                                   idempotency=key, **values)

        job, created = idempotent_create(CompressionJob, project, key, create,
                                         kind="compression job")
        return created_or_replayed(CompressionJobOutput(job).data, created)


class CompressionJobDetailApi(ProjectApi):
    @extend_schema(responses=CompressionJobOutput, operation_id="compression_jobs_retrieve")
    def get(self, request: Request, project_id: str, job_id: str) -> Response:
        job = selectors.compression_job_get(project=self.get_project(request), job_id=job_id)
        return Response(CompressionJobOutput(job).data)


class CompressionJobCancelApi(ProjectApi):
    @extend_schema(request=None, responses=CompressionJobOutput,
                   operation_id="compression_jobs_cancel")
    def post(self, request: Request, project_id: str, job_id: str) -> Response:
        job = selectors.compression_job_get(project=self.get_project(request), job_id=job_id)
        return Response(CompressionJobOutput(services.compression_job_cancel(job=job)).data)
