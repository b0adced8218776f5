"""One text rule on the device and in the browser: the platform's try-it (JSON and multipart)
and a real agent serving the same text package take or refuse the same texts, with the same
answer (edge_agent.text_session.text_input; docs/contracts.md, "Agent HTTP API")."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import requests

from edge_agent.agent import Agent
from edge_agent.home import AgentConfig, AgentHome
from sampan.registry.selectors import model_version_file
from sampan.registry.services import model_version_register
from sampan.registry.signing import public_key_b64
from tests.edge_agent.conftest import TEXT_LABELS, TEXT_SETTINGS, build_text_classifier
from tests.edge_agent.test_server import serving

pytestmark = pytest.mark.django_db

LONG = "terrible " + "a" * (1_000_001 - len("terrible "))


def _json(text: str | bytes) -> bytes:
    """``{"text": ...}``: a str as JSON (lone surrogates escaped), bytes placed as they are."""
    if isinstance(text, bytes):
        return b'{"text": "' + text + b'"}'
    return json.dumps({"text": text}, ensure_ascii=not text.isprintable()).encode()


def _raw(text: str | bytes) -> bytes:
    """The bytes of a multipart field holding ``text`` (a lone surrogate as a careless encoder
    writes it, CESU-8 style: those bytes are not UTF-8)."""
    return text if isinstance(text, bytes) else text.encode("utf-8", "surrogatepass")


# (case, the text: a str, or bytes as sent; expected: (top label, truncated) or "refused")
CASES: list[tuple[str, str | bytes, tuple[str, bool] | str]] = [
    ("plain", "great value", ("positive", False)),
    ("chinese", "质量差", ("negative", False)),
    ("empty", "", "refused"),
    ("whitespace only", " \u3000\n\t ", "refused"),
    ("byte order mark and NULs only", "\ufeff\x00 \x00", "refused"),
    ("NUL inside", "gre\x00at", ("positive", False)),  # NULs removed: "great"
    ("1,000,001 characters", LONG, ("negative", True)),
    ("invalid UTF-8 bytes", b"caf\xe9 great", "refused"),
    ("lone surrogate", "ok \ud83d great", "refused"),
]


@pytest.fixture
def text_version(project_with_roles: dict[str, Any], tmp_path: Path) -> Any:
    onnx_path = tmp_path / "text.onnx"
    onnx_path.write_bytes(build_text_classifier())
    return model_version_register(
        project=project_with_roles["project"], model_name="reviews",
        task_type="text_classification", labels=TEXT_LABELS, preprocessing={},
        onnx_path=onnx_path, input_shape=["N", "L"], metrics={}, lineage={},
        onnx_info={"opset": 18, "ir_version": 10}, pretrained=False, text=dict(TEXT_SETTINGS))


@pytest.fixture
def agent_base(text_version: Any, tmp_path: Path) -> Iterator[str]:
    """A real agent trusting the platform's key, serving the version's own package."""
    home = AgentHome(tmp_path / "agent")
    agent = Agent(home, AgentConfig("http://127.0.0.1:9", "device-1", "cred", public_key_b64()))
    directory = home.model_dir(str(text_version.pk))
    directory.mkdir(parents=True)
    (directory / "model.onnx").write_bytes(
        model_version_file(text_version, "model.onnx").read_bytes())
    (directory / "manifest.json").write_text(json.dumps(text_version.manifest))
    agent.swap(agent.load_package(str(text_version.pk)))
    with serving(agent) as base:
        yield base


def _multipart(text: bytes, top_k: int) -> tuple[bytes, str]:
    boundary = "sampan-boundary-7f3a"
    parts = [(b"text", text), (b"top_k", str(top_k).encode())]
    body = b"".join(b"--" + boundary.encode() + b"\r\nContent-Disposition: form-data; name=\""
                    + name + b"\"\r\n\r\n" + value + b"\r\n" for name, value in parts)
    return body + b"--" + boundary.encode() + b"--\r\n", f"multipart/form-data; boundary={boundary}"


def _platform_outcome(response: Any) -> tuple[Any, ...]:
    if response.status_code == 200:
        body = response.json()
        return ("accepted", body["predictions"][0]["label"], body["truncated"],
                round(body["predictions"][0]["score"], 5))
    assert response.status_code == 400, response.content[:300]
    error = response.json()["error"]
    assert error["field"] == "text", error
    assert error["message"], error
    return ("refused",)


def _agent_outcome(response: requests.Response) -> tuple[Any, ...]:
    if response.status_code == 200:
        body = response.json()
        return ("accepted", body["predictions"][0]["label"], body["truncated"],
                round(body["predictions"][0]["score"], 5))
    assert response.status_code == 400, response.text[:300]
    assert '"text"' in response.json()["error"], response.json()
    return ("refused",)


@pytest.mark.parametrize(("case", "text", "expected"), CASES, ids=[c[0] for c in CASES])
def test_try_it_and_the_agent_take_and_refuse_the_same_texts(
        project_with_roles: dict[str, Any], api: Any, text_version: Any, agent_base: str,
        case: str, text: str | bytes, expected: tuple[str, bool] | str) -> None:
    url = (f"/api/v1/projects/{project_with_roles['project'].pk}/model-versions/"
           f"{text_version.pk}/predict/")
    client = api(project_with_roles["viewer"])

    device = _agent_outcome(requests.post(f"{agent_base}/v1/predict?top_k=1", data=_json(text),
                                          timeout=30))
    as_json = _platform_outcome(client.post(
        url, data=_json(text)[:-1] + b', "top_k": 1}', content_type="application/json"))
    body, content_type = _multipart(_raw(text), 1)
    as_form = _platform_outcome(client.post(url, data=body, content_type=content_type))

    assert as_json == device, case
    assert as_form == device, case
    if expected == "refused":
        assert device == ("refused",), case
    else:
        assert device[:3] == ("accepted", *expected), case


def test_the_console_form_and_a_json_body_answer_alike(
        project_with_roles: dict[str, Any], api: Any, text_version: Any) -> None:
    """The console's multipart request (as the test client builds it) and a JSON body."""
    url = (f"/api/v1/projects/{project_with_roles['project'].pk}/model-versions/"
           f"{text_version.pk}/predict/")
    client = api(project_with_roles["viewer"])
    form = client.post(url, {"text": "推荐 great", "top_k": 2}, format="multipart")
    body = client.post(url, {"text": "推荐 great", "top_k": 2}, format="json")
    assert form.status_code == body.status_code == 200, (form.json(), body.json())
    assert form.json()["predictions"] == body.json()["predictions"]
    assert [p["label"] for p in body.json()["predictions"]] == ["positive", "negative"]
    # a JSON body without a text (it can carry no file), and a body that is not JSON: 400s
    neither = client.post(url, {"top_k": 2}, format="json")
    assert neither.status_code == 400 and neither.json()["error"]["field"] == "text"
    assert 'the body has no "text"' in neither.json()["error"]["message"]
    broken = client.post(url, data=b'{"text": ', content_type="application/json")
    assert broken.status_code == 400, broken.json()
