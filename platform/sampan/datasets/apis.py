"""Datasets API: datasets, class labels, uploads/imports, samples, labels, boxes, versions."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.http import FileResponse, HttpResponseRedirect
from django.http.response import HttpResponseBase
from django.utils.translation import gettext as _
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import status
from rest_framework.negotiation import DefaultContentNegotiation
from rest_framework.parsers import FormParser, MultiPartParser
from rest_framework.request import Request
from rest_framework.response import Response

from sampan.core import storage as shared_storage
from sampan.core.apis import ARCHIVED_PARAMETER, ProjectApi, archived_filter
from sampan.core.errors import NotFound, ValidationFailed
from sampan.core.pagination import Pagination
from sampan.core.parsers import JSONParser
from sampan.datasets import imports, lifecycle, selectors, services
from sampan.datasets.exports import dataset_version_export, zip_download
from sampan.datasets import serializers as s
from sampan.datasets.etags import quoted
from sampan.datasets.hotkeys import class_label_hotkeys_set
from sampan.datasets.versions import dataset_version_create


class DatasetListApi(ProjectApi):
    @extend_schema(parameters=[ARCHIVED_PARAMETER], responses=s.DatasetOutput(many=True),
                   operation_id="datasets_list")
    def get(self, request: Request, project_id: str) -> Response:
        datasets = selectors.dataset_list(project=self.get_project(request),
                                          archived=archived_filter(request))
        return Response(s.DatasetOutput(datasets, many=True).data)

    @extend_schema(request=s.DatasetInput, responses={201: s.DatasetOutput},
                   operation_id="datasets_create")
    def post(self, request: Request, project_id: str) -> Response:
        project = self.get_project(request)
        data = s.DatasetInput(data=request.data)
        data.is_valid(raise_exception=True)
        dataset = services.dataset_create(project=project, user=request.user,
                                          **data.validated_data)
        dataset = selectors.dataset_get(project=project, dataset_id=dataset.pk)
        return Response(s.DatasetOutput(dataset).data, status=status.HTTP_201_CREATED)


class DatasetDetailApi(ProjectApi):
    """A dataset; renaming, archiving and deleting it need the editor role
    (``sampan.datasets.lifecycle`` says why)."""

    @extend_schema(responses=s.DatasetOutput, operation_id="datasets_retrieve")
    def get(self, request: Request, project_id: str, dataset_id: str) -> Response:
        dataset = selectors.dataset_get(project=self.get_project(request), dataset_id=dataset_id)
        return Response(s.DatasetOutput(dataset).data)

    @extend_schema(request=s.DatasetUpdateInput, responses=s.DatasetOutput,
                   operation_id="datasets_update")
    def patch(self, request: Request, project_id: str, dataset_id: str) -> Response:
        """Rename, describe, archive or unarchive (fields left out stay as they are)."""
        project = self.get_project(request)
        dataset = selectors.dataset_get(project=project, dataset_id=dataset_id)
        data = s.DatasetUpdateInput(data=request.data)
        data.is_valid(raise_exception=True)
        lifecycle.dataset_update(dataset=dataset, actor=request.user, **data.validated_data)
        return Response(s.DatasetOutput(selectors.dataset_get(project=project,
                                                              dataset_id=dataset_id)).data)

    @extend_schema(request=None, responses={204: None}, operation_id="datasets_delete")
    def delete(self, request: Request, project_id: str, dataset_id: str) -> Response:
        """Delete the dataset and its files. 409 ``delete_blocked`` (with ``details.blockers``)
        while an import, pre-labeling or training job runs on it."""
        dataset = selectors.dataset_get(project=self.get_project(request), dataset_id=dataset_id)
        lifecycle.dataset_delete(dataset=dataset, actor=request.user)
        return Response(status=status.HTTP_204_NO_CONTENT)


class ClassLabelListApi(ProjectApi):
    @extend_schema(request=s.ClassLabelInput, responses=s.ClassLabelOutput(many=True),
                   operation_id="class_labels_add")
    def post(self, request: Request, project_id: str, dataset_id: str) -> Response:
        dataset = selectors.dataset_get(project=self.get_project(request), dataset_id=dataset_id)
        data = s.ClassLabelInput(data=request.data)
        data.is_valid(raise_exception=True)
        services.class_labels_add(dataset=dataset, names=data.validated_data["names"])
        return Response(s.ClassLabelOutput(dataset.class_labels.all(), many=True).data)


class ClassLabelHotkeysApi(ProjectApi):
    parser_classes = [JSONParser]

    @extend_schema(request=s.HotkeysInput, responses=s.ClassLabelOutput(many=True),
                   operation_id="class_labels_hotkeys")
    def put(self, request: Request, project_id: str, dataset_id: str) -> Response:
        """Choose the labeling keys of some classes (the others keep theirs; "" = automatic).
        Answers every class of the dataset."""
        dataset = selectors.dataset_get(project=self.get_project(request), dataset_id=dataset_id)
        data = s.HotkeysInput(data=request.data)
        data.is_valid(raise_exception=True)
        classes = class_label_hotkeys_set(dataset=dataset, hotkeys=data.validated_data["hotkeys"])
        return Response(s.ClassLabelOutput(classes, many=True).data)


class ImportCreateApi(ProjectApi):
    """Files in the request (multipart, up to ``SAMPAN_MULTIPART_MAX_BYTES``), or, as JSON, the
    id of a complete resumable upload (``/api/v1/uploads/``, up to ``SAMPAN_UPLOAD_MAX_BYTES``)."""

    parser_classes = [MultiPartParser, FormParser, JSONParser]

    @extend_schema(request={"multipart/form-data": s.ImportInput,
                            "application/json": s.ImportFromUploadInput},
                   responses={202: s.ImportJobOutput}, operation_id="imports_create")
    def post(self, request: Request, project_id: str, dataset_id: str) -> Response:
        dataset = selectors.dataset_get(project=self.get_project(request), dataset_id=dataset_id)
        if not hasattr(request.data, "get"):  # a JSON array or scalar (a 500 before: fuzzing)
            raise ValidationFailed(_("the body must be a JSON object with upload_id, or a "
                                     "multipart form with files"), field="upload_id")
        if "upload_id" in request.data:
            source = s.ImportFromUploadInput(data=request.data)
            source.is_valid(raise_exception=True)
            job = imports.import_job_create_from_upload(
                dataset=dataset, user=request.user, upload_id=source.validated_data["upload_id"],
                label=source.validated_data["label"], options=source.text_options())
            return Response(s.ImportJobOutput(job).data, status=status.HTTP_202_ACCEPTED)
        data = s.ImportInput(data={"files": request.FILES.getlist("files"),
                                   "label": request.data.get("label", ""),
                                   **{key: request.data[key] for key in (
                                       "text_column", "label_column", "encoding", "sheet")
                                      if key in request.data}})
        data.is_valid(raise_exception=True)
        job = imports.import_job_create(dataset=dataset, files=data.validated_data["files"],
                                         label=data.validated_data["label"],
                                         options=data.text_options())
        return Response(s.ImportJobOutput(job).data, status=status.HTTP_202_ACCEPTED)


class ImportDetailApi(ProjectApi):
    @extend_schema(responses=s.ImportJobOutput, operation_id="imports_retrieve")
    def get(self, request: Request, project_id: str, job_id: str) -> Response:
        job = selectors.import_job_get(project=self.get_project(request), job_id=job_id)
        return Response(s.ImportJobOutput(job).data)


class SampleListApi(ProjectApi):
    pagination_class = Pagination

    @extend_schema(
        parameters=[s.SampleListQuery, OpenApiParameter("page", int),
                    OpenApiParameter("page_size", int)],
        responses=s.SampleOutput(many=True), operation_id="samples_list")
    def get(self, request: Request, project_id: str, dataset_id: str) -> Response:
        project = self.get_project(request)
        dataset = selectors.dataset_get(project=project, dataset_id=dataset_id)
        query = s.SampleListQuery(data=request.query_params)
        query.is_valid(raise_exception=True)
        filters = query.validated_data
        version = None
        if filters.get("version"):
            version = selectors.dataset_version_get(project=project, version_id=filters["version"])
        queryset = selectors.sample_list(
            dataset=dataset, label=filters.get("label"), unlabeled=filters["unlabeled"],
            no_objects=filters["no_objects"], split_version=version, split=filters.get("split"),
            ordering=filters["ordering"], search=filters.get("search", ""))
        return self.paginate(request, queryset.select_related("dataset"), s.SampleOutput)


# If-Match on a write of a sample's annotations (sampan.datasets.etags): optional; when given and
# stale, the write is refused with 412 and nothing changes.
IF_MATCH = OpenApiParameter(
    "If-Match", str, OpenApiParameter.HEADER, required=False,
    description='The sample\'s etag as read ("<etag>"): refused with 412 precondition_failed '
                "when its annotations changed since. Without it the write goes on.")
PRECONDITION_FAILED = OpenApiResponse(description=(
    "If-Match named an older etag: someone else changed the sample's annotations meanwhile. "
    '{"error": {"code": "precondition_failed", "message", "field": "If-Match", '
    '"details": {"etag"}}}; nothing was written.'))


def sample_response(project: Any, sample_id: str) -> Response:
    """The sample as stored now, with its ``ETag`` header."""
    data = s.SampleOutput(selectors.sample_get(project=project, sample_id=sample_id)).data
    return Response(data, headers={"ETag": quoted(data["etag"])})


class SampleDetailApi(ProjectApi):
    @extend_schema(responses=s.SampleOutput, operation_id="samples_retrieve")
    def get(self, request: Request, project_id: str, sample_id: str) -> Response:
        return sample_response(self.get_project(request), sample_id)


class SampleImageApi(ProjectApi):
    @extend_schema(responses={(200, "image/png"): OpenApiTypes.BINARY,
                              302: OpenApiResponse(description=(
                                  "with object storage (SAMPAN_STORAGE=s3): a presigned URL of "
                                  "the image in the bucket"))},
                   operation_id="samples_image")
    def get(self, request: Request, project_id: str, sample_id: str) -> HttpResponseBase:
        sample = selectors.sample_get(project=self.get_project(request), sample_id=sample_id)
        if not sample.file:
            raise NotFound(_("this sample is a text: it has no image"))
        # a sample's image never changes (content-addressed): browsers keep it, so scrolling back
        # through the gallery costs no request. Private: it needs the project's credentials.
        url = shared_storage.download_url(sample.file, content_type="image/png")
        if url is not None:
            # the bucket serves the bytes (presigned URL); the redirect itself is kept for half
            # the URL's life, so a gallery scrolled back does not ask again
            response = HttpResponseRedirect(url)
            response["Cache-Control"] = \
                f"private, max-age={int(settings.SAMPAN_S3_URL_EXPIRE_S) // 2}"
            return response
        try:
            handle = shared_storage.open_local(sample.file)
        except FileNotFoundError:
            raise NotFound(_("the image file of this sample is missing")) from None
        response = FileResponse(handle, content_type="image/png")
        response["Cache-Control"] = "private, max-age=31536000, immutable"
        response["ETag"] = f'"{sample.content_sha256}"'
        return response


class SampleLabelApi(ProjectApi):
    parser_classes = [JSONParser]

    @extend_schema(request=s.LabelInput, parameters=[IF_MATCH],
                   responses={200: s.SampleOutput, 412: PRECONDITION_FAILED},
                   operation_id="samples_label")
    def put(self, request: Request, project_id: str, sample_id: str) -> Response:
        project = self.get_project(request)
        sample = selectors.sample_get(project=project, sample_id=sample_id)
        data = s.LabelInput(data=request.data)
        data.is_valid(raise_exception=True)
        services.sample_label_set(sample=sample, label=data.validated_data.get("class_label"),
                                  label_id=data.validated_data.get("class_label_id"),
                                  if_match=request.headers.get("If-Match"))
        return sample_response(project, sample_id)


class SampleBoxesApi(ProjectApi):
    parser_classes = [JSONParser]

    @extend_schema(request=s.BoxesInput, parameters=[IF_MATCH],
                   responses={200: s.SampleOutput, 412: PRECONDITION_FAILED},
                   operation_id="samples_boxes")
    def put(self, request: Request, project_id: str, sample_id: str) -> Response:
        project = self.get_project(request)
        sample = selectors.sample_get(project=project, sample_id=sample_id)
        data = s.BoxesInput(data=request.data)
        data.is_valid(raise_exception=True)
        services.sample_boxes_set(sample=sample, boxes=data.validated_data["boxes"],
                                  no_objects=data.validated_data["no_objects"],
                                  resolved_suggestion_ids=data.validated_data[
                                      "resolved_suggestion_ids"],
                                  if_match=request.headers.get("If-Match"))
        return sample_response(project, sample_id)


class BulkLabelApi(ProjectApi):
    parser_classes = [JSONParser]

    @extend_schema(request=s.BulkLabelInput, responses={200: OpenApiTypes.OBJECT},
                   operation_id="samples_label_bulk")
    def post(self, request: Request, project_id: str, dataset_id: str) -> Response:
        dataset = selectors.dataset_get(project=self.get_project(request), dataset_id=dataset_id)
        data = s.BulkLabelInput(data=request.data)
        data.is_valid(raise_exception=True)
        count = services.samples_label_bulk(
            dataset=dataset, sample_ids=data.validated_data["sample_ids"],
            label=data.validated_data.get("class_label"),
            label_id=data.validated_data.get("class_label_id"))
        return Response({"labeled": count})


class DatasetVersionListApi(ProjectApi):
    @extend_schema(responses=s.DatasetVersionOutput(many=True),
                   operation_id="dataset_versions_list")
    def get(self, request: Request, project_id: str, dataset_id: str) -> Response:
        project = self.get_project(request)
        dataset = selectors.dataset_get(project=project, dataset_id=dataset_id)
        versions = selectors.dataset_version_list(project=project, dataset=dataset)
        return Response(s.DatasetVersionOutput(versions, many=True).data)

    @extend_schema(request=s.DatasetVersionInput, responses={201: s.DatasetVersionOutput},
                   operation_id="dataset_versions_create")
    def post(self, request: Request, project_id: str, dataset_id: str) -> Response:
        dataset = selectors.dataset_get(project=self.get_project(request), dataset_id=dataset_id)
        data = s.DatasetVersionInput(data=request.data)
        data.is_valid(raise_exception=True)
        version = dataset_version_create(dataset=dataset, user=request.user,
                                         **data.validated_data)
        return Response(s.DatasetVersionOutput(version).data, status=status.HTTP_201_CREATED)


class DatasetVersionDetailApi(ProjectApi):
    @extend_schema(responses=s.DatasetVersionOutput, operation_id="dataset_versions_retrieve")
    def get(self, request: Request, project_id: str, version_id: str) -> Response:
        version = selectors.dataset_version_get(project=self.get_project(request),
                                                version_id=version_id)
        return Response(s.DatasetVersionOutput(version).data)


class DatasetVersionItemsApi(ProjectApi):
    @extend_schema(parameters=[s.DatasetVersionItemsQuery],
                   responses=s.DatasetVersionItemOutput(many=True),
                   operation_id="dataset_versions_items")
    def get(self, request: Request, project_id: str, version_id: str) -> Response:
        """The named samples as the version froze them (split, image size, boxes or class), in
        the order asked; samples not in the version are left out. At most 100 ids a request
        (400 on ``sample_id``): an evaluation report's error browser draws the true boxes of the
        page of images it shows."""
        version = selectors.dataset_version_get(project=self.get_project(request),
                                                version_id=version_id)
        query = s.DatasetVersionItemsQuery(data=request.query_params)
        query.is_valid(raise_exception=True)
        items = selectors.dataset_version_items(version=version,
                                                sample_ids=query.validated_data["sample_id"])
        return Response(s.DatasetVersionItemOutput(items, many=True).data)


class _FormatIsNotARenderer(DefaultContentNegotiation):
    """``?format=`` names the export's format here; DRF would read it as the renderer to use
    (``URL_FORMAT_OVERRIDE``) and answer 404 for ``coco``. Errors render as JSON."""

    def select_renderer(self, request: Request, renderers: list, format_suffix: str | None = None
                        ) -> tuple:
        return renderers[0], renderers[0].media_type


class DatasetVersionExportApi(ProjectApi):
    content_negotiation_class = _FormatIsNotARenderer

    @extend_schema(parameters=[s.DatasetVersionExportQuery],
                   responses={(200, "application/zip"): OpenApiTypes.BINARY},
                   operation_id="dataset_versions_export")
    def get(self, request: Request, project_id: str, version_id: str) -> HttpResponseBase:
        """The version as a zip download, streamed: COCO (``<split>/_annotations.coco.json``),
        Pascal VOC (``Annotations/``, ``JPEGImages/``, ``ImageSets/Main/``) or YOLO
        (``images/<split>/``, ``labels/<split>/``, ``data.yaml``) for object detection,
        ImageNet folders (``<split>/<class>/``) for image classification (docs/contracts.md,
        "Detection dataset formats")."""
        version = selectors.dataset_version_get(project=self.get_project(request),
                                                version_id=version_id)
        query = s.DatasetVersionExportQuery(data=request.query_params)
        query.is_valid(raise_exception=True)
        export = dataset_version_export(version=version,
                                        export_format=query.validated_data.get("format"))
        return zip_download(request, export)
