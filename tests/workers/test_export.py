import onnx
import pytest
import torch
from torch import nn

from edge_agent.imaging import Preprocessing
from workers.ml.data import normalise, to_tensors
from workers.ml.export import check_parity, export_onnx

from .conftest import digit_refs


def _tiny_cnn() -> nn.Module:
    return nn.Sequential(
        nn.Conv2d(3, 8, 3, stride=2), nn.ReLU(), nn.Conv2d(8, 16, 3, stride=2), nn.ReLU(),
        nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(16, 10),
    )


def _trained(seed: int, images: torch.Tensor, labels: torch.Tensor) -> nn.Module:
    torch.manual_seed(seed)
    model = _tiny_cnn()
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
    for _ in range(60):
        loss = nn.functional.cross_entropy(model(images), labels)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    return model.eval()


@pytest.fixture(scope="module")
def digits():
    preprocessing = Preprocessing(size=(32, 32))
    data = to_tensors(digit_refs("train", 10), preprocessing, lambda: False)
    return normalise(data.images, preprocessing).contiguous(), data.labels


def test_parity_passes_for_the_exported_model(digits, tmp_path):
    images, labels = digits
    model = _trained(0, images, labels)
    accuracy = float((model(images).argmax(1) == labels).float().mean())
    assert accuracy > 0.5  # trained, not near-uniform outputs
    info = export_onnx(model, tmp_path / "model.onnx", (32, 32), exporter="dynamo")
    proto = onnx.load(str(tmp_path / "model.onnx"))
    assert [i.name for i in proto.graph.input] == ["input"]
    assert [o.name for o in proto.graph.output] == ["probabilities"]
    assert proto.graph.input[0].type.tensor_type.shape.dim[0].dim_param  # dynamic batch
    assert info["exporter"] == "dynamo" and info["opset"] >= 18 and info["ir_version"] >= 8

    parity = check_parity(model, tmp_path / "model.onnx", images)
    assert parity["passed"] is True
    assert parity["n"] == len(images) and parity["top1_agree"] and parity["mismatches"] == []
    assert parity["max_abs_diff"] <= 1e-4


def test_parity_fails_when_the_onnx_file_is_another_model(digits, tmp_path):
    images, labels = digits
    model = _trained(0, images, labels)
    other = _trained(1, images, labels)
    export_onnx(other, tmp_path / "other.onnx", (32, 32), exporter="torchscript")

    parity = check_parity(model, tmp_path / "other.onnx", images, [f"s{i}" for i in range(100)])
    assert parity["passed"] is False
    assert parity["max_abs_diff"] > 1e-2
    assert parity["top1_agree"] is False and parity["n_mismatches"] >= 1
    first = parity["mismatches"][0]
    assert first["torch_top1"] != first["onnx_top1"]
    assert first["sample_id"] == f"s{first['index']}"


def test_training_pixels_are_the_devices_pixels():
    # training caches uint8 pixels and normalises them in torch; the device runs
    # edge_agent.imaging.preprocess: both must give the same float32 input
    import numpy as np

    from edge_agent.imaging import decode_image, preprocess

    preprocessing = Preprocessing(size=(96, 96))
    refs = digit_refs("train", 1)[:3]
    data = to_tensors(refs, preprocessing, lambda: False)
    ours = normalise(data.images, preprocessing).contiguous().numpy()
    device = np.stack([preprocess(decode_image(open(r.path, "rb").read()), preprocessing)
                       for r in refs])
    assert np.abs(ours - device).max() <= 1e-6
