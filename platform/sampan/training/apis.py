"""Training API: create, list, inspect and cancel training jobs; read evaluation reports."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from drf_spectacular.extensions import OpenApiSerializerFieldExtension
from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response

from sampan.core.stored_text import StoredTextField
from sampan.core.apis import IDEMPOTENCY_KEY_PARAMETER, ProjectApi, created_or_replayed
from sampan.core.idempotency import idempotency_key, idempotent_create
from sampan.core.pagination import Pagination
from sampan.core.validation import NameField
from sampan.datasets.selectors import dataset_version_get
from sampan.datasets.serializers import DatasetVersionRef
from sampan.training import selectors, services
from sampan.training.budget import BUDGET_FIXED_S
from sampan.training.models import Augmentation, ModelPreference, TrainingJob
from sampan.training.notes import WeightsNoteField
from sampan.training.stored_texts import RecipeField, ReportField


class TrainingBudgetField(serializers.FloatField):
    """The training budget, seconds. The range is checked by ``training_job_create`` (its
    messages name the version's own minimum and the setting); the schema states it
    (``TrainingBudgetSchema``)."""


class TrainingBudgetSchema(OpenApiSerializerFieldExtension):
    target_class = TrainingBudgetField

    def map_serializer_field(self, auto_schema: Any, direction: str) -> dict[str, Any]:
        schema: dict[str, Any] = auto_schema._map_serializer_field(self.target, direction,
                                                                   bypass_extensions=True)
        if direction == "request":
            schema["minimum"] = BUDGET_FIXED_S
            schema["maximum"] = settings.SAMPAN_TRAINING_MAX_BUDGET_S
        return schema


class TrainingJobInput(serializers.Serializer):
    dataset_version_id = serializers.UUIDField()
    budget_s = TrainingBudgetField(
        default=300.0,
        help_text="Wall-clock budget, seconds: at least the version's min_budget_s (15 s, or 60 s "
                  "for object detection, plus a share per image and pixel), at most "
                  "SAMPAN_TRAINING_MAX_BUDGET_S (24 h by default); 400 naming budget_s "
                  "otherwise.")
    seed = serializers.IntegerField(default=0, min_value=0, max_value=2**31 - 1)
    model_name = NameField(required=False, allow_blank=True, default="", max_length=200)
    augmentation = serializers.ChoiceField(
        choices=Augmentation.choices, default=Augmentation.AUTO,
        help_text="auto: chosen from the data (no flips for digits or text); none, light, strong. "
                  "Object detection: auto is light (scale jitter 0.75-1.33, photometric "
                  "distortion half the time), strong 0.5-1.6 and most of the time.")
    model_preference = serializers.ChoiceField(
        choices=ModelPreference.choices, default=ModelPreference.MORE_ACCURATE,
        help_text="more_accurate: resolution up to 224 px; faster: at most 128 px "
                  "(~3x fewer FLOPs on the device).")
    allow_flips = serializers.BooleanField(
        default=True, help_text="false: never mirror the images (text, signs, arrows: left and "
                                "right matter). true: horizontal flips where the data allows "
                                "(classification: colour photos of 64 px and more; detection: "
                                "always).")


class TrainingJobOutput(serializers.Serializer):
    id = serializers.UUIDField()
    dataset_version_id = serializers.UUIDField()
    dataset_version = DatasetVersionRef(read_only=True)
    task_type = serializers.CharField()
    model_name = serializers.CharField()
    architecture = serializers.CharField(
        help_text="The image backbone trained: mobilenet_v2 (image classification, and the "
                  "detector's backbone). Empty for text classification: the engine's model "
                  "families compete instead (recipe.family, recipe.candidates). Not a request "
                  "field: an architecture sent when creating a job is ignored, for every task.")
    budget_s = serializers.FloatField()
    seed = serializers.IntegerField()
    augmentation = serializers.ChoiceField(choices=Augmentation.choices)
    model_preference = serializers.ChoiceField(choices=ModelPreference.choices)
    allow_flips = serializers.BooleanField()
    status = serializers.CharField()
    attempt = serializers.IntegerField()
    progress = serializers.JSONField()
    history = serializers.JSONField()
    recipe = RecipeField()  # a text job's reasons in the request's language
    metrics = serializers.JSONField(
        help_text="Image classification: val_accuracy, macro_f1 (validation split), best_epoch, "
                  "best_phase; newer jobs add evaluated_on (test or val) and, with a test split, "
                  "test_accuracy and test_macro_f1. Object detection: val_map50, val_map, "
                  "val_f1, score_threshold, best_step, evaluated_on and, with a test split, "
                  "test_map50 and test_map.")
    pretrained = serializers.BooleanField(allow_null=True)
    weights_note = WeightsNoteField(
        help_text="Which weights training started from, or why none (in the request's "
                  "language).")
    error = StoredTextField(help_text="Why the job failed or was cancelled, in the "
                                      "request's language where the platform wrote it.")
    model_version_id = serializers.UUIDField(allow_null=True)
    created_at = serializers.DateTimeField()
    started_at = serializers.DateTimeField(allow_null=True)
    finished_at = serializers.DateTimeField(allow_null=True)
    heartbeat_at = serializers.DateTimeField(allow_null=True)


class EvaluationReportOutput(serializers.Serializer):
    training_job_id = serializers.UUIDField()
    split = serializers.CharField(help_text="The split the report is computed on: test, or val "
                                            "when the version has no test split.")
    labels = serializers.ListField(child=serializers.CharField())
    report = ReportField(
        help_text="Image classification: accuracy, per_class, macro_f1, confusion_matrix, "
                  "predictions on `split`; newer reports add validation {accuracy, macro_f1, "
                  "n}. Object detection (task: object_detection): n, boxes, map50, map, "
                  "score_threshold, precision, recall, f1, per_class, pr_curves, errors, "
                  "error_counts, predictions, validation {map50, map, n, f1}, "
                  "skipped_samples (docs/contracts.md, \"Evaluation report of a detector\").")
    parity = serializers.JSONField()
    pretrained = serializers.BooleanField(source="training_job.pretrained", allow_null=True,
                                          help_text="False: trained from random initialisation.")
    weights_note = WeightsNoteField(source="training_job.weights_note")
    created_at = serializers.DateTimeField()


class TrainingJobListApi(ProjectApi):
    pagination_class = Pagination

    @extend_schema(responses=TrainingJobOutput(many=True), operation_id="training_jobs_list")
    def get(self, request: Request, project_id: str) -> Response:
        project = self.get_project(request)
        return self.paginate(request, selectors.training_job_list(project=project),
                             TrainingJobOutput)

    @extend_schema(request=TrainingJobInput, parameters=[IDEMPOTENCY_KEY_PARAMETER],
                   responses={201: TrainingJobOutput, 200: TrainingJobOutput},
                   operation_id="training_jobs_create",
                   description="Creates and queues a training job (201). With an "
                   "`Idempotency-Key` header that a job of this project already holds, answers "
                   "that job (200, `Idempotent-Replayed: true`) and starts nothing; the same key "
                   "with a different body: 422 `idempotency_key_reused`.")
    def post(self, request: Request, project_id: str) -> Response:
        project = self.get_project(request)
        key = idempotency_key(request)

        def create() -> TrainingJob:
            data = TrainingJobInput(data=request.data)
            data.is_valid(raise_exception=True)
            values = dict(data.validated_data)
            version = dataset_version_get(project=project,
                                          version_id=values.pop("dataset_version_id"))
            return services.training_job_create(project=project, dataset_version=version,
                                                user=request.user, idempotency=key, **values)

        job, created = idempotent_create(TrainingJob, project, key, create, kind="training job")
        return created_or_replayed(TrainingJobOutput(job).data, created)


class TrainingJobDetailApi(ProjectApi):
    @extend_schema(responses=TrainingJobOutput, operation_id="training_jobs_retrieve")
    def get(self, request: Request, project_id: str, job_id: str) -> Response:
        job = selectors.training_job_get(project=self.get_project(request), job_id=job_id)
        return Response(TrainingJobOutput(job).data)


class TrainingJobCancelApi(ProjectApi):
    @extend_schema(request=None, responses=TrainingJobOutput, operation_id="training_jobs_cancel")
    def post(self, request: Request, project_id: str, job_id: str) -> Response:
        job = selectors.training_job_get(project=self.get_project(request), job_id=job_id)
        cancelled = services.training_job_cancel(job=job, user=request.user)
        return Response(TrainingJobOutput(cancelled).data)


class EvaluationReportApi(ProjectApi):
    @extend_schema(responses=EvaluationReportOutput, operation_id="training_jobs_report")
    def get(self, request: Request, project_id: str, job_id: str) -> Response:
        job = selectors.training_job_get(project=self.get_project(request), job_id=job_id)
        return Response(EvaluationReportOutput(selectors.evaluation_report_get(job=job)).data)
