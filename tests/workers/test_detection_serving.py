"""A real exported detector (random init) in a signed package, loaded and served by the agent as
a deployment would: its boxes in the original image's pixels equal what the worker's torch
graph gives through the same post-processing."""

from __future__ import annotations

import io
import json
from pathlib import Path

import numpy as np
import pytest
import torch
from PIL import Image

from edge_agent.agent import Agent
from edge_agent.detection import DetectionSettings, detect
from edge_agent.home import AgentConfig, AgentHome
from edge_agent.imaging import decode_image, preprocess
from edge_agent.runtime import DetectorSession
from tests.edge_agent.conftest import make_detection_package, new_signing_key
from workers.ml.detection.export import export_detector
from workers.ml.detection.model import ExportedDetector, build_detector

pytestmark = pytest.mark.slow

SIZE = 128


def photo(width: int, height: int, seed: int) -> bytes:
    pixels = np.random.default_rng(seed).integers(0, 255, (height, width, 3), dtype=np.uint8)
    buffer = io.BytesIO()
    Image.fromarray(pixels).save(buffer, "PNG")
    return buffer.getvalue()


def test_an_exported_detector_is_served_in_image_pixels_as_the_worker_sees_it(
        tmp_path: Path) -> None:
    torch.manual_seed(0)
    model = build_detector(2, SIZE).eval()
    with torch.no_grad():  # confident enough that some cells pass a threshold
        model.head.classification_head.cls_logits.bias.fill_(-1.0)
    # boxes of about two strides from the start (model.REGRESSION_BIAS), not the ~0 px ones
    # the device would drop
    graph = ExportedDetector(model, SIZE).eval()
    onnx_path = tmp_path / "model.onnx"
    assert export_detector(graph, onnx_path, SIZE)["opset"]

    images = {(640, 360): photo(640, 360, 1), (300, 900): photo(300, 900, 2)}
    preprocessing_dict = {"size": [SIZE, SIZE], "resize": "letterbox",
                          "mean": [0.485, 0.456, 0.406], "std": [0.229, 0.224, 0.225],
                          "colour_order": "RGB", "layout": "NCHW", "dtype": "float32"}
    probe = DetectorSession(onnx_path, {"labels": ["tree", "car"],
                                        "preprocessing": preprocessing_dict})
    # an untrained head scores thousands of cells alike; a threshold keeping about the 15 best
    # cells of the first image leaves a few confident boxes whose NMS does not hinge on 1e-7
    first = preprocess(decode_image(images[(640, 360)]), probe.preprocessing)[None]
    top = np.sort(probe.run_batch(first)[1].ravel())[::-1]
    threshold = float(top[40])  # the image fills 56 % of the input: some best cells are padding

    key = new_signing_key()
    package = make_detection_package(
        key, model_bytes=onnx_path.read_bytes(), labels=["tree", "car"], size=SIZE,
        detection={"score_threshold": threshold, "max_detections": 50})
    home = AgentHome(tmp_path / "agent")
    config = AgentConfig("http://control-plane", "device-1", "cred", key.public_b64)
    agent = Agent(home, config)
    directory = home.model_dir(package.version_id)
    directory.mkdir(parents=True)
    (directory / "manifest.json").write_text(json.dumps(package.manifest))
    (directory / "model.onnx").write_bytes(package.model_bytes)
    agent.swap(agent.load_package(package.version_id))  # signature, checksums, self-test

    settings = DetectionSettings.from_dict(package.manifest["detection"])

    def torch_run(batch: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        with torch.no_grad():
            boxes, scores = graph(torch.from_numpy(batch))
        return boxes.numpy(), scores.numpy()

    for (width, height), data in images.items():
        answer = agent.predict(data)
        assert (answer["task"], answer["width"], answer["height"]) == (
            "object_detection", width, height)
        found = answer["detections"]
        assert found, "the threshold keeps some boxes"
        boxes = np.array([d["box"] for d in found])
        assert (boxes >= 0).all() and (boxes[:, [0, 2]] <= width).all() and \
            (boxes[:, [1, 3]] <= height).all()
        expected = detect(decode_image(data), torch_run, probe.preprocessing, settings)
        # every served box is one the worker's torch graph gives, in the same image pixels
        for d in found:
            same_class = expected.classes == d["index"]
            assert same_class.any()
            # corners within 0.02 px (the agent rounds to 0.01 px; untrained boxes can be tiny,
            # so corners are compared rather than IoU)
            distance = np.abs(expected.boxes[same_class] - np.array(d["box"])).max(axis=1)
            best = int(np.argmin(distance))
            assert distance[best] <= 0.02, (d, expected.boxes[same_class][best])
            assert d["score"] == pytest.approx(float(expected.scores[same_class][best]),
                                               abs=1e-3)
        assert abs(len(found) - len(expected.boxes)) <= 1  # a score at the threshold may differ
