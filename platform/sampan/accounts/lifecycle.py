"""A project's lifecycle after its creation: rename, archive / unarchive, delete; and the two
rules the datasets share (``sampan.datasets.lifecycle``): what an archived object refuses and
what blocks a delete.

**Archive** is the cheap, undoable way to put a project away: ``archived_at`` is set, the project
leaves the default list (``GET /projects/?archived=true`` shows it), reads keep working and
:func:`ensure_active` refuses new work in it (409 ``archived``): imports, labels, versions,
training, compression and pre-labeling jobs, new datasets. Deployments and devices are left
alone (a fleet keeps being managed). ``PATCH {"archived": false}`` undoes it.

**Delete** removes the project's rows in one transaction and, once it commits
(``transaction.on_commit``), its files from the storage: sample images no other dataset uses,
import staging, training artifacts, model packages, benchmark packages (exports are streamed,
never stored). Rows go first, files after: a failure between the two leaves stray files, never
rows pointing at missing files. It is refused (409 ``delete_blocked``, :func:`delete_blockers`)
while a device has an active deployment of one of the project's models or while one of its jobs
(import, pre-labeling, training, compression) is pending, queued or running.

The audit event of a project delete is recorded with ``project`` null (the project's own events
are deleted with it, ``AuditEvent.project`` cascades), ``target_id`` the project's id and the
name in ``details``: it outlives the project, like the events of an account.
"""

from __future__ import annotations

import logging
from typing import Any

from django.db import transaction
from django.utils import timezone
from django.utils.translation import gettext as _
from django.utils.translation import gettext_noop

from sampan.accounts.audit import audit_record
from sampan.accounts.models import Project
from sampan.core import storage
from sampan.core.errors import Archived, DeleteBlocked
from sampan.core.jobs import JobStatus
from sampan.core.language import phrase
from sampan.core.validation import validated_name, validated_text

log = logging.getLogger(__name__)

#: job states that block a delete: the job may still write to what would be deleted
ACTIVE_JOB_STATES = (JobStatus.PENDING, JobStatus.QUEUED, JobStatus.RUNNING)
#: what the apps say they were ``doing`` when ensure_active refused it, for the catalogue
#: (``sampan.core.language.phrase``: one passed already translated is said as it is)
DOINGS = (gettext_noop("adding class labels"), gettext_noop("compressing"),
          gettext_noop("creating a dataset"), gettext_noop("freezing a version"),
          gettext_noop("importing"), gettext_noop("labeling"), gettext_noop("pre-labeling"),
          gettext_noop("training"))


def ensure_active(*, project: Project, dataset: Any = None, doing: str) -> None:
    """Raise Archived (409 ``archived``) when ``project`` or ``dataset`` (a Dataset of it, or
    None) is archived; ``doing`` (e.g. ``"importing"``, one of DOINGS) is said in the
    message."""
    if project.archived_at is not None:
        raise Archived(_("project %(name)r is archived: %(doing)s is refused; unarchive it "
                         "first (PATCH archived=false)")
                       % {"name": project.name, "doing": phrase(doing)}, field="archived",
                       details={"archived": "project", "id": str(project.pk)})
    if dataset is not None and dataset.archived_at is not None:
        raise Archived(_("dataset %(name)r is archived: %(doing)s is refused; unarchive it "
                         "first (PATCH archived=false)")
                       % {"name": dataset.name, "doing": phrase(doing)}, field="archived",
                       details={"archived": "dataset", "id": str(dataset.pk)})


