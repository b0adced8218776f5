"""What an import that did not finish leaves behind is taken back.

An import commits its samples one file at a time (each with its annotations), so a job that
fails on an unexpected error, is cancelled, or whose worker is lost (the reaper) had added part
of its files. :func:`import_job_undo` removes them: the dataset is as it was before the import,
except for samples a dataset version froze meanwhile (a version's contents never change), which
stay and are counted.
"""

from __future__ import annotations

from typing import Any

from django.db import transaction

from sampan.accounts.lifecycle import files_delete_after_commit
from sampan.datasets.models import DatasetVersionItem, Sample

__all__ = ["import_job_undo"]


def import_job_undo(job_id: Any) -> dict[str, int]:
    """Delete the samples import job ``job_id`` added (their annotations and suggestions go
    with them), except those a dataset version holds; their files once the transaction commits
    when no other sample shares them (sampan.accounts.lifecycle.files_delete_after_commit).
    Returns ``{"removed": n, "kept_in_versions": m}``."""
    with transaction.atomic():
        added = Sample.objects.filter(import_job_id=job_id)
        frozen = DatasetVersionItem.objects.filter(sample__import_job_id=job_id)
        kept = frozen.values("sample_id").distinct().count()
        removable = added.exclude(pk__in=frozen.values("sample_id"))
        files = set(removable.values_list("file", flat=True))
        removed = removable.count()
        removable.delete()
        files_delete_after_commit(sample_files=files, prefixes=set())
    return {"removed": removed, "kept_in_versions": kept}
