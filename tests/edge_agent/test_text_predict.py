"""A text model served over the agent's real HTTP API: ``POST /v1/predict`` with JSON texts,
one or a batch, the requests it refuses (and why), telemetry, and a deployment that swaps an
image model for a text model in the real agent process."""

from __future__ import annotations

import hashlib
import json
import uuid
from pathlib import Path
from typing import Any

import pytest
import requests

from edge_agent.agent import Agent
from edge_agent.reference import reference_record
from edge_agent.text_session import MAX_TEXTS
from tests.edge_agent.conftest import (
    ModelPackage,
    build_text_classifier,
    encoded_image,
    text_table,
)
from tests.edge_agent.test_agent_process import enroll, free_port, running_agent
from tests.edge_agent.test_server import new_agent, serving
from tests.edge_agent.test_text_session import session_of

EXPECTS = ('this model classifies text (text_classification): send JSON {"text": "..."} or '
           '{"texts": ["...", ...]}')


def install(agent: Agent, package: ModelPackage) -> None:
    directory = agent.home.model_dir(package.version_id)
    directory.mkdir(parents=True)
    (directory / "model.onnx").write_bytes(package.model_bytes)
    (directory / "manifest.json").write_text(json.dumps(package.manifest))
    agent.swap(agent.load_package(package.version_id))


@pytest.fixture
def text_served(tmp_path: Path, signing_key: Any, text_package_factory: Any):
    agent = new_agent(tmp_path, signing_key)
    package = text_package_factory()
    install(agent, package)
    with serving(agent) as base:
        yield agent, base, package


def post(base: str, body: Any, query: str = "") -> requests.Response:
    data = body if isinstance(body, bytes) else json.dumps(body, ensure_ascii=False).encode()
    return requests.post(f"{base}/v1/predict{query}", data=data, timeout=10)


def test_one_text_and_a_batch_are_classified_over_http(text_served) -> None:
    agent, base, package = text_served
    reply = post(base, {"text": "这家餐厅的菜很好吃"})
    assert reply.status_code == 200, reply.text
    assert reply.headers["Content-Type"] == "application/json"
    body = reply.json()
    assert list(body) == ["model_version_id", "task", "predictions", "truncated", "latency_ms"]
    assert (body["model_version_id"], body["task"]) == (package.version_id,
                                                        "text_classification")
    assert [(p["label"], p["index"]) for p in body["predictions"]] == [("positive", 1),
                                                                        ("negative", 0)]
    assert body["predictions"][0]["score"] == pytest.approx(0.952574, abs=1e-5)
    assert body["truncated"] is False and body["latency_ms"] > 0

    texts = ["The battery died. Terrible!", "推荐" + " 好" * 40, "  质量差 \n", "😀🎉"]
    reply = post(base, {"texts": texts, "note": "other keys are ignored"}, "?top_k=1")
    assert reply.status_code == 200, reply.text
    batch = reply.json()
    assert list(batch) == ["model_version_id", "task", "results", "latency_ms"]
    assert batch["task"] == "text_classification"
    assert [r["predictions"][0]["label"] for r in batch["results"]] == [
        "negative", "positive", "negative", "negative"]
    assert [len(r["predictions"]) for r in batch["results"]] == [1, 1, 1, 1]
    assert [r["truncated"] for r in batch["results"]] == [False, True, False, False]
    assert batch["results"][3]["predictions"][0]["score"] == 0.5  # no cue: both classes even
    # each text of the batch as it is answered alone
    for text, result in zip(texts, batch["results"], strict=True):
        alone = post(base, {"text": text}, "?top_k=1").json()
        assert alone["predictions"][0]["label"] == result["predictions"][0]["label"]
        assert alone["predictions"][0]["score"] == pytest.approx(
            result["predictions"][0]["score"], abs=1e-6)

    # UTF-8 with a byte order mark, any content type
    reply = requests.post(f"{base}/v1/predict", data="\ufeff{\"text\": \"差\"}".encode(),
                          headers={"Content-Type": "text/plain"}, timeout=10)
    assert reply.json()["predictions"][0]["label"] == "negative"
    most = post(base, {"texts": ["好"] * MAX_TEXTS})
    assert most.status_code == 200 and len(most.json()["results"]) == MAX_TEXTS

    # telemetry: one request per HTTP request, one confidence per text answered
    snapshot = agent.telemetry.snapshot()
    assert (snapshot["requests"], snapshot["errors"]) == (2 + len(texts) + 2, 0)
    assert snapshot["latency_ms"]["p50"] > 0
    assert "detections" not in snapshot
    scores = ([0.952574] + [r["predictions"][0]["score"] for r in batch["results"]] * 2
              + [0.952574] + [0.952574] * MAX_TEXTS)
    assert snapshot["confidence_mean"] == pytest.approx(sum(scores) / len(scores), abs=1e-4)
    assert 'sampan_agent_requests_total{outcome="ok"} 8.0' in \
        requests.get(f"{base}/metrics", timeout=10).text


