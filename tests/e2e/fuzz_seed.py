"""The objects the schema fuzz test (``test_schema_fuzz.py``) fills path parameters with.

Run inside the stack's ``manage.py shell`` (its database and storage); prints one JSON line:
the API token to fuzz with, a device credential, and the id of one real object of each kind.
Objects the fuzzer may delete (a token, a membership) are extra ones, never those it needs.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

def seed() -> dict[str, Any]:

    from sampan.accounts.services import (api_token_create, membership_set, project_create,
                                          user_create)
    from sampan.compression.services import compression_job_create
    from sampan.fleet.models import AlertKind, AlertRule
    from sampan.fleet.services import (deployment_create, device_enroll,
                                       enrollment_token_create)
    from sampan.training.services import training_job_create
    from sampan.uploads.services import upload_create
    from tests.fixtures.registered import labelled_dataset_and_model

    user = user_create(username="fuzz", password="fuzz-password-1")
    user_create(username="other", password="other-password-1")
    project = project_create(user=user, name="fuzzed")
    member = membership_set(project=project, username="other", role="viewer", actor=user)
    made = labelled_dataset_and_model(project, images=12, folder="fuzz")
    dataset, samples = made["dataset"], made["samples"]
    dataset_version, model_version = made["dataset_version"], made["model_version"]
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
