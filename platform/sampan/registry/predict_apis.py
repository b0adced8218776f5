"""Registry API: try a model version ("try-it"): ``POST .../model-versions/<id>/predict/`` with
an image (multipart ``file``) or a text (multipart or JSON ``text``), read by the agent's own rule
(edge_agent.text_request) and answered as the agent answers (docs/contracts.md)."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core.exceptions import RequestDataTooBig
from django.utils.datastructures import MultiValueDict
from django.utils.translation import gettext as _
from django.utils.translation import gettext_noop
from drf_spectacular.utils import (
    OpenApiParameter,
    PolymorphicProxySerializer,
    extend_schema,
    extend_schema_field,
)
from rest_framework import serializers
from rest_framework.parsers import BaseParser, DataAndFiles, MultiPartParser
from rest_framework.request import Request
from rest_framework.response import Response

from edge_agent.text_request import (
    TextInputError,
    TextRequestError,
    TopKError,
    WrongInputError,
    load_text_request,
    parse_top_k,
    request_top_k,
    text_input,
)
from sampan.accounts.models import Role
from sampan.core.apis import ProjectApi
from sampan.core.errors import ValidationFailed
from sampan.registry import selectors
from sampan.registry.inference import model_version_predict, text_problem


class PredictMultiPartParser(MultiPartParser):
    """multipart/form-data whose ``text`` field reaches the view as the bytes sent: the agent's
    text rule (``edge_agent.text_session.text_input``) decides on bytes that are not UTF-8,
    where Django would have read them as U+FFFD. The other fields are read as UTF-8, as
    before."""

    def parse(self, stream: Any, media_type: Any = None,
              parser_context: Any = None) -> DataAndFiles:
        # latin-1 gives every byte one character: the bytes sent come back from each field
        parsed = super().parse(stream, media_type, {**(parser_context or {}),
                                                    "encoding": "latin-1"})
        data = MultiValueDict()  # not a QueryDict: that would make the bytes text again
        for key, values in parsed.data.lists():
            name = key.encode("latin-1").decode("utf-8", "replace")
            sent = [value.encode("latin-1") for value in values]
            data.setlist(name, sent if name == "text" else
                         [value.decode("utf-8", "replace") for value in sent])
        return DataAndFiles(data, parsed.files)


# why a JSON body is not a text request, by TextRequestError.kind: the agent's reasons
# (edge_agent.text_session.load_text_request), with what try-it takes after them
_REQUEST_PROBLEMS = {
    "empty": gettext_noop("the body is empty; send JSON {\"text\": \"...\"}"),
    "not_utf8": gettext_noop("the body is not UTF-8 (byte 0x%(byte)02x at offset "
                             "%(offset)d); send JSON {\"text\": \"...\"}"),
    "not_json": gettext_noop("the body is not JSON (%(error)s); send JSON "
                             "{\"text\": \"...\"}"),
    "too_deep": gettext_noop("the body is not JSON this server reads (nested too deeply); "
                             "send JSON {\"text\": \"...\"}"),
    "not_object": gettext_noop("the body must be a JSON object, not %(type)s; send JSON "
                               "{\"text\": \"...\"}"),
}
_JSON_TYPES = {"an object": gettext_noop("an object"), "an array": gettext_noop("an array"),
               "a string": gettext_noop("a string"), "a boolean": gettext_noop("a boolean"),
               "a number": gettext_noop("a number"), "null": gettext_noop("null")}
_READ_CHUNK = 1 << 16


def request_problem(error: TextRequestError) -> str:
    """The agent's reason for a body that is not a text request, in the active language."""
    params = dict(error.params)
    if "type" in params:
        params["type"] = _(_JSON_TYPES.get(str(params["type"]), str(params["type"])))
    template = _REQUEST_PROBLEMS.get(error.kind)
    try:
        return _(template) % params if template else str(error)
    except (KeyError, TypeError, ValueError):
        return str(error)


def read_bounded(stream: Any, content_length: Any, limit: int | None) -> bytes:
    """A request body read whole, refused past ``limit`` bytes (RequestDataTooBig: 413
    ``too_large``, as Django refuses a multipart body's fields past the same
    DATA_UPLOAD_MAX_MEMORY_SIZE): a ``Content-Length`` above it before anything is read, else
    read in chunks and cut at ``limit`` + 1 bytes (a body without a length, or with a lying
    one, is never read whole). ``limit`` None: no limit (Django's meaning)."""
    try:
        declared = int(content_length) if content_length not in (None, "") else None
    except (TypeError, ValueError):
        declared = None
    if limit is not None and declared is not None and declared > limit:
        raise RequestDataTooBig("Request body exceeded settings.DATA_UPLOAD_MAX_MEMORY_SIZE.")
    if stream is None:
        return b""
    chunks, size = [], 0
    while limit is None or size <= limit:
        chunk = stream.read(_READ_CHUNK if limit is None else min(_READ_CHUNK, limit + 1 - size))
        if not chunk:
            break
        chunks.append(chunk)
        size += len(chunk)
    if limit is not None and size > limit:
        raise RequestDataTooBig("Request body exceeded settings.DATA_UPLOAD_MAX_MEMORY_SIZE.")
    return b"".join(chunks)