@pytest.mark.parametrize(("body", "error"), [
    (b"", f"the body is empty; {EXPECTS}"),
    (b"\xff\xfe{\x00}\x00", "the body is not UTF-8 (byte 0xff at offset 0); " + EXPECTS),
    # the text's own bytes are not UTF-8: the field is named, with the byte's offset in it
    ('{"text": "caf\u00e9"}'.encode("latin-1"),
     '"text" is not valid UTF-8 (byte 0xe9 at offset 3)'),
    (b'{"texts": ["ok", "\xc3("]}', '"texts[1]" is not valid UTF-8 (byte 0xc3 at offset 0)'),
    (b'{"text": "caf\xe9"', f"the body is not UTF-8 (byte 0xe9 at offset 13); {EXPECTS}"),
    (b"great product", "the body is not JSON (Expecting value: line 1 column 1 (char 0)); "
                       + EXPECTS),
    (b'{"text": "great"', "the body is not JSON (Expecting ',' delimiter: line 1 column 17 "
                          f"(char 16)); {EXPECTS}"),
    (b"[" * 100_000, f"the body is not JSON this agent reads (nested too deeply); {EXPECTS}"),
    (b'"great"', f"the body must be a JSON object, not a string; {EXPECTS}"),
    (b'["great"]', f"the body must be a JSON object, not an array; {EXPECTS}"),
    (b'{"txt": "great"}', f'the body has no "text"; {EXPECTS}'),
    (b'{"text": 5}', '"text" must be a string, not a number'),
    (b'{"text": null}', '"text" must be a string, not null'),
    (b'{"text": ["a"]}', '"text" must be a string, not an array'),
    (b'{"text": ""}', '"text" is empty: nothing is left after removing whitespace'),
    (b'{"text": "   \\u3000\\n\\t"}', '"text" is empty: nothing is left after removing whitespace'),
    (b'{"text": "\\ufeff \\u0000"}', '"text" is empty: nothing is left after removing whitespace'),
    (b'{"text": "ok \\ud83d"}', '"text" is not valid Unicode: a lone surrogate U+D83D at '
                                "character 3"),
    (b'{"text": "a", "texts": ["b"]}', 'give "text" (one text) or "texts" (a list), not both'),
    (b'{"texts": "great"}', '"texts" must be a list of strings, not a string'),
    (b'{"texts": []}', '"texts" holds 0 texts: give 1 to 256 per request'),
    (json.dumps({"texts": ["a"] * (MAX_TEXTS + 1)}).encode(),
     '"texts" holds 257 texts: give 1 to 256 per request'),
    (b'{"texts": ["good", true]}', '"texts[1]" must be a string, not a boolean'),
    (b'{"texts": ["good", "", "bad"]}',
     '"texts[1]" is empty: nothing is left after removing whitespace'),
])
def test_a_request_a_text_model_cannot_read_is_a_400_naming_the_problem(
        text_served, body: bytes, error: str) -> None:
    agent, base, _ = text_served
    reply = post(base, body)
    assert (reply.status_code, reply.json()) == (400, {"error": error})
    snapshot = agent.telemetry.snapshot()
    assert (snapshot["requests"], snapshot["errors"]) == (1, 1)
    assert snapshot["confidence_mean"] is None


