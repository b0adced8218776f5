"""Writes for accounts: projects, memberships, API tokens."""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from typing import Any

from django.contrib.auth import get_user_model
from django.db import transaction

from sampan.accounts.models import ApiToken, Membership, Project, Role
from sampan.core.errors import Conflict, NotFound, ValidationFailed
from sampan.core.validation import validated_name, validated_text


@transaction.atomic
def project_create(*, user: Any, name: str, description: str = "") -> Project:
    """Create a project with ``user`` as its owner.

    Raises ValidationFailed when ``name`` or ``description`` break the rule of
    ``sampan.core.names`` (field ``name`` / ``description``).
    """
    project = Project.objects.create(name=validated_name(name, field="name"),
                                     description=validated_text(description, field="description"),
                                     created_by=user)
    Membership.objects.create(project=project, user=user, role=Role.OWNER)
    return project


@transaction.atomic
def membership_set(*, project: Project, username: str, role: str) -> Membership:
    """Add ``username`` to the project with ``role`` or change their role.

    Raises NotFound if no such user, Conflict if it would leave the project without an owner.
    """
    user = get_user_model().objects.filter(username=username).first()
    if user is None:
        raise NotFound(f"no user named {username!r}", field="username")
    if role not in Role.values:
        raise ValidationFailed(f"role must be one of {', '.join(Role.values)}", field="role")
    _lock_memberships(project)
    membership = Membership.objects.select_for_update().filter(project=project, user=user).first()
    if membership and membership.role == Role.OWNER and role != Role.OWNER:
        _ensure_other_owner(project, user)
    if membership is None:
        return Membership.objects.create(project=project, user=user, role=role)
    membership.role = role
    membership.save(update_fields=["role", "updated_at"])
    return membership


@transaction.atomic
def membership_delete(*, project: Project, membership_id: Any) -> None:
    _lock_memberships(project)
    membership = Membership.objects.filter(project=project, pk=membership_id).first()
    if membership is None:
        raise NotFound("membership not found")
    if membership.role == Role.OWNER:
        _ensure_other_owner(project, membership.user)
    membership.delete()


def _lock_memberships(project: Project) -> None:
    """Serialise membership changes of one project: lock its row until the transaction ends.
    Two owners demoting each other at once otherwise each saw the other still an owner and both
    succeeded, leaving no owner (PostgreSQL, READ COMMITTED); SQLite serialises writers anyway."""
    Project.objects.select_for_update().filter(pk=project.pk).first()


def _ensure_other_owner(project: Project, user: Any) -> None:
    if not project.memberships.filter(role=Role.OWNER).exclude(user=user).exists():
        raise Conflict("a project needs at least one owner", field="role")


@dataclass(frozen=True)
class IssuedToken:
    token: ApiToken
    secret: str


def api_token_create(*, user: Any, name: str) -> IssuedToken:
    """Create a personal API token; the secret is returned once and never stored.

    Raises ValidationFailed (field ``name``) for a name the rule of ``sampan.core.names`` refuses.
    """
    name = validated_name(name, field="name", max_length=100)
    secret = "spn_" + secrets.token_urlsafe(32)
    token = ApiToken.objects.create(user=user, name=name, prefix=secret[:12],
                                    token_sha256=ApiToken.digest(secret))
    return IssuedToken(token=token, secret=secret)


def user_create(*, username: str, password: str, email: str = "") -> Any:
    User = get_user_model()
    if User.objects.filter(username=username).exists():
        raise Conflict(f"user {username!r} exists", field="username")
    return User.objects.create_user(username=username, password=password, email=email)
