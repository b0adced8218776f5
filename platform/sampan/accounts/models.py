"""Users, projects, memberships with roles, and personal API tokens."""

from __future__ import annotations

import hashlib

from django.conf import settings
from django.db import models

from sampan.core.models import BaseModel


class Role(models.TextChoices):
    VIEWER = "viewer"
    EDITOR = "editor"
    OWNER = "owner"


ROLE_RANK = {Role.VIEWER: 1, Role.EDITOR: 2, Role.OWNER: 3}


class Project(BaseModel):
    """A workspace that owns datasets, jobs, models and devices; members have roles."""

    name = models.CharField(max_length=200)
    description = models.TextField(blank=True, default="")
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT,
                                   related_name="+")
    #: when it was archived (null: active); an archived project is hidden from the default
    #: list and refuses new work (``sampan.accounts.lifecycle``)
    archived_at = models.DateTimeField(null=True, blank=True)

    @property
    def archived(self) -> bool:
        return self.archived_at is not None

    def __str__(self) -> str:
        return self.name


class Membership(BaseModel):
    """A user's role in one project. One row per (project, user)."""

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="memberships")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE,
                             related_name="memberships")
    role = models.CharField(max_length=16, choices=Role.choices)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["project", "user"],
                                               name="membership_unique_user")]


class ApiToken(BaseModel):
    """A personal API token. Only its sha256 is stored; the secret is shown once at creation."""

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE,
                             related_name="api_tokens")
    name = models.CharField(max_length=100)
    prefix = models.CharField(max_length=12, db_index=True)
    token_sha256 = models.CharField(max_length=64, unique=True)
    last_used_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)
    #: after this the token is refused (null: never expires)
    expires_at = models.DateTimeField(null=True, blank=True)

    @staticmethod
    def digest(secret: str) -> str:
        return hashlib.sha256(secret.encode()).hexdigest()


class AuditEvent(models.Model):
    """Who did what, when, to which object (``sampan.accounts.audit``). Append-only.

    ``action``: a dotted name (``member.set``, ``training.create``, ``deployment.create``, ...);
    ``project`` null for events of an account (its API tokens, its sign-ins) and a project's
    deletion; ``actor`` null for the system, for a failed sign-in (its target is the account)
    and once the user is deleted (``actor_name`` keeps the name); ``target_type`` /
    ``target_id`` name the object; ``details``: a small JSON object (what changed)."""

    id = models.BigAutoField(primary_key=True)
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)
    project = models.ForeignKey(Project, null=True, blank=True, on_delete=models.CASCADE,
                                related_name="audit_events")
    actor = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True,
                              on_delete=models.SET_NULL, related_name="+")
    actor_name = models.CharField(max_length=150, blank=True, default="")
    action = models.CharField(max_length=64)
    target_type = models.CharField(max_length=64, blank=True, default="")
    target_id = models.CharField(max_length=64, blank=True, default="")
    details = models.JSONField(default=dict, blank=True)

    class Meta:
        indexes = [models.Index(fields=["project", "-created_at"])]