def test_an_image_to_a_text_model_and_json_to_an_image_model_say_what_is_expected(
        text_served, tmp_path: Path, signing_key: Any, package_factory: Any, png: Any) -> None:
    agent, base, _ = text_served
    for image, fmt in ((png((255, 0, 0)), "png"), (encoded_image(32, 24, "JPEG"), "jpeg"),
                       (encoded_image(32, 24, "GIF"), "gif")):
        reply = post(base, image)
        assert (reply.status_code, reply.json()) == (400, {"error": f"{EXPECTS}, not a {fmt} "
                                                                    "image"})
    for bad in ("top_k=0", "top_k=x", "score_threshold=2"):  # checked whatever the task
        assert post(base, {"text": "好"}, f"?{bad}").status_code == 400

    image_agent = new_agent(tmp_path / "image", signing_key)
    install(image_agent, package_factory())
    with serving(image_agent) as image_base:
        for body in ({"text": "great"}, {"texts": ["a", "b"]}, [1, 2], {}):
            reply = post(image_base, body)
            assert (reply.status_code, reply.json()) == (400, {
                "error": "this model takes an image (image_classification): send the image's "
                         "bytes as the body, not JSON"})
        form = (b"--XyZ\r\nContent-Disposition: form-data; name=\"file\"; filename=\"x.png\""
                b"\r\nContent-Type: image/png\r\n\r\n" + png((0, 0, 250)) + b"\r\n--XyZ--\r\n")
        reply = post(image_base, form)  # curl -F file=@x.png: the session-25 tester's first try
        assert (reply.status_code, reply.json()) == (400, {
            "error": "this model takes an image (image_classification): send the image's bytes "
                     "as the body (curl --data-binary @image.jpg), not a multipart form"})
        # anything else is refused as before, and images are answered as before
        for body, error in ((b"{not json", "unsupported format 'unknown'"),
                            (b"[" * 100_000, "unsupported format 'unknown'"),
                            (b"great product", "unsupported format 'unknown'"),
                            (b"", "empty file")):
            reply = post(image_base, body)
            assert (reply.status_code, reply.json()) == (400, {"error": error})
        reply = post(image_base, png((0, 250, 0)), "?top_k=1")
        assert list(reply.json()) == ["model_version_id", "task", "predictions", "latency_ms"]
        assert reply.json()["predictions"][0]["label"] == "green"
        assert set(reply.json()["predictions"][0]) == {"label", "index", "probability"}
    assert image_agent.telemetry.snapshot()["errors"] == 9


