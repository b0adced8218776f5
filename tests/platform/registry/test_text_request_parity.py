"""Try-it (``POST .../model-versions/<v>/predict/``) and the agent's ``POST /v1/predict`` answer
a malformed text request alike: the same status, the agent's reason, and on try-it the field it
is about (docs/contracts.md, "Agent HTTP API"); ``top_k`` by one rule on both (query string
and/or JSON body, any integer >= 1); a JSON body bounded as a multipart one is
(DATA_UPLOAD_MAX_MEMORY_SIZE, 413 ``too_large``) and never read whole past it."""

from __future__ import annotations

import io
import json
from typing import Any

import pytest
import requests
from django.core.exceptions import RequestDataTooBig

from sampan.registry.predict_apis import read_bounded
from tests.platform.registry import test_text_input_parity as parity

# the package and the agent serving it (fixtures of test_text_input_parity)
text_version = parity.text_version
agent_base = parity.agent_base
_multipart = parity._multipart

pytestmark = pytest.mark.django_db


def _url(project_with_roles: dict[str, Any], version: Any) -> str:
    return (f"/api/v1/projects/{project_with_roles['project'].pk}/model-versions/"
            f"{version.pk}/predict/")


# (case, body, query, status, field on try-it, what both messages start with)
MALFORMED = [
    ("text and texts", b'{"text": "great", "texts": ["x"]}', "", 400, "texts",
     'give "text" (one text) or "texts" (a list), not both'),
    ("empty body", b"", "", 400, "text", "the body is empty"),
    ("no text", b'{"top_k": 2}', "", 400, "text", 'the body has no "text"'),
    ("an array", b'["great"]', "", 400, "text", "the body must be a JSON object, not an array"),
    ("a string", b'"great"', "", 400, "text", "the body must be a JSON object, not a string"),
    ("nested too deeply", b"[" * 100_000 + b"]" * 100_000, "", 400, "text",
     "the body is not JSON this "),
    ("top_k 0", b'{"text": "great", "top_k": 0}', "", 400, "top_k", "top_k must be >= 1"),
    ("top_k -1", b'{"text": "great", "top_k": -1}', "", 400, "top_k", "top_k must be >= 1"),
    ("top_k 1.5", b'{"text": "great", "top_k": 1.5}', "", 400, "top_k",
     "top_k must be an integer"),
    ("top_k true", b'{"text": "great", "top_k": true}', "", 400, "top_k",
     "top_k must be an integer"),
    ("query top_k abc", b'{"text": "great"}', "?top_k=abc", 400, "top_k",
     "top_k must be an integer"),
    ("query top_k 0", b'{"text": "great"}', "?top_k=0", 400, "top_k", "top_k must be >= 1"),
    ("top_k differs", b'{"text": "great", "top_k": 2}', "?top_k=1", 400, "top_k",
     "top_k is 1 in the query string and 2 in the body: give it once"),
]


@pytest.mark.parametrize(("case", "body", "query", "status", "field", "message"), MALFORMED,
                         ids=[c[0] for c in MALFORMED])
def test_a_malformed_text_request_is_refused_alike_naming_the_field(
        project_with_roles: dict[str, Any], api: Any, text_version: Any, agent_base: str,
        case: str, body: bytes, query: str, status: int, field: str, message: str) -> None:
    device = requests.post(f"{agent_base}/v1/predict{query}", data=body, timeout=60)
    plat = api(project_with_roles["viewer"]).post(
        _url(project_with_roles, text_version) + query, data=body,
        content_type="application/json")
    assert device.status_code == plat.status_code == status, (device.text, plat.content[:300])
    error = plat.json()["error"]
    assert error["field"] == field, error
    assert error["message"].startswith(message), error
    assert device.json()["error"].startswith(message), device.json()


# (case, body, query, the number of predictions both list)
TOP_K = [
    ("body top_k 1", b'{"text": "great", "top_k": 1}', "", 1),
    ("query top_k 1", b'{"text": "great"}', "?top_k=1", 1),
    ("the same in both", b'{"text": "great", "top_k": 1}', "?top_k=1", 1),
    ("top_k as a string", b'{"text": "great", "top_k": "1"}', "", 1),
    ("top_k null: the default", b'{"text": "great", "top_k": null}', "", 2),
    ("a million: every label", b'{"text": "great", "top_k": 1000000}', "", 2),
    ("a million in the query", b'{"text": "great"}', "?top_k=1000000", 2),
]


@pytest.mark.parametrize(("case", "body", "query", "count"), TOP_K, ids=[c[0] for c in TOP_K])
def test_top_k_is_read_by_one_rule_from_the_query_string_and_the_body(
        project_with_roles: dict[str, Any], api: Any, text_version: Any, agent_base: str,
        case: str, body: bytes, query: str, count: int) -> None:
    device = requests.post(f"{agent_base}/v1/predict{query}", data=body, timeout=60)
    plat = api(project_with_roles["viewer"]).post(
        _url(project_with_roles, text_version) + query, data=body,
        content_type="application/json")
    assert device.status_code == plat.status_code == 200, (device.text, plat.content[:300])
    assert len(device.json()["predictions"]) == len(plat.json()["predictions"]) == count
    assert device.json()["predictions"][0]["label"] == plat.json()["predictions"][0]["label"]


