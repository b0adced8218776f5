"""Reads for accounts, and the one place that decides what a user may see or change."""

from __future__ import annotations

from typing import Any

from django.db.models import OuterRef, QuerySet, Subquery
from django.utils.translation import gettext as _

from sampan.accounts.models import ROLE_RANK, Membership, Project, Role
from sampan.core.errors import Forbidden, NotFound


def project_ids_for_user(user: Any) -> QuerySet[Any]:
    return Membership.objects.filter(user=user).values_list("project_id", flat=True)


def project_list(*, user: Any, archived: bool | None = None) -> QuerySet[Project]:
    """The user's projects, each annotated with ``role``: the user's role in it. ``archived``:
    False for the active ones only, True for the archived ones only, None (the default) for
    all."""
    role = Membership.objects.filter(project=OuterRef("pk"), user=user).values("role")[:1]
    projects = Project.objects.filter(memberships__user=user)
    if archived is not None:
        projects = projects.filter(archived_at__isnull=not archived)
    return projects.annotate(role=Subquery(role)).order_by("created_at")


def membership_get(*, user: Any, project_id: Any) -> Membership | None:
    if not getattr(user, "is_authenticated", False):
        return None
    return Membership.objects.select_related("project").filter(
        user=user, project_id=project_id).first()


def project_get_for(*, user: Any, project_id: Any, role: str = Role.VIEWER) -> Project:
    """The project if ``user`` holds at least ``role`` in it.

    Raises NotFound (404) when the user is not a member — another project's objects are invisible —
    and Forbidden (403) when the user is a member with a lower role.
    """
    membership = membership_get(user=user, project_id=project_id)
    if membership is None:
        raise NotFound(_("project not found"))
    if ROLE_RANK[Role(membership.role)] < ROLE_RANK[Role(role)]:
        raise Forbidden(_("this needs the %(role)s role in the project; you are %(current)s")
                        % {"role": role, "current": membership.role})
    return membership.project


def membership_list(*, project: Project) -> QuerySet[Membership]:
    return project.memberships.select_related("user").order_by("created_at")