def test_a_deployment_swaps_an_image_model_for_a_text_model_and_keeps_serving(
        tmp_path: Path, control_plane: Any, package_factory: Any, text_package_factory: Any,
        signing_key: Any, png: Any) -> None:
    home, port, log_path = tmp_path / "agent", free_port(), tmp_path / "agent.log"
    assert enroll(control_plane.url, home, "enroll-token-1").returncode == 0
    base = f"http://127.0.0.1:{port}"
    image_model = package_factory()
    control_plane.deploy(image_model, "d1")
    table = text_table(seed=7)
    reference = reference_record(session_of(tmp_path, text_package_factory(
        model_bytes=build_text_classifier(table))))
    text_model = text_package_factory(model_bytes=build_text_classifier(table), version=2,
                                      reference=reference)

    with running_agent(home, port, log_path):
        control_plane.wait_for(lambda: ("running", None) in control_plane.deployment_states("d1"))
        assert post(base, png((255, 0, 0))).json()["predictions"][0]["label"] == "red"

        control_plane.deploy(text_model, "d2")
        control_plane.wait_for(lambda: ("running", None) in control_plane.deployment_states("d2"))
        reply = post(base, {"text": "这家餐厅的菜很好吃，推荐！"})
        assert reply.status_code == 200, reply.text
        body = reply.json()
        assert (body["model_version_id"], body["task"]) == (text_model.version_id,
                                                            "text_classification")
        assert body["predictions"][0]["label"] == "positive"
        batch = post(base, {"texts": ["质量差", "great"]}).json()
        assert [r["predictions"][0]["label"] for r in batch["results"]] == ["negative",
                                                                            "positive"]
        assert post(base, png((255, 0, 0))).json() == {"error": f"{EXPECTS}, not a png image"}
        assert requests.get(f"{base}/healthz", timeout=10).json() == {
            "status": "ok", "model_version_id": text_model.version_id}

        # a text package that computes something else on this device fails its health check
        # on the reference texts and the text model before it keeps serving
        version_id = str(uuid.uuid4())
        other_bytes = build_text_classifier(text_table(seed=8))
        drifted = ModelPackage(version_id, signing_key.sign({
            **text_model.manifest, "model": {**text_model.manifest["model"], "version": 3,
                                             "version_id": version_id},
            "files": {"model.onnx": {"sha256": hashlib.sha256(other_bytes).hexdigest(),
                                     "size": len(other_bytes)}}}), other_bytes)
        control_plane.deploy(drifted, "d3")
        failed = control_plane.wait_for(lambda: next(
            (e for s, e in control_plane.deployment_states("d3") if s == "failed"), None))
        assert failed.startswith("health check failed after the swap: reference input 1, "
                                 "output 0: ")
        assert failed.endswith(f"; rolled back to model version {text_model.version_id}")
        again = post(base, {"text": "great"}).json()
        assert again["model_version_id"] == text_model.version_id

        # heartbeats count the text requests like any others (the image model's 1, the text
        # model's 3 answered and 1 refused), with the mean top-1 score
        metrics = control_plane.wait_for(lambda: next(
            (h["metrics"] for h in reversed(control_plane.heartbeats)
             if h["metrics"]["requests"] == 5), None))
        assert metrics["errors"] == 1
        assert 0.5 < metrics["confidence_mean"] <= 1.0
        assert "detections" not in metrics


@pytest.mark.parametrize(("body", "query", "status", "answer"), [
    ({"text": "这家餐厅的菜很好吃", "top_k": 1}, "", 200, 1),
    ({"text": "这家餐厅的菜很好吃", "top_k": "1"}, "", 200, 1),
    ({"text": "这家餐厅的菜很好吃", "top_k": None}, "", 200, 2),
    ({"text": "这家餐厅的菜很好吃", "top_k": 1_000_000}, "", 200, 2),
    ({"text": "这家餐厅的菜很好吃"}, "?top_k=1000000", 200, 2),
    ({"texts": ["好吃", "难吃"], "top_k": 1}, "", 200, 1),
    ({"text": "这家餐厅的菜很好吃", "top_k": 1}, "?top_k=1", 200, 1),
    ({"text": "这家餐厅的菜很好吃", "top_k": 2}, "?top_k=1", 400,
     "top_k is 1 in the query string and 2 in the body: give it once"),
    ({"text": "这家餐厅的菜很好吃", "top_k": 0}, "", 400, "top_k must be >= 1"),
    ({"text": "这家餐厅的菜很好吃", "top_k": 1.5}, "", 400, "top_k must be an integer"),
    ({"text": "这家餐厅的菜很好吃", "top_k": True}, "", 400, "top_k must be an integer"),
    ({"text": "这家餐厅的菜很好吃"}, "?top_k=1.5", 400, "top_k must be an integer"),
], ids=["body", "body string", "body null", "a million", "a million in the query",
        "batch", "both the same", "both differ", "zero", "fraction", "boolean",
        "query fraction"])
def test_top_k_comes_from_the_query_string_or_the_body_by_one_rule(
        text_served, body: Any, query: str, status: int, answer: Any) -> None:
    """The platform's try-it reads top_k by the same rule (edge_agent.text_session.
    parse_top_k, request_top_k): any integer >= 1, an answer lists at most every label."""
    _, base, _ = text_served
    reply = post(base, body, query)
    assert reply.status_code == status, reply.text
    if status != 200:
        assert reply.json() == {"error": answer}
        return
    found = reply.json()
    for result in found.get("results", [found]):
        assert len(result["predictions"]) == answer, found
