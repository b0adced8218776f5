"""OpenAPI description of the resumable upload endpoints (``sampan.uploads.tus``).

They are an ASGI app in front of Django, so drf-spectacular does not see them; this
postprocessing hook (``SPECTACULAR_SETTINGS["POSTPROCESSING_HOOKS"]``) adds them to the schema
that ``make schema`` writes to docs/openapi.yaml and the console's types come from.
"""

from __future__ import annotations

from typing import Any

from sampan.core.schema import ERROR, ERROR_SCHEMA


def _header(description: str, *, integer: bool = False) -> dict[str, Any]:
    return {"description": description, "schema": {"type": "integer" if integer else "string"}}


def _param(name: str, description: str, *, required: bool = True,
           integer: bool = False) -> dict[str, Any]:
    return {"in": "header", "name": name, "required": required, "description": description,
            "schema": {"type": "integer", "format": "int64"} if integer else {"type": "string"}}


def _errors(*codes: str) -> dict[str, Any]:
    text = {"400": "A required header is missing or not a number (``field`` names it).",
            "401": "No valid Bearer token or session.",
            "403": "A session write without its CSRF token.",
            "404": "No such upload of yours (another user's is a 404 too).",
            "409": "``Upload-Offset`` is not the upload's offset (a chunk sent twice, or out of "
                   "order): nothing was written; ``details.offset`` and the ``Upload-Offset`` "
                   "header give the offset to send from.",
            "412": "``Tus-Resumable`` is not 1.0.0.",
            "413": "Above the limit: ``details.limit_bytes``.",
            "415": "The body is not ``application/offset+octet-stream``.",
            "423": "Another request is writing this upload; retry shortly."}
    return {code: {"description": text[code],
                   "content": {"application/json": {"schema": ERROR}}} for code in codes}


TUS = _param("Tus-Resumable", "The protocol version: `1.0.0`.")
UPLOAD_ID = {"in": "path", "name": "upload_id", "required": True,
             "schema": {"type": "string", "format": "uuid"}}
SECURITY = [{"apiToken": []}, {"cookieAuth": []}]
OPTIONS = {
    "operationId": "uploads_options", "tags": ["uploads"], "security": [],
    "description": "What the server offers (no credentials needed).",
    "responses": {"204": {"description": "Capabilities.", "headers": {
        "Tus-Version": _header("`1.0.0`"),
        "Tus-Extension": _header("`creation,termination,expiration`"),
        "Tus-Max-Size": _header("The largest Upload-Length accepted, bytes "
                                "(SAMPAN_UPLOAD_MAX_BYTES).", integer=True)}}},
}


def tus_paths(result: dict[str, Any], generator: Any, request: Any, public: bool
              ) -> dict[str, Any]:
    """drf-spectacular postprocessing hook: add ``/api/v1/uploads/`` (tus 1.0.0)."""
    result.setdefault("components", {}).setdefault("schemas", {}).setdefault("Error",
                                                                             ERROR_SCHEMA)
    result["paths"]["/api/v1/uploads/"] = {
        "options": OPTIONS,
        "post": {
            "operationId": "uploads_create", "tags": ["uploads"], "security": SECURITY,
            "description": "Create a resumable upload (tus 1.0.0 creation). The bytes follow "
                           "in PATCH requests to the Location.",
            "parameters": [
                TUS,
                _param("Upload-Length", "Size of the whole file, bytes; at most "
                       "SAMPAN_UPLOAD_MAX_BYTES (default 2 GiB).", integer=True),
                _param("Upload-Metadata", "Comma-separated `key base64(value)` pairs; "
                       "`filename` and `filetype` are kept.", required=False)],
            "responses": {"201": {"description": "Created.", "headers": {
                "Location": _header("`/api/v1/uploads/<id>/`"),
                "Upload-Expires": _header("When an unfinished upload is deleted (RFC 9110 "
                                          "date); each PATCH pushes it back.")}},
                **_errors("400", "401", "403", "412", "413")}},
    }
    result["paths"]["/api/v1/uploads/{upload_id}/"] = {
        "options": {**OPTIONS, "operationId": "uploads_options_upload",
                    "parameters": [UPLOAD_ID]},
        "head": {
            "operationId": "uploads_offset", "tags": ["uploads"], "security": SECURITY,
            "description": "Where to resume: the bytes received so far.",
            "parameters": [UPLOAD_ID, TUS],
            "responses": {"200": {"description": "The upload's offset.", "headers": {
                "Upload-Offset": _header("Bytes received.", integer=True),
                "Upload-Length": _header("Bytes in all.", integer=True)}},
                **{code: {"description": text["description"]} for code, text in
                   _errors("401", "404", "412").items()}}},
        "patch": {
            "operationId": "uploads_append", "tags": ["uploads"], "security": SECURITY,
            "description": "Append bytes at `Upload-Offset`, streamed to disk as they arrive; "
                           "a connection cut mid-body keeps what arrived (HEAD, then resume).",
            "parameters": [UPLOAD_ID, TUS,
                           _param("Upload-Offset", "The upload's current offset, bytes.",
                                  integer=True)],
            "requestBody": {"required": True, "content": {"application/offset+octet-stream": {
                "schema": {"type": "string", "format": "binary"}}}},
            "responses": {"204": {"description": "Appended.", "headers": {
                "Upload-Offset": _header("The new offset, bytes.", integer=True)}},
                **_errors("400", "401", "403", "404", "409", "412", "413", "415", "423")}},
        "delete": {
            "operationId": "uploads_delete", "tags": ["uploads"], "security": SECURITY,
            "description": "Terminate: the upload and its bytes are deleted.",
            "parameters": [UPLOAD_ID, TUS],
            "responses": {"204": {"description": "Deleted."},
                          **_errors("401", "403", "404", "412", "423")}},
    }
    return result
