"""The objects the schema fuzz test (``test_schema_fuzz.py``) fills path parameters with.

Run inside the stack's ``manage.py shell`` (its database and storage); prints one JSON line:
the API token to fuzz with, a device credential, and the id of one real object of each kind.
Objects the fuzzer may delete (a token, a membership) are extra ones, never those it needs.
"""

from __future__ import annotations

import tempfile
from datetime import timedelta
from pathlib import Path
from typing import Any

PREPROCESSING = {"size": [4, 4], "resize": "stretch", "mean": [0.5] * 3, "std": [0.5] * 3,
                 "colour_order": "RGB", "layout": "NCHW", "dtype": "float32"}


def seed() -> dict[str, Any]:
    from django.core.files.base import ContentFile
    from django.core.files.storage import default_storage

    from sampan.accounts.services import (api_token_create, membership_set, project_create,
                                          user_create)
    from sampan.compression.services import compression_job_create
    from sampan.datasets.models import Sample
    from sampan.datasets.services import dataset_create, sample_label_set
    from sampan.datasets.versions import dataset_version_create
    from sampan.fleet.models import AlertKind, AlertRule
    from sampan.fleet.services import (deployment_create, device_enroll,
                                       enrollment_token_create)
    from sampan.registry.services import model_version_register
    from sampan.training.services import training_job_create
    from sampan.uploads.services import upload_create
    from tests.fixtures import images
    from tests.platform.training.test_training_services import tiny_onnx

    user = user_create(username="fuzz", password="fuzz-password-1")
    user_create(username="other", password="other-password-1")
    project = project_create(user=user, name="fuzzed")
    member = membership_set(project=project, username="other", role="viewer", actor=user)
    dataset = dataset_create(project=project, name="pets", labels=["cat", "dog"])
    samples = []
    for i in range(12):
        label = ("cat", "dog")[i % 2]
        data = images.png_bytes((20 * i, 100, 200 - 10 * i), size=(8, 6))
        name = default_storage.save(f"samples/fuzz/{i}.png", ContentFile(data))
        sample = Sample.objects.create(dataset=dataset, content_sha256=f"{i:064d}", file=name,
                                       original_name=f"{label}/{i}.png", width=8, height=6)
        sample_label_set(sample=sample, label=label)
        samples.append(sample)
    dataset_version = dataset_version_create(dataset=dataset, seed=0)
    with tempfile.TemporaryDirectory() as folder:
        model_version = model_version_register(
            project=project, model_name="pets", task_type="image_classification",
            labels=["cat", "dog"], preprocessing=PREPROCESSING,
            onnx_path=tiny_onnx(Path(folder) / "m.onnx"), input_shape=["N", 3, 4, 4],
            metrics={}, lineage={}, onnx_info={"opset": 18, "ir_version": 9}, pretrained=False,
            dataset_version=dataset_version)
    token = enrollment_token_create(project=project, user=user, expires_in=timedelta(days=1))
    enrollment = device_enroll(token=token.secret, name="edge-1", info={})
    deployment = deployment_create(project=project, user=user,
                                   model_version_id=model_version.pk,
                                   device_ids=[enrollment.device.pk])[0]
    rule = AlertRule.objects.create(project=project, name="offline", kind=AlertKind.choices[0][0],
                                    threshold=1.0)
    training = training_job_create(project=project, dataset_version=dataset_version,
                                   budget_s=60, user=user)
    compression = compression_job_create(project=project, source=model_version, device=None,
                                         user=user)
    upload = upload_create(owner=user, length=10, metadata={"filename": "a.zip"})
    return {
        "token": api_token_create(user=user, name="fuzz").secret,
        "device_credential": enrollment.credential,
        "ids": {
            "project_id": str(project.pk), "dataset_id": str(dataset.pk),
            "sample_id": str(samples[0].pk), "dataset_version_id": str(dataset_version.pk),
            "model_version_id": str(model_version.pk), "device_id": str(enrollment.device.pk),
            "deployment_id": str(deployment.pk), "rule_id": str(rule.pk),
            "training_job_id": str(training.pk), "compression_job_id": str(compression.pk),
            "membership_id": str(member.pk), "upload_id": str(upload.pk),
            # a token of its own for DELETE /auth/tokens/{token_id}/: never the fuzzer's
            "token_id": str(api_token_create(user=user, name="spare").token.pk),
        },
    }
