"""Which torch device a training run uses: the ``SAMPAN_TRAINING_DEVICE`` setting.

``auto`` (the default): the first CUDA GPU when this process's torch sees one, else the CPU.
``cpu``: always the CPU. ``cuda`` or ``cuda:N``: that GPU, or an error when torch sees none (a
worker that was meant to train on a GPU says so at the first job instead of training on its CPU
for hours). Image classification (:func:`workers.ml.classification.train_image_classifier`)
and object detection (:func:`workers.ml.detection.train.train_detector`) train on the device;
text classification and compression run on the CPU in this release whatever the setting.

Whatever the device, decoding and augmentation run on the CPU, and the export, its parity gate
and the final evaluation run the exported graph on the CPU as the device (the edge) will.
Results on a GPU are not bit-for-bit those of the CPU, nor of another GPU run: cuDNN times and
chooses its own convolution algorithms (``torch.backends.cudnn.benchmark``, on while a job
trains: :func:`training_on`), some of them non-deterministic. So a recorded recipe replays where
it was recorded (:func:`replay_device`): exactly on the CPU; on a GPU not bit-for-bit (a GPU
replay has not been measured).
"""

from __future__ import annotations

import contextlib
import os
import traceback
from collections.abc import Iterator

import torch

__all__ = ["DEVICE_ENV", "device_name", "replay_device", "training_device", "training_on"]

DEVICE_ENV = "SAMPAN_TRAINING_DEVICE"


def training_device(setting: str | None = None, source: str = DEVICE_ENV) -> torch.device:
    """The device named by ``setting`` (default: the ``SAMPAN_TRAINING_DEVICE`` environment
    variable, else ``auto``): ``auto``, ``cpu``, ``cuda`` or ``cuda:N``.

    Raises ValueError naming the setting (``source``: where ``setting`` came from, e.g. a
    command's ``--device``) when the value is none of these, or names a GPU that this process's
    torch does not see (no CUDA build, no driver, or fewer GPUs than ``N + 1``).
    """
    named = setting if setting is not None else os.environ.get(DEVICE_ENV, "")
    value = named.strip().lower() or "auto"
    if value == "auto":
        return torch.device("cuda:0" if torch.cuda.is_available() else "cpu")
    if value == "cpu":
        return torch.device("cpu")
    kind, colon, index = value.partition(":")
    if kind != "cuda" or (colon and not (index.isascii() and index.isdigit())):
        raise ValueError(f"{source}={named!r}: expected auto, cpu, cuda or cuda:N")
    number = int(index or 0)
    if not torch.cuda.is_available():
        raise ValueError(f"{source}={named!r}: this worker's torch sees no CUDA GPU "
                         f"(CUDA build: {torch.version.cuda or 'no'}); set it to auto or cpu, "
                         "or install a CUDA build of torch and the NVIDIA driver")
    if number >= torch.cuda.device_count():
        raise ValueError(f"{source}={named!r}: this worker sees "
                         f"{torch.cuda.device_count()} GPU(s), numbered from 0")
    return torch.device("cuda", number)


def replay_device(recorded: object, requested: str | None = None) -> torch.device:
    """Where a recorded recipe replays: on the kind of device it was recorded on (a CPU recipe
    replayed on a GPU would train another model). ``recorded`` is the recipe's ``device``
    (:func:`device_name`'s text); a recipe recorded before devices were (none, or blank) was
    trained on the CPU. A GPU recipe replays on the GPU the request names, else the worker's
    setting's when that is a GPU, else the first GPU (its index is the recording worker's).
    The worker's setting never moves a CPU recipe to a GPU; ``requested`` (the request's own
    device) of the other kind is refused.

    Raises ValueError naming the recipe's device when it was a GPU and this worker has none, or
    when ``requested`` is of the other kind.
    """
    text = str(recorded or "").strip() or "cpu"
    on_gpu = text.split()[0].startswith("cuda")
    if requested is not None:
        device = training_device(requested)
        if (device.type == "cuda") != on_gpu:
            raise ValueError(f"the recipe was recorded on {text!r} and replays on the same kind "
                             f"of device, not on {device}")
        return device
    if not on_gpu:
        return torch.device("cpu")
    if not torch.cuda.is_available():
        raise ValueError(f"the recipe was recorded on {text!r} and replays only on a GPU; this "
                         f"worker's torch sees none (CUDA build: {torch.version.cuda or 'no'})")
    try:
        setting = training_device()
    except ValueError:
        setting = torch.device("cpu")
    return setting if setting.type == "cuda" else torch.device("cuda", 0)


@contextlib.contextmanager
def training_on(device: torch.device) -> Iterator[None]:
    """While a job trains on a GPU: cuDNN's autotuner on (it times the algorithms once per
    input shape and keeps the fastest; a run has few shapes). Afterwards the worker's setting is
    back and the GPU memory torch cached for the job is returned to the driver, so the next job
    (or another process) starts with the whole GPU."""
    previous = torch.backends.cudnn.benchmark, torch.backends.cudnn.allow_tf32
    if device.type == "cuda":
        # float32 convolutions, not TF32: validation on the GPU chooses the kept model, so its
        # figures should be as close to the CPU export's as the two libraries allow (GPU and
        # CPU answers of TF32-validated models differed by up to 0.014 in probability)
        torch.backends.cudnn.benchmark, torch.backends.cudnn.allow_tf32 = True, False
    try:
        yield
    except BaseException as exc:
        # a failed or cancelled job's traceback holds its frames (model, optimiser, batches on
        # the GPU) while it is handled: clear them so that the cache below can be returned
        traceback.clear_frames(exc.__traceback__)
        raise
    finally:
        torch.backends.cudnn.benchmark, torch.backends.cudnn.allow_tf32 = previous
        if device.type == "cuda":
            torch.cuda.empty_cache()


def device_name(device: torch.device) -> str:
    """``cpu``, or the GPU's own name (``cuda:0 NVIDIA H200``), for the recipe and the log."""
    if device.type != "cuda":
        return device.type
    return f"{device} {torch.cuda.get_device_name(device)}"
