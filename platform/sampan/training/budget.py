"""The shortest training budget worth queueing for a dataset version (pure; no Django)."""

from __future__ import annotations

import math

# Fixed part of every training job, seconds: model setup (building MobileNetV2, loading the
# ImageNet weights), step-time calibration, the linear probe and the ONNX export with its parity
# check.
BUDGET_FIXED_S = 15.0
# Per-image part: decoding and preprocessing every image of the version once, ~100 small images
# a second (0.01 s an image) ...
IMAGES_DECODED_PER_S = 100
# ... plus the decode of the stored lossless PNG, which grows with its pixels: 1.5e-8 s a pixel
# (a 12-megapixel photo took 0.16 s to decode and resize on a 2-core machine, measured; the
# worker's own planner uses the same rate, workers/ml/recipe.py _DECODE_S_PER_PIXEL).
DECODE_S_PER_PIXEL = 1.5e-8
# An object detector's fixed part: 5 timed steps of ~1-3 s (a detector step at 384 px is ~10x a
# classifier's at 96 px), the ONNX export (12-20 s with torch's dynamo exporter on 2 cores,
# measured) and the box parity check and evaluation passes (workers/ml/detection/train.py).
BUDGET_FIXED_DETECTION_S = 60.0
# A text classifier's per-text part: featurising a text once takes ~0.1 ms and every pass of
# training and evaluation a few more (workers/ml/text; docs/decisions/text-classification.md):
# 1 ms a text is the floor (15,627 reviews of seeds/text: 31 s; a 120 s run of the engine on
# them ended after 36-40 s, measured).
TEXTS_PER_S = 1000


def minimum_budget_s(n_images: int, pixels: int = 0,
                     task_type: str = "image_classification") -> float:
    """Seconds a job on ``n_images`` images (all splits of the version) with ``pixels`` pixels in
    all (sum of width x height; 0 when unknown) needs before it can train at all:
    ``15 + 0.01 * n_images + 1.5e-8 * pixels`` (model setup + step calibration + decode + linear
    probe + ONNX export), figures measured on 2-core machines, the smallest the platform
    supports. A faster machine needs less: this is a floor against budgets that can only fail,
    not an estimate of a good budget. Dividing by 100 keeps whole hundreds exact (400 -> 19.0).
    1,000 photos of 12 megapixels: 15 + 10 + 180 = 205 s. An ``object_detection`` job's fixed
    part is ``BUDGET_FIXED_DETECTION_S`` (60 s) instead of 15 s. A ``text_classification``
    job's ``n_images`` are texts: ``15 + 0.001 * n_texts`` (``TEXTS_PER_S``).
    """
    if task_type == "text_classification":
        return BUDGET_FIXED_S + max(0, n_images) / TEXTS_PER_S
    fixed = BUDGET_FIXED_DETECTION_S if task_type == "object_detection" else BUDGET_FIXED_S
    return (fixed + max(0, n_images) / IMAGES_DECODED_PER_S
            + max(0, pixels) * DECODE_S_PER_PIXEL)


def minimum_budget_text(n_images: int, pixels: int = 0,
                        task_type: str = "image_classification") -> str:
    """The minimum in whole seconds as shown to users, rounded up so it is always enough."""
    return f"{math.ceil(minimum_budget_s(n_images, pixels, task_type))}"
