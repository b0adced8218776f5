"""Assisted labeling API: pre-labeling runs of a model over a dataset, and accepting or
rejecting the suggestions they leave (docs/contracts.md, "Assisted labeling")."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import status
from rest_framework.request import Request
from rest_framework.response import Response

from sampan.core.apis import ProjectApi
from sampan.core.errors import NotFound
from sampan.core.parsers import JSONParser
from sampan.datasets import selectors
from sampan.datasets import serializers as s
from sampan.datasets.apis import IF_MATCH, PRECONDITION_FAILED, sample_response
from sampan.datasets.prelabel import prelabel_job_cancel, prelabel_job_create
from sampan.datasets.suggestions import sample_suggestions_accept, sample_suggestions_reject
from sampan.registry.selectors import model_version_get


class PrelabelJobListApi(ProjectApi):
    parser_classes = [JSONParser]

    @extend_schema(responses=s.PrelabelJobOutput(many=True), operation_id="prelabel_jobs_list")
    def get(self, request: Request, project_id: str, dataset_id: str) -> Response:
        """The dataset's pre-labeling runs, newest first (the last 20)."""
        project = self.get_project(request)
        dataset = selectors.dataset_get(project=project, dataset_id=dataset_id)
        jobs = selectors.prelabel_job_list(project=project, dataset=dataset)[:20]
        return Response(s.PrelabelJobOutput(jobs, many=True).data)

    @extend_schema(request=s.PrelabelJobInput, responses={202: s.PrelabelJobOutput},
                   operation_id="prelabel_jobs_create")
    def post(self, request: Request, project_id: str, dataset_id: str) -> Response:
        """Run a model version over the dataset's unlabeled samples: it leaves suggestions and
        an uncertainty per sample, never labels. 400 on model_version_id for a model of another
        task or with no class of the dataset; 409 while another run has not ended."""
        project = self.get_project(request)
        dataset = selectors.dataset_get(project=project, dataset_id=dataset_id)
        data = s.PrelabelJobInput(data=request.data)
        data.is_valid(raise_exception=True)
        try:
            version = model_version_get(project=project,
                                        version_id=data.validated_data["model_version_id"])
        except NotFound as exc:
            raise NotFound(exc.message, field="model_version_id") from None
        job = prelabel_job_create(dataset=dataset, model_version=version,
                                  score_threshold=data.validated_data["score_threshold"])
        return Response(s.PrelabelJobOutput(job).data, status=status.HTTP_202_ACCEPTED)


class PrelabelJobDetailApi(ProjectApi):
    @extend_schema(responses=s.PrelabelJobOutput, operation_id="prelabel_jobs_retrieve")
    def get(self, request: Request, project_id: str, job_id: str) -> Response:
        job = selectors.prelabel_job_get(project=self.get_project(request), job_id=job_id)
        return Response(s.PrelabelJobOutput(job).data)


class PrelabelJobCancelApi(ProjectApi):
    @extend_schema(request=None, responses=s.PrelabelJobOutput,
                   operation_id="prelabel_jobs_cancel")
    def post(self, request: Request, project_id: str, job_id: str) -> Response:
        """Stop a run before its next image; the suggestions it stored stay."""
        job = selectors.prelabel_job_get(project=self.get_project(request), job_id=job_id)
        return Response(s.PrelabelJobOutput(prelabel_job_cancel(job=job)).data)


class SampleSuggestionsAcceptApi(ProjectApi):
    parser_classes = [JSONParser]

    @extend_schema(request=s.SuggestionsInput, parameters=[IF_MATCH],
                   responses={200: s.SampleOutput, 412: PRECONDITION_FAILED},
                   operation_id="samples_suggestions_accept")
    def post(self, request: Request, project_id: str, sample_id: str) -> Response:
        """Accept suggestions of the sample (none named: all of them): a class suggestion
        becomes its class label, box suggestions are added to its boxes; each accepted one is
        deleted. Answers the sample as stored, with its new ETag."""
        project = self.get_project(request)
        sample = selectors.sample_get(project=project, sample_id=sample_id)
        data = s.SuggestionsInput(data=request.data)
        data.is_valid(raise_exception=True)
        sample_suggestions_accept(sample=sample,
                                  suggestion_ids=data.validated_data["suggestion_ids"],
                                  if_match=request.headers.get("If-Match"))
        return sample_response(project, sample_id)


class SampleSuggestionsRejectApi(ProjectApi):
    parser_classes = [JSONParser]

    @extend_schema(request=s.SuggestionsInput, responses=s.SampleOutput,
                   operation_id="samples_suggestions_reject")
    def post(self, request: Request, project_id: str, sample_id: str) -> Response:
        """Delete suggestions of the sample (none named: all of them); its labels and ETag do
        not change."""
        project = self.get_project(request)
        sample = selectors.sample_get(project=project, sample_id=sample_id)
        data = s.SuggestionsInput(data=request.data)
        data.is_valid(raise_exception=True)
        sample_suggestions_reject(sample=sample,
                                  suggestion_ids=data.validated_data["suggestion_ids"])
        return sample_response(project, sample_id)
