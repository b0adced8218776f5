"""The error answers of every operation in the OpenAPI schema (docs/openapi.yaml).

Every error is one body, ``{"error": {"code", "message", "field"?, "details"?}}``
(``sampan.core.errors``). drf-spectacular documents an operation's success only; the
postprocessing hook :func:`error_responses` (``SPECTACULAR_SETTINGS["POSTPROCESSING_HOOKS"]``)
adds the 4xx answers each operation can give, with that body, so clients (the console's types,
a generated SDK) and the schema fuzz test (tests/e2e/test_schema_fuzz.py) know them:

- 400 where the request carries input (a body, a query string or a header parameter);
- 401 where credentials are needed or checked; 403 where a role or the CSRF token is checked;
- 404 where the path names an object (another project's objects are 404 too);
- 415 where there is a body (a content type the operation does not parse);
- 409 for every write inside a project (an archived project or dataset takes no new work);
- the operation's own codes (409, 412, 413, 422, 429...) from :data:`OPERATION_ERRORS`.
"""

from __future__ import annotations

from typing import Any

from drf_spectacular.extensions import OpenApiSerializerFieldExtension

from sampan.core.names import name_pattern, text_pattern

ERROR = {"$ref": "#/components/schemas/Error"}
ERROR_SCHEMA = {
    "type": "object",
    "description": "Every API error: `{\"error\": {\"code\", \"message\", \"field\"?, "
                   "\"details\"?}}`.",
    "properties": {"error": {
        "type": "object", "required": ["code", "message"],
        "properties": {"code": {"type": "string"}, "message": {"type": "string"},
                       "field": {"type": "string"},
                       "details": {"oneOf": [{"type": "object", "additionalProperties": {}},
                                             {"type": "array", "items": {}}]}}}},
    "required": ["error"],
}

DESCRIPTIONS = {
    "400": "Invalid input: ``field`` names the field, ``code`` says what is wrong.",
    "401": "No valid credentials (a Bearer token, a session, a device credential), or wrong "
           "ones.",
    "403": "Your role in the project does not allow this, or a session write came without its "
           "CSRF token.",
    "404": "No such object (another project's objects are not found either).",
    "409": "The object's state does not allow this now: an archived project or dataset, a "
           "job under way, a name taken (``message`` says why).",
    "412": "``If-Match`` names an older version: someone changed it since you read it "
           "(``details.etag`` is the current one).",
    "413": "The body is larger than this operation takes (``details.limit_bytes``).",
    "415": "The body's content type is not one this operation reads.",
    "422": "The ``Idempotency-Key`` was used before with a different body.",
    "429": "A limit was reached: too many at once or too many queued (``Retry-After``, "
           "``details``).",
    "503": "A service the operation needs is unavailable; try again later.",
}

#: codes beyond the generic ones, by operationId: what its services raise
OPERATION_ERRORS: dict[str, tuple[str, ...]] = {
    "auth_login": ("401", "429"),  # a wrong password; too many tries (accounts.login_limits)
    "device_enroll": ("429",),  # enrollment attempts are throttled
    "datasets_create": ("409",),  # a dataset of that name exists
    "users_create": ("409",),  # a user with that username or e-mail address exists
    "imports_create": ("409",),  # the upload named is not complete, or already imported
    "prelabel_jobs_create": ("409",),  # a pre-labeling job of this dataset is under way
    "local_device_request": ("409",),  # no supervisor to start a local agent (make run has one)
    "training_jobs_cancel": ("400",),  # the job already ended
    "compression_jobs_cancel": ("400",),  # the job already ended
}

PROJECT_PREFIX = "/api/v1/projects/{project_id}/"
# HEAD and OPTIONS answers have no body; the ones the schema has (tus) document their codes
METHODS = ("get", "put", "post", "patch", "delete")


def _codes(path: str, method: str, operation: dict[str, Any]) -> list[str]:
    parameters = operation.get("parameters", [])
    body = "requestBody" in operation
    codes = []
    if body or any(p.get("in") in ("query", "header") for p in parameters):
        codes.append("400")
    security = operation.get("security")
    if security is None or any(requirement for requirement in security):
        codes += ["401", "403"]
    if any(p.get("in") == "path" for p in parameters):
        codes.append("404")
    if body:
        codes.append("415")
    if method != "get" and path.startswith(PROJECT_PREFIX):
        codes.append("409")  # an archived project or dataset takes no new work (lifecycle)
    codes += OPERATION_ERRORS.get(operation.get("operationId", ""), ())
    return sorted(set(codes))


def error_responses(result: dict[str, Any], generator: Any, request: Any, public: bool
                    ) -> dict[str, Any]:
    """drf-spectacular postprocessing hook: the 4xx answers of every operation under ``/api/``
    that it does not document already, each with the ``Error`` body."""
    result.setdefault("components", {}).setdefault("schemas", {})["Error"] = ERROR_SCHEMA
    for path, item in result["paths"].items():
        if not path.startswith("/api/"):
            continue
        for method in METHODS:
            operation = item.get(method)
            if operation is None:
                continue
            responses = operation.setdefault("responses", {})
            for code in _codes(path, method, operation):
                responses.setdefault(code, {"description": DESCRIPTIONS[code],
                                            "content": {"application/json": {"schema": ERROR}}})
    return result


class _PatternFieldSchema(OpenApiSerializerFieldExtension):
    """A request field's schema with the rule of ``sampan.core.names`` as its ``pattern``, so
    clients and the fuzz test know it (answers keep the plain string: names stored before the
    rule are still shown)."""

    def pattern(self) -> str:
        raise NotImplementedError

    def map_serializer_field(self, auto_schema: Any, direction: str) -> dict[str, Any]:
        schema: dict[str, Any] = auto_schema._map_serializer_field(self.target, direction,
                                                                   bypass_extensions=True)
        if direction == "request":
            # a blank-allowed field: drf-spectacular adds the empty string as a oneOf branch
            schema["pattern"] = self.pattern()
        return schema


class NameFieldSchema(_PatternFieldSchema):
    target_class = "sampan.core.validation.NameField"

    def pattern(self) -> str:
        return name_pattern()


class TextFieldSchema(_PatternFieldSchema):
    target_class = "sampan.core.validation.TextField"

    def pattern(self) -> str:
        return text_pattern()
