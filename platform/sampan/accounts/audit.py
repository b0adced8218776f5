"""The audit log: who created, trained, deployed, changed members, created or revoked tokens,
with the time and the object. Written by the services in the same transaction as the change
(an event is never recorded for a change that rolled back); read by a project's owners
(``GET /api/v1/projects/{id}/audit/``)."""

from __future__ import annotations

from typing import Any

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


def audit_list(*, project: Project, action: str | None = None) -> Any:
    """The project's events, newest first; ``action``: only that action (``member.set``), or
    every action that starts with it when it ends with a dot (``member.``); None or "": all."""
    events = AuditEvent.objects.filter(project=project)
    if action:
        events = (events.filter(action__startswith=action) if action.endswith(".")
                  else events.filter(action=action))
    return events.order_by("-created_at", "-id")


__all__ = ["audit_list", "audit_record"]
