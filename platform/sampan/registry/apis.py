"""Registry API: models, their versions (metrics, lineage, files) and package downloads."""

from __future__ import annotations

import io
import zipfile
from datetime import UTC, datetime
from typing import Any

from django.http import FileResponse, HttpResponse, HttpResponseRedirect, StreamingHttpResponse
from django.http.response import HttpResponseBase
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import (
    OpenApiResponse,
    extend_schema,
)
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response

from sampan.core import storage
from sampan.core.apis import ProjectApi
from sampan.core.disposition import content_disposition
from sampan.datasets.serializers import DatasetVersionRef
from sampan.registry import offline, selectors
from sampan.registry.services import model_version_package_zip

_REDIRECT = ("with object storage (SAMPAN_STORAGE=s3): a presigned URL of the file in the bucket, "
             "valid SAMPAN_S3_URL_EXPIRE_S seconds; HTTP Range works there")
_CONTENT_TYPES = {"model.onnx": "application/octet-stream", "manifest.json": "application/json"}


class ModelOutput(serializers.Serializer):
    id = serializers.UUIDField()
    name = serializers.CharField()
    task_type = serializers.CharField()
    description = serializers.CharField()
    version_count = serializers.IntegerField()
    created_at = serializers.DateTimeField()


class ModelVersionOutput(serializers.Serializer):
    id = serializers.UUIDField()
    model_id = serializers.UUIDField()
    model_name = serializers.CharField(source="model.name")
    version = serializers.IntegerField()
    task_type = serializers.CharField()
    labels = serializers.ListField(child=serializers.CharField())
    metrics = serializers.JSONField()
    pretrained = serializers.BooleanField()
    dataset_version_id = serializers.UUIDField(allow_null=True)
    dataset_version = DatasetVersionRef(allow_null=True, read_only=True,
                                        help_text="Lineage: the dataset version it was trained on.")
    training_job_id = serializers.UUIDField(allow_null=True)
    parent_id = serializers.UUIDField(allow_null=True)
    model_sha256 = serializers.CharField()
    model_size = serializers.IntegerField(help_text="bytes")
    files = serializers.SerializerMethodField()
    manifest = serializers.JSONField()
    created_at = serializers.DateTimeField()

    def get_files(self, version: Any) -> dict[str, Any]:
        return version.manifest.get("files", {})


class ModelVersionListQuery(serializers.Serializer):
    model = serializers.UUIDField(required=False, help_text="Only versions of this model.")


class ModelListApi(ProjectApi):
    @extend_schema(responses=ModelOutput(many=True), operation_id="models_list")
    def get(self, request: Request, project_id: str) -> Response:
        return Response(ModelOutput(selectors.model_list(project=self.get_project(request)),
                                    many=True).data)


class ModelVersionListApi(ProjectApi):
    @extend_schema(parameters=[ModelVersionListQuery], responses=ModelVersionOutput(many=True),
                   operation_id="model_versions_list")
    def get(self, request: Request, project_id: str) -> Response:
        project = self.get_project(request)
        query = ModelVersionListQuery(data=request.query_params)
        query.is_valid(raise_exception=True)
        model = None
        if query.validated_data.get("model"):
            model = selectors.model_get(project=project, model_id=query.validated_data["model"])
        versions = selectors.model_version_list(project=project, model=model)
        return Response(ModelVersionOutput(versions, many=True).data)


class ModelVersionDetailApi(ProjectApi):
    @extend_schema(responses=ModelVersionOutput, operation_id="model_versions_retrieve")
    def get(self, request: Request, project_id: str, version_id: str) -> Response:
        version = selectors.model_version_get(project=self.get_project(request),
                                              version_id=version_id)
        return Response(ModelVersionOutput(version).data)


class ModelVersionFileApi(ProjectApi):
    @extend_schema(responses={(200, "application/octet-stream"): OpenApiTypes.BINARY,
                              302: OpenApiResponse(description=_REDIRECT)},
                   operation_id="model_versions_file")
    def get(self, request: Request, project_id: str, version_id: str, name: str
            ) -> HttpResponseBase:
        version = selectors.model_version_get(project=self.get_project(request),
                                              version_id=version_id)
        stored = selectors.model_version_file_name(version, name)
        url = storage.download_url(stored, filename=name, content_type=_CONTENT_TYPES[name])
        if url is not None:
            return HttpResponseRedirect(url)
        path = selectors.model_version_file(version, name)
        response = FileResponse(open(path, "rb"), as_attachment=True)
        response["Content-Disposition"] = content_disposition(name)
        return response