class PredictJSONParser(BaseParser):
    """application/json ``{"text": "...", "top_k": 5}``, read as the agent reads a text
    request (``edge_agent.text_session.load_text_request``): a text whose bytes are not UTF-8
    reaches the view as those bytes, to be refused naming ``text``. The body is bounded as a
    multipart body's fields are (DATA_UPLOAD_MAX_MEMORY_SIZE, 413 ``too_large``), before it is
    parsed; a body that is not a JSON object is refused with the agent's reason (400, field
    ``text``; an image: field ``file``)."""

    media_type = "application/json"

    def parse(self, stream: Any, media_type: Any = None, parser_context: Any = None) -> Any:
        request = (parser_context or {}).get("request")
        meta = getattr(request, "META", {})
        body = read_bounded(stream, meta.get("CONTENT_LENGTH"),
                            settings.DATA_UPLOAD_MAX_MEMORY_SIZE)
        try:
            return load_text_request(body)
        except WrongInputError:  # an image sent as JSON
            raise ValidationFailed(_("the body is an image, not JSON: send an image as the "
                                     "multipart field file"), field="file") from None
        except TextRequestError as error:
            raise ValidationFailed(request_problem(error), field="text") from None


_TOP_K_PROBLEMS = {
    "not_integer": gettext_noop("top_k must be an integer"),
    "below_one": gettext_noop("top_k must be >= 1"),
    "conflict": gettext_noop("top_k is %(query)d in the query string and %(body)d in the "
                             "body: give it once"),
}


def predict_top_k(query: Any, body: Any) -> int:
    """The ``top_k`` of a try-it request, by the agent's rule (``edge_agent.text_session.
    parse_top_k``, ``request_top_k``): from the query string and/or the body, any integer
    >= 1 (an answer lists at most every label), null or absent: 5; both given and different:
    refused. Raises ValidationFailed naming ``top_k`` with the agent's message."""
    try:
        return request_top_k(parse_top_k(query), parse_top_k(body))
    except TopKError as error:
        template = _TOP_K_PROBLEMS.get(error.kind)
        raise ValidationFailed(_(template) % error.params if template else str(error),
                               field="top_k") from None


@extend_schema_field({"type": "string"})
class PredictTextField(serializers.Field):
    """The text as sent (a string, or the bytes of a multipart field): the agent's text rule
    is applied by ``model_version_predict``, so that try-it and a device take and refuse the
    same texts."""

    def to_internal_value(self, data: Any) -> Any:
        return data

    def to_representation(self, value: Any) -> Any:
        return value


@extend_schema_field({"type": "integer", "minimum": 1, "nullable": True})
class PredictTopKField(serializers.Field):
    """``top_k`` as sent: the view reads it by the agent's rule (:func:`predict_top_k`)."""

    def to_internal_value(self, data: Any) -> Any:
        return data

    def to_representation(self, value: Any) -> Any:
        return value


class PredictInput(serializers.Serializer):
    file = serializers.FileField(required=False,
                                 help_text="One image (JPEG, PNG, ...), for an image model.")
    text = PredictTextField(
        required=False,
        help_text="One text, for a text classification model (multipart, or a JSON body "
                  "{\"text\": \"...\", \"top_k\": 5}). The agent's rule (docs/contracts.md, "
                  "\"Agent HTTP API\"): UTF-8, no lone surrogate, NUL characters removed, not "
                  "empty once whitespace is removed (400 naming text otherwise); any length, "
                  "the model reads its start (truncated: true).")

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        if ("file" in attrs) == ("text" in attrs):
            raise serializers.ValidationError(
                {"file": _("send either file (an image) or text, not both and not neither")})
        return attrs
    top_k = PredictTopKField(
        required=False, allow_null=True,
        help_text="Classification: the most probable k, any integer >= 1 (at most every label "
                  "is listed; null or absent: 5). Also ?top_k= in the query string; both "
                  "given and different: 400 naming top_k. The agent's rule.")
    score_threshold = serializers.FloatField(
        required=False, min_value=0.0, max_value=1.0,
        help_text="Object detection: keep detections scoring above it (default: the "
                  "manifest's detection.score_threshold).")


class PredictionOutput(serializers.Serializer):
    label = serializers.CharField()
    index = serializers.IntegerField()
    probability = serializers.FloatField()


