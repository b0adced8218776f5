"""Entry point of worker processes: ``celery -A workers.app worker -Q training,default``.

It configures Django (workers load and save job state through ``sampan`` services), then
registers the platform's light tasks and the ML tasks of ``workers.tasks``. torch is imported
once here, at start-up, not per task.
"""

import os

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "sampan.settings")

import django  # noqa: E402

django.setup()

from sampan.celery import app  # noqa: E402

import workers.tasks.compression  # noqa: E402,F401  (registers "compression.run")
import workers.tasks.training  # noqa: E402,F401  (registers "training.run")

__all__ = ["app"]

import logging  # noqa: E402

# the ONNX exporter's optimiser logs every folded initializer at INFO
for _name in ("onnxscript", "onnx_ir", "torch.onnx"):
    logging.getLogger(_name).setLevel(logging.WARNING)