def test_a_null_text_is_refused_as_not_a_string_on_both(
        project_with_roles: dict[str, Any], api: Any, text_version: Any, agent_base: str
        ) -> None:
    """JSON null is no text: the agent's not_string, not DRF's "may not be null"."""
    body = b'{"text": null}'
    device = requests.post(f"{agent_base}/v1/predict", data=body, timeout=60)
    plat = api(project_with_roles["viewer"]).post(_url(project_with_roles, text_version),
                                                  data=body, content_type="application/json")
    assert device.status_code == plat.status_code == 400, (device.text, plat.content[:300])
    assert device.json()["error"] == '"text" must be a string, not null'
    assert plat.json()["error"]["field"] == "text"
    assert plat.json()["error"]["message"] == "text: must be a string", plat.json()


def test_try_it_takes_one_text_and_refuses_texts_naming_it(
        project_with_roles: dict[str, Any], api: Any, text_version: Any, agent_base: str
        ) -> None:
    """The agent classifies a batch; try-it takes one text and says so (docs/contracts.md)."""
    body = b'{"texts": ["great"]}'
    assert requests.post(f"{agent_base}/v1/predict", data=body, timeout=60).status_code == 200
    plat = api(project_with_roles["viewer"]).post(_url(project_with_roles, text_version),
                                                  data=body, content_type="application/json")
    assert plat.status_code == 400
    assert plat.json()["error"]["field"] == "texts"
    assert "one text" in plat.json()["error"]["message"]


def test_the_reasons_are_in_the_request_language(
        project_with_roles: dict[str, Any], api: Any, text_version: Any) -> None:
    client = api(project_with_roles["viewer"])
    url = _url(project_with_roles, text_version)
    for body in (b'["great"]', b'{"text": "great", "top_k": 0}', b"", b'{"texts": ["a"]}'):
        error = client.post(url, data=body, content_type="application/json",
                            HTTP_ACCEPT_LANGUAGE="zh-hans").json()["error"]
        assert any("\u4e00" <= char <= "\u9fff" for char in error["message"]), error
        assert error["field"], error


def test_a_json_body_over_the_limit_is_a_413_like_a_multipart_one(
        project_with_roles: dict[str, Any], api: Any, text_version: Any, settings: Any) -> None:
    """One limit for try-it's bodies: DATA_UPLOAD_MAX_MEMORY_SIZE (32 MiB; smaller here)."""
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 4096
    client = api(project_with_roles["viewer"])
    url = _url(project_with_roles, text_version)
    as_json = client.post(url, data=json.dumps({"text": "great " * 1000}).encode(),
                          content_type="application/json")
    form, content_type = _multipart(b"great " * 1000, 2)
    as_form = client.post(url, data=form, content_type=content_type)
    assert as_json.status_code == as_form.status_code == 413, as_json.content[:300]
    assert as_json.json()["error"]["code"] == as_form.json()["error"]["code"] == "too_large"
    assert as_json.json()["error"]["details"]["setting"] == "DATA_UPLOAD_MAX_MEMORY_SIZE"
    # under the limit: read and answered
    small = client.post(url, data=b'{"text": "great"}', content_type="application/json")
    assert small.status_code == 200, small.content[:300]


def test_the_default_limit_is_32_mib(
        project_with_roles: dict[str, Any], api: Any, text_version: Any) -> None:
    body = b'{"text": "' + b"a" * (32 * 1024 * 1024) + b'"}'
    reply = api(project_with_roles["viewer"]).post(_url(project_with_roles, text_version),
                                                   data=body, content_type="application/json")
    assert reply.status_code == 413 and reply.json()["error"]["code"] == "too_large"


class _Endless(io.RawIOBase):
    """A body that never ends; counts what was read of it."""

    def __init__(self) -> None:
        self.read_bytes = 0

    def read(self, size: int = -1) -> bytes:
        assert size is not None and 0 < size <= 1 << 20, size  # never "read it all"
        self.read_bytes += size
        return b"a" * size


@pytest.mark.parametrize("content_length", [None, "", "10"], ids=["none", "blank", "lying"])
def test_a_body_without_a_true_length_is_cut_at_the_limit(content_length: str | None) -> None:
    stream = _Endless()
    with pytest.raises(RequestDataTooBig):
        read_bounded(stream, content_length, 100_000)
    assert stream.read_bytes == 100_001


def test_a_declared_length_over_the_limit_reads_nothing() -> None:
    stream = _Endless()
    with pytest.raises(RequestDataTooBig):
        read_bounded(stream, str(100_001), 100_000)
    assert stream.read_bytes == 0
    assert read_bounded(io.BytesIO(b"x" * 100_000), "100000", 100_000) == b"x" * 100_000