def delete_blockers(*, project: Project, dataset: Any = None) -> list[dict[str, str]]:
    """What stops a delete of ``project`` (or only of ``dataset``, a Dataset of it): a list of
    ``{"kind", "id", "state", "label"}``, empty when nothing does (``label`` in the active
    language).

    For a project: its deployments that are not superseded (a device is running, or about to
    run, one of its models) and its jobs in :data:`ACTIVE_JOB_STATES`. For a dataset: the
    import and pre-labeling jobs on it and the training jobs on its versions in those states
    (its deleted versions would be pulled from under them); deployments do not block, since a
    dataset delete keeps the model versions trained on it."""
    from sampan.compression.models import CompressionJob
    from sampan.datasets.models import ImportJob, PrelabelJob
    from sampan.fleet.models import Deployment, DeploymentState
    from sampan.training.models import TrainingJob

    blockers: list[dict[str, str]] = []
    scope: dict[str, Any] = {"project": project}
    if dataset is None:
        for deployment in (Deployment.objects.filter(project=project)
                           .exclude(state=DeploymentState.SUPERSEDED)
                           .select_related("device", "model_version__model")
                           .order_by("created_at")):
            blockers.append({"kind": "deployment", "id": str(deployment.pk),
                             "state": deployment.state,
                             "label": _("device %(device)r runs %(model)s") % {
                                 "device": deployment.device.name,
                                 "model": deployment.model_version.label}})
    # (kind, model, filter, label: the state is a code, e.g. running)
    jobs: list[tuple[str, Any, dict[str, Any], str]] = [
        ("import", ImportJob, {"dataset": dataset} if dataset else {},
         gettext_noop("import job %(id)s is %(state)s")),
        ("prelabel", PrelabelJob, {"dataset": dataset} if dataset else {},
         gettext_noop("prelabel job %(id)s is %(state)s")),
        ("training", TrainingJob,
         {"dataset_version__dataset": dataset} if dataset else {},
         gettext_noop("training job %(id)s is %(state)s")),
    ]
    # a compression job calibrates and evaluates on its source model's dataset version
    jobs.append(("compression", CompressionJob,
                 {"source__dataset_version__dataset": dataset} if dataset else {},
                 gettext_noop("compression job %(id)s is %(state)s")))
    for kind, model, where, label in jobs:
        for job in (model.objects.filter(**scope, **where, status__in=ACTIVE_JOB_STATES)
                    .order_by("created_at")):
            blockers.append({"kind": f"{kind}_job", "id": str(job.pk), "state": job.status,
                             "label": _(label) % {"id": job.pk, "state": job.status}})
    return blockers


def raise_if_blocked(blockers: list[dict[str, str]], *, what: str) -> None:
    """Raise DeleteBlocked naming every blocker and what to stop, when there are any.
    ``what`` (e.g. ``_("project %(name)r") % ...``) is said in the message: pass it translated.
    """
    if not blockers:
        return
    devices = any(b["kind"] == "deployment" for b in blockers)
    jobs = any(b["kind"].endswith("_job") for b in blockers)
    if devices and jobs:
        advice = _("remove those devices or deploy another project's model to them (Devices) "
                   "and cancel those jobs or wait until they finish")
    elif devices:
        advice = _("remove those devices or deploy another project's model to them (Devices)")
    else:
        advice = _("cancel those jobs or wait until they finish")
    values = {"what": what, "blockers": "; ".join(b["label"] for b in blockers[:10]),
              "count": len(blockers) - 10, "advice": advice}
    message = (_("%(what)s cannot be deleted yet: %(blockers)s and %(count)d more. First "
                 "%(advice)s.") if len(blockers) > 10 else
               _("%(what)s cannot be deleted yet: %(blockers)s. First %(advice)s."))
    raise DeleteBlocked(message % values, details={"blockers": blockers})


def files_delete_after_commit(*, sample_files: set[str], prefixes: set[str]) -> None:
    """Once the transaction commits: delete every tree in ``prefixes`` and every sample file in
    ``sample_files`` that no remaining sample uses (samples are stored once per content hash,
    shared by every dataset holding the same image). A storage error is logged, not raised:
    the rows are gone already, and a stray file harms nothing."""
    from sampan.datasets.models import Sample

    def delete() -> None:
        still_used = set(Sample.objects.filter(file__in=sample_files)
                         .values_list("file", flat=True))
        for name in sorted(n for n in sample_files - still_used if n):  # text samples: ""
            try:
                storage.delete(name)
            except Exception:  # noqa: BLE001 - see the docstring
                log.exception("could not delete %s", name)
        for prefix in sorted(p for p in prefixes if p):
            try:
                storage.delete_tree(prefix)
            except Exception:  # noqa: BLE001 - see the docstring
                log.exception("could not delete %s", prefix)

    transaction.on_commit(delete)


def delete_protected_first(*, project: Project, dataset: Any = None) -> None:
    """Delete, in an order that satisfies them, the rows that a ``PROTECT`` foreign key holds
    inside ``project`` (or only inside ``dataset``): Django's collector refuses a cascade that
    meets one even when the protecting row would be deleted by the same cascade. Rollouts,
    deployments and compression jobs protect model versions; training jobs dataset versions;
    version items samples; annotations classes. Inside the caller's transaction."""
    from sampan.compression.models import CompressionJob
    from sampan.datasets.models import Annotation, DatasetVersion
    from sampan.fleet.models import Deployment, Rollout
    from sampan.training.models import TrainingJob

    if dataset is None:
        Rollout.objects.filter(project=project).delete()
        Deployment.objects.filter(project=project).delete()
        CompressionJob.objects.filter(project=project).delete()
        TrainingJob.objects.filter(project=project).delete()
        DatasetVersion.objects.filter(project=project).delete()
        Annotation.objects.filter(sample__dataset__project=project).delete()
        return
    TrainingJob.objects.filter(project=project, dataset_version__dataset=dataset).delete()
    DatasetVersion.objects.filter(dataset=dataset).delete()
    Annotation.objects.filter(sample__dataset=dataset).delete()


