"""A dataset's lifecycle after its creation: rename, archive / unarchive, delete (the rules
shared with projects are in ``sampan.accounts.lifecycle``).

Roles: renaming, archiving and deleting a dataset need the editor role, as every other dataset
write and as deleting a device do (a project's owner alone deletes the project). The console
asks for the dataset's name to be typed before a delete.

Delete removes the dataset, its classes, samples, annotations, suggestions, versions, import
and pre-labeling jobs, and the training jobs trained on its versions (with their evaluation
reports and artifacts). The model versions registered from those trainings stay, with their
link to the dataset version and the training job cleared: devices keep running them, so a
deployment does not block a dataset delete. Refused (409 ``delete_blocked``) while an import or
pre-labeling job on the dataset or a training job on one of its versions is pending, queued or
running. Files (sample images no other dataset holds, import staging, training artifacts) are
deleted after the transaction commits.
"""

from __future__ import annotations

from typing import Any

from django.db import IntegrityError, transaction
from django.utils.translation import gettext as _

from sampan.accounts.audit import audit_record
from sampan.accounts.lifecycle import (apply_update, delete_blockers, delete_protected_first,
                                       files_delete_after_commit, raise_if_blocked)
from sampan.core.errors import Conflict
from sampan.datasets.models import Dataset, ImportJob, Sample


def dataset_update(*, dataset: Dataset, actor: Any, name: str | None = None,
                   description: str | None = None, archived: bool | None = None) -> Dataset:
    """Rename, describe, archive (``archived=True``) or unarchive a dataset; None leaves a field
    as it is. Audited as ``dataset.update`` / ``dataset.archive`` / ``dataset.unarchive`` with
    what changed (nothing changed: no event).

    Raises ValidationFailed naming ``name`` / ``description`` for what the rule of
    ``sampan.core.names`` refuses; Conflict (field ``name``) when another dataset of the project
    has the name."""
    project = dataset.project
    try:
        with transaction.atomic():
            locked = Dataset.objects.select_for_update().get(pk=dataset.pk)
            apply_update(locked, "dataset", actor=actor, project=project, name=name,
                         description=description, archived=archived)
    except IntegrityError:
        raise Conflict(_("a dataset named %(name)r exists in this project") % {"name": name},
                       field="name") from None
    return locked


def dataset_delete(*, dataset: Dataset, actor: Any) -> None:
    """Delete the dataset and what belongs to it (the module docstring says what), then its
    files once the transaction commits. Audited as ``dataset.delete`` (id and name).

    Raises DeleteBlocked (409 ``delete_blocked``) listing the jobs that still run on it."""
    from sampan.training.models import TrainingJob

    project = dataset.project
    with transaction.atomic():
        locked = Dataset.objects.select_for_update().get(pk=dataset.pk)
        raise_if_blocked(delete_blockers(project=project, dataset=locked),
                         what=_("dataset %(name)r") % {"name": locked.name})
        sample_files = set(Sample.objects.filter(dataset=locked).values_list("file", flat=True))
        trainings = TrainingJob.objects.filter(dataset_version__dataset=locked)
        prefixes = {f"jobs/training/{pk}" for pk in trainings.values_list("pk", flat=True)}
        details = {"name": locked.name, "samples": locked.samples.count(),
                   "training_jobs": len(prefixes)}
        prefixes |= set(ImportJob.objects.filter(dataset=locked)
                        .values_list("staging_dir", flat=True))
        delete_protected_first(project=project, dataset=locked)
        dataset_id = locked.pk
        locked.delete()
        audit_record(actor=actor, action="dataset.delete", project=project,
                     target_type="Dataset", target_id=str(dataset_id), details=details)
        files_delete_after_commit(sample_files=sample_files, prefixes=prefixes)


__all__ = ["dataset_delete", "dataset_update"]