class ClassificationPredictOutput(serializers.Serializer):
    model_version_id = serializers.UUIDField()
    task = serializers.ChoiceField(choices=["image_classification"])
    predictions = PredictionOutput(many=True)
    latency_ms = serializers.FloatField()


class TextPredictionOutput(serializers.Serializer):
    label = serializers.CharField()
    index = serializers.IntegerField()
    score = serializers.FloatField(help_text="probability, 0..1")


class TextPredictOutput(serializers.Serializer):
    model_version_id = serializers.UUIDField()
    task = serializers.ChoiceField(choices=["text_classification"])
    predictions = TextPredictionOutput(many=True, help_text="the top_k most probable, best first")
    truncated = serializers.BooleanField(
        help_text="the text was longer than the model's text.max_chars: its start was read")
    latency_ms = serializers.FloatField()


class DetectionOutput(serializers.Serializer):
    label = serializers.CharField()
    index = serializers.IntegerField()
    score = serializers.FloatField()
    box = serializers.ListField(child=serializers.FloatField(), min_length=4, max_length=4,
                                help_text="[x1, y1, x2, y2] in px of the upright image")


class DetectionPredictOutput(serializers.Serializer):
    model_version_id = serializers.UUIDField()
    task = serializers.ChoiceField(choices=["object_detection"])
    width = serializers.IntegerField(help_text="px of the upright image (EXIF applied)")
    height = serializers.IntegerField(help_text="px of the upright image (EXIF applied)")
    tiles = serializers.IntegerField(help_text="windows the image was cut into (1: none)")
    detections = DetectionOutput(many=True, help_text="best first")
    latency_ms = serializers.FloatField()


_PREDICT_OUTPUTS: dict[str, type[serializers.Serializer]] = {
    "image_classification": ClassificationPredictOutput,
    "object_detection": DetectionPredictOutput,
    "text_classification": TextPredictOutput,
}


class ModelVersionPredictApi(ProjectApi):
    """Try a model version on one image or text, as a device would run it: the agent's answer
    for the version's task. Viewers may try models. Multipart (``file`` or ``text``, ``top_k``,
    ``score_threshold``), or a JSON body for a text model."""

    write_role = Role.VIEWER
    parser_classes = [PredictMultiPartParser, PredictJSONParser]

    @extend_schema(request={"multipart/form-data": PredictInput,
                            "application/json": PredictInput},
                   parameters=[OpenApiParameter(
                       "top_k", int, required=False,
                       description="as the body's top_k (the same or omitted there)")],
                   responses=PolymorphicProxySerializer(
                       component_name="PredictOutput", serializers=_PREDICT_OUTPUTS,
                       resource_type_field_name="task"),
                   operation_id="model_versions_predict")
    def post(self, request: Request, project_id: str, version_id: str) -> Response:
        version = selectors.model_version_get(project=self.get_project(request),
                                              version_id=version_id)
        self._check_text_request(request)
        data = PredictInput(data=request.data)
        data.is_valid(raise_exception=True)
        top_k = predict_top_k(request.query_params.get("top_k"),
                              data.validated_data.get("top_k"))
        upload = data.validated_data.get("file")
        result = model_version_predict(version=version,
                                       data=upload.read() if upload is not None else b"",
                                       text=data.validated_data.get("text"),
                                       top_k=top_k,
                                       score_threshold=data.validated_data.get("score_threshold"))
        return Response(_PREDICT_OUTPUTS[result["task"]](result).data)

    @staticmethod
    def _check_text_request(request: Request) -> None:
        """What the agent refuses in a text request, refused alike (400 naming the field):
        an empty JSON body, a JSON body without ``text`` or with ``text`` null, ``text`` and
        ``texts`` both; and
        ``texts``, which the agent takes (a batch) but try-it does not (one text)."""
        is_json = (request.content_type or "").split(";")[0].strip().lower() \
            == "application/json"
        if is_json and request.stream is None:  # DRF parses no empty body: {} for it
            raise ValidationFailed(_("the body is empty; send JSON {\"text\": \"...\"}"),
                                   field="text")
        if "texts" in request.data:
            if "text" in request.data:
                raise ValidationFailed(_("give \"text\" (one text) or \"texts\" (a list), "
                                         "not both"), field="texts")
            raise ValidationFailed(_("\"texts\": try-it classifies one text: send "
                                     "{\"text\": \"...\"} (a device's agent also takes "
                                     "\"texts\", a list)"), field="texts")
        if is_json and "text" not in request.data:
            raise ValidationFailed(_("the body has no \"text\"; send JSON "
                                     "{\"text\": \"...\"}"), field="text")
        if is_json and request.data.get("text") is None:  # null: the agent's not_string
            try:
                text_input(None)
            except TextInputError as error:
                raise ValidationFailed(text_problem(error), field="text") from None