def project_update(*, project: Project, actor: Any, name: str | None = None,
                   description: str | None = None, archived: bool | None = None) -> Project:
    """Rename, describe, archive (``archived=True``) or unarchive a project; None leaves a field
    as it is. Audited as ``project.update`` with what changed (nothing changed: no event).

    Raises ValidationFailed naming ``name`` or ``description`` for what the rule of
    ``sampan.core.names`` refuses (project names need not be unique)."""
    with transaction.atomic():
        locked = Project.objects.select_for_update().get(pk=project.pk)
        apply_update(locked, "project", actor=actor, project=locked, name=name,
                     description=description, archived=archived)
    return locked


def apply_update(locked: Any, kind: str, *, actor: Any, project: Project, name: str | None,
                 description: str | None, archived: bool | None) -> dict[str, Any]:
    """Set the name, description and archived state of ``locked`` (a project or dataset row
    locked by the caller's transaction; None leaves a field as it is), save it and audit it as
    ``<kind>.update`` / ``.archive`` / ``.unarchive`` with what changed. Returns the changes
    (empty: nothing saved, no event). Raises ValidationFailed naming ``name`` or
    ``description`` for what ``sampan.core.names`` refuses."""
    changes: dict[str, Any] = {}
    if name is not None:
        name = validated_name(name, field="name")
        if name != locked.name:
            changes["name"] = {"from": locked.name, "to": name}
            locked.name = name
    if description is not None:
        description = validated_text(description, field="description")
        if description != locked.description:
            changes["description"] = True
            locked.description = description
    if archived is not None and archived != (locked.archived_at is not None):
        changes["archived"] = archived
        locked.archived_at = timezone.now() if archived else None
    if changes:
        locked.save(update_fields=["name", "description", "archived_at", "updated_at"])
        action = {True: "archive", False: "unarchive"}.get(changes.get("archived"), "update")
        audit_record(actor=actor, action=f"{kind}.{action}", project=project, target=locked,
                     details=changes)
    return changes


def project_delete(*, project: Project, actor: Any) -> None:
    """Delete the project with everything in it (datasets, samples, versions, jobs, models,
    devices, deployments, alert rules, members, its audit log), then its files (see the module
    docstring). Devices without an active deployment are deleted with it: their credentials
    stop working.

    Raises DeleteBlocked (409 ``delete_blocked``) listing the active deployments and jobs."""
    from sampan.datasets.models import ImportJob, Sample
    from sampan.fleet.local import local_device_retire
    from sampan.fleet.models import DeviceBenchmark
    from sampan.registry.models import ModelVersion
    from sampan.training.models import TrainingJob

    with transaction.atomic():
        locked = Project.objects.select_for_update().get(pk=project.pk)
        raise_if_blocked(delete_blockers(project=locked),
                         what=_("project %(name)r") % {"name": locked.name})
        sample_files = set(Sample.objects.filter(dataset__project=locked)
                           .values_list("file", flat=True))
        prefixes = set(ModelVersion.objects.filter(project=locked)
                       .values_list("package_dir", flat=True))
        prefixes |= set(ImportJob.objects.filter(project=locked)
                        .values_list("staging_dir", flat=True))
        prefixes |= {f"jobs/training/{pk}" for pk in TrainingJob.objects.filter(project=locked)
                     .values_list("pk", flat=True)}
        prefixes |= set(DeviceBenchmark.objects.filter(project=locked)
                        .values_list("package_dir", flat=True))
        prefixes.add(f"benchmarks/{locked.pk}")
        device_ids = list(locked.devices.values_list("pk", flat=True))
        project_id, name = locked.pk, locked.name
        counts = {"datasets": locked.datasets.count(), "models": locked.models.count(),
                  "devices": len(device_ids)}
        delete_protected_first(project=locked)
        locked.delete()
        audit_record(actor=actor, action="project.delete", target_type="Project",
                     target_id=str(project_id), details={"name": name, **counts})
        files_delete_after_commit(sample_files=sample_files, prefixes=prefixes)
        for device_id in device_ids:  # this machine's agent of the project, if any: stopped
            transaction.on_commit(lambda d=device_id: local_device_retire(
                project_id=project_id, device_id=d))

