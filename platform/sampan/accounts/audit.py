"""The audit log: who created, trained, deployed, changed members, created or revoked tokens,
with the time and the object. Written by the services in the same transaction as the change
(an event is never recorded for a change that rolled back); read by a project's owners
(``GET /api/v1/projects/{id}/audit/``). Events of no project (an account's API tokens, its
sign-ins, a user account created, a project's deletion) are read by the account's own person
(``GET /api/v1/auth/me/audit/``: the events they did or that name their account); staff read
every event (``GET /api/v1/audit/``)."""

from __future__ import annotations

from typing import Any

from django.contrib.auth import get_user_model
from django.db.models import Q, QuerySet

from sampan.accounts.models import AuditEvent, Project


def audit_record(*, actor: Any, action: str, project: Project | None = None,
                 target: Any = None, target_type: str = "", target_id: str = "",
                 details: dict[str, Any] | None = None) -> AuditEvent:
    """Append one event. ``target``: a model instance (its class name and primary key are
    kept), or give ``target_type`` (and ``target_id``) alone, e.g. for an object deleted
    already; ``actor``: a user, or None (the system)."""
    user = actor if getattr(actor, "is_authenticated", False) else None
    return AuditEvent.objects.create(
        project=project, actor=user, actor_name=getattr(user, "username", "") or "",
        action=action, target_type=target_type or (type(target).__name__ if target else ""),
        target_id=target_id or str(getattr(target, "pk", "") or ""), details=details or {})


def _with_action(events: QuerySet[AuditEvent], action: str | None) -> QuerySet[AuditEvent]:
    """``action``: only that action (``member.set``), or every action that starts with it when
    it ends with a dot (``member.``); None or "": all. Newest first."""
    if action:
        events = (events.filter(action__startswith=action) if action.endswith(".")
                  else events.filter(action=action))
    return events.order_by("-created_at", "-id")


def audit_list(*, project: Project, action: str | None = None) -> QuerySet[AuditEvent]:
    """The project's events, newest first; ``action`` as in :func:`_with_action`."""
    return _with_action(AuditEvent.objects.filter(project=project), action)


def audit_list_personal(*, user: Any, action: str | None = None) -> QuerySet[AuditEvent]:
    """The events of no project that ``user`` did (``token.create``, ``token.revoke``,
    ``login.succeeded``, ``user.create`` of someone else, ``project.delete``) or that name
    ``user``'s account as their object (``login.failed``: someone tried its password;
    ``user.create``: who made the account); newest first. A project's events stay in the
    project's log (its owners read them there)."""
    mine = Q(actor=user) | Q(target_type=get_user_model().__name__, target_id=str(user.pk))
    return _with_action(AuditEvent.objects.filter(mine, project__isnull=True), action)


def audit_list_all(*, action: str | None = None, project_id: Any = None,
                   actor: str | None = None) -> QuerySet[AuditEvent]:
    """Every event (staff only: the caller checks), newest first; ``project_id``: only that
    project's; ``actor``: only those done by the user of that username (kept after the user is
    deleted); ``action`` as in :func:`_with_action`."""
    events = AuditEvent.objects.all()
    if project_id is not None:
        events = events.filter(project_id=project_id)
    if actor:
        events = events.filter(actor_name=actor)
    return _with_action(events, action)


__all__ = ["audit_list", "audit_list_all", "audit_list_personal", "audit_record"]