class ModelVersionPackageApi(ProjectApi):
    @extend_schema(responses={(200, "application/zip"): OpenApiTypes.BINARY,
                              302: OpenApiResponse(description=_REDIRECT)},
                   operation_id="model_versions_package")
    def get(self, request: Request, project_id: str, version_id: str) -> HttpResponseBase:
        """The model package as a zip: model.onnx + manifest.json."""
        version = selectors.model_version_get(project=self.get_project(request),
                                              version_id=version_id)
        # "<model name>-v<version>.zip" for any Unicode model name (sampan.core.disposition)
        filename = f"{version.model.name}-v{version.version}.zip"
        if storage.is_remote():
            url = storage.download_url(model_version_package_zip(version), filename=filename,
                                       content_type="application/zip", default="model")
            return HttpResponseRedirect(url)
        buffer = io.BytesIO()
        with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
            for name in ("manifest.json", "model.onnx"):
                archive.write(selectors.model_version_file(version, name), arcname=name)
        response = HttpResponse(buffer.getvalue(), content_type="application/zip")
        response["Content-Disposition"] = content_disposition(filename, default="model")
        return response


class WheelhouseOutput(serializers.Serializer):
    target = serializers.ChoiceField(choices=list(offline.TARGETS))
    python = serializers.ChoiceField(choices=list(offline.PYTHONS))
    wheels = serializers.IntegerField(source="wheel_count")
    bytes = serializers.IntegerField(help_text="the wheels' total size")
    built_at = serializers.DateTimeField()


class AgentWheelhouseListApi(ProjectApi):
    @extend_schema(responses=WheelhouseOutput(many=True), operation_id="agent_wheelhouses_list")
    def get(self, request: Request, project_id: str) -> Response:
        """The device targets this server can build offline bundles for (built with
        ``manage.py sampan_wheelhouse``); an empty list means none yet."""
        self.get_project(request)
        return Response(WheelhouseOutput([{
            "target": house.target, "python": house.python, "wheel_count": len(house.wheels),
            "bytes": house.bytes,
            "built_at": datetime.fromtimestamp(house.built_at, tz=UTC)}
            for house in offline.wheelhouses()], many=True).data)


class OfflineBundleQuery(serializers.Serializer):
    target = serializers.ChoiceField(choices=list(offline.TARGETS), default="linux-x86_64",
                                     help_text="the device's OS and CPU")
    python = serializers.ChoiceField(choices=list(offline.PYTHONS), default="3.11",
                                     help_text="the device's Python")


class ModelVersionOfflineBundleApi(ProjectApi):
    @extend_schema(parameters=[OfflineBundleQuery],
                   responses={(200, "application/x-tar"): OpenApiTypes.BINARY,
                              400: OpenApiResponse(description="an unknown target or python"),
                              409: OpenApiResponse(description=(
                                  "wheelhouse_missing: no agent wheels for that target on "
                                  "this server (the message names the command); or the "
                                  "manifest's key was retired"))},
                   operation_id="model_versions_offline_bundle")
    def get(self, request: Request, project_id: str, version_id: str) -> HttpResponseBase:
        """An offline bundle (tar): the agent's wheels for ``target``/``python``, this model
        version's signed package and ``install.sh``, for a device that never reaches this
        server (docs/edge.md). 409 ``wheelhouse_missing`` names the command that prepares the
        wheels on this server."""
        return self._bundle(request, project_id, version_id, build=True)

    @extend_schema(exclude=True)
    def head(self, request: Request, project_id: str, version_id: str) -> HttpResponseBase:
        """GET's checks and headers without building a bundle not built yet (``wget
        --spider``, ``curl -I``): its Content-Length only once built."""
        return self._bundle(request, project_id, version_id, build=False)

    def _bundle(self, request: Request, project_id: str, version_id: str, *, build: bool
                ) -> HttpResponseBase:
        version = selectors.model_version_get(project=self.get_project(request),
                                              version_id=version_id)
        query = OfflineBundleQuery(data=request.query_params)
        query.is_valid(raise_exception=True)
        target, python = query.validated_data["target"], query.validated_data["python"]
        bundle = offline.offline_bundle(version, target=target, python=python, build=build)
        response: HttpResponseBase
        if bundle is None:
            response = StreamingHttpResponse(iter(()), content_type="application/x-tar")
        else:
            response = FileResponse(bundle, content_type="application/x-tar")
        response["Content-Disposition"] = content_disposition(
            f"{version.model.name}-v{version.version}-offline-{target}-py{python}.tar",
            default="model")
        return response
