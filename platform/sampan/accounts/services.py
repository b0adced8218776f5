"""Writes for accounts: projects, memberships, API tokens, sign-ins recorded."""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from django.contrib.auth import get_user_model
from django.db import transaction
from django.utils import timezone
from django.utils.translation import gettext as _

from sampan.accounts.audit import audit_record
from sampan.accounts.models import ApiToken, Membership, Project, Role
from sampan.accounts.users import user_find
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
    audit_record(actor=user, action="project.create", project=project, target=project,
                 details={"name": project.name})
    return project


@transaction.atomic
def membership_set(*, project: Project, role: str, username: str = "", email: str = "",
                   actor: Any = None) -> Membership:
    """Add the user named ``username`` (or whose e-mail address is ``email``) to the project
    with ``role``, or change their role.

    Raises ValidationFailed (400, field ``username`` / ``email``) if there is no such user
    (``users.user_find``), Conflict if it would leave the project without an owner. Callers
    check that the actor is an owner *before* calling: only owners learn whether a user exists.
    """
    user = user_find(username=username, email=email)
    if role not in Role.values:
        raise ValidationFailed(_("role must be one of %(roles)s")
                               % {"roles": ", ".join(Role.values)}, field="role")
    _lock_memberships(project)
    membership = Membership.objects.select_for_update().filter(project=project, user=user).first()
    if membership and membership.role == Role.OWNER and role != Role.OWNER:
        _ensure_other_owner(project, user)
    details = {"username": user.username, "role": role,
               "previous_role": membership.role if membership else None}
    if membership is None:
        membership = Membership.objects.create(project=project, user=user, role=role)
    else:
        membership.role = role
        membership.save(update_fields=["role", "updated_at"])
    audit_record(actor=actor, action="member.set", project=project, target=membership,
                 details=details)
    return membership


@transaction.atomic
def membership_delete(*, project: Project, membership_id: Any, actor: Any = None) -> None:
    _lock_memberships(project)
    membership = Membership.objects.filter(project=project, pk=membership_id).first()
    if membership is None:
        raise NotFound(_("membership not found"))
    if membership.role == Role.OWNER:
        _ensure_other_owner(project, membership.user)
    audit_record(actor=actor, action="member.remove", project=project, target=membership,
                 details={"username": membership.user.username, "role": membership.role})
    membership.delete()


def _lock_memberships(project: Project) -> None:
    """Serialise membership changes of one project: lock its row until the transaction ends.
    Two owners demoting each other at once otherwise each saw the other still an owner and both
    succeeded, leaving no owner (PostgreSQL, READ COMMITTED); SQLite serialises writers anyway."""
    Project.objects.select_for_update().filter(pk=project.pk).first()


def _ensure_other_owner(project: Project, user: Any) -> None:
    if not project.memberships.filter(role=Role.OWNER).exclude(user=user).exists():
        raise Conflict(_("a project needs at least one owner"), field="role")


@dataclass(frozen=True)
class IssuedToken:
    token: ApiToken
    secret: str


#: the longest life a token may be given, days (and the default of the API and the console)
MAX_TOKEN_DAYS = 365
DEFAULT_TOKEN_DAYS = 90


def api_token_create(*, user: Any, name: str, expires_in_days: int | None = DEFAULT_TOKEN_DAYS,
                     minted_by: ApiToken | None = None) -> IssuedToken:
    """Create a personal API token; the secret is returned once and never stored.

    ``expires_in_days``: 1..``MAX_TOKEN_DAYS`` (None: never expires). ``minted_by``: the token
    the request came with, if any: the new token never outlives it (its expiry is capped at the
    minting token's; a token that never expires may mint any). Raises ValidationFailed (field
    ``name`` for a name the rule of ``sampan.core.names`` refuses, ``expires_in_days`` out of
    range or longer than the minting token's life).
    """
    name = validated_name(name, field="name", max_length=100)
    expires_at = None
    if expires_in_days is not None:
        if not 1 <= expires_in_days <= MAX_TOKEN_DAYS:
            raise ValidationFailed(_("expires_in_days must be from 1 to %(limit)d; got %(days)d")
                                   % {"limit": MAX_TOKEN_DAYS, "days": expires_in_days},
                                   field="expires_in_days")
        expires_at = timezone.now() + timedelta(days=expires_in_days)
    if minted_by is not None and minted_by.expires_at is not None and (
            expires_at is None or expires_at > minted_by.expires_at):
        raise ValidationFailed(
            _("a token cannot create a token that outlives it: this one expires at "
              "%(expires_at)s; ask for fewer days, or sign in to the console")
            % {"expires_at": minted_by.expires_at.isoformat(timespec="seconds")},
            field="expires_in_days")
    secret = "spn_" + secrets.token_urlsafe(32)
    token = ApiToken.objects.create(user=user, name=name, prefix=secret[:12],
                                    token_sha256=ApiToken.digest(secret), expires_at=expires_at)
    audit_record(actor=user, action="token.create", target=token,
                 details={"name": name, "prefix": token.prefix,
                          "expires_at": expires_at.isoformat() if expires_at else None})
    return IssuedToken(token=token, secret=secret)


def api_token_list(*, user: Any) -> Any:
    """The user's tokens that are not revoked, newest first (expired ones included, marked by
    their ``expires_at``)."""
    return ApiToken.objects.filter(user=user, revoked_at__isnull=True).order_by("-created_at")


def api_token_revoke(*, user: Any, token_id: Any) -> ApiToken:
    """Revoke one of the user's tokens (it is refused from now on). Raises NotFound for a token
    that is not the user's or is revoked already."""
    token = ApiToken.objects.filter(user=user, pk=token_id, revoked_at__isnull=True).first()
    if token is None:
        raise NotFound(_("no such API token of yours"))
    ApiToken.objects.filter(pk=token.pk).update(revoked_at=timezone.now())
    audit_record(actor=user, action="token.revoke", target=token,
                 details={"name": token.name, "prefix": token.prefix})
    token.refresh_from_db()
    return token


def login_succeeded_record(*, user: Any, address: str) -> None:
    """Record ``login.succeeded`` (a console sign-in with the password) in the user's own log,
    with the address it came from. Only the password's holder can add these."""
    audit_record(actor=user, action="login.succeeded", target=user,
                 details={"address": address[:64]})


def login_failed_record(*, username: str, address: str) -> None:
    """Record ``login.failed`` (a wrong password, or a refused account) in the log of the user
    named ``username``, with no actor (whoever tried is not known) and the address it came
    from. Nothing for a name no user has: no person to show it to, and nothing an attacker
    could fill the table with by inventing names. The writes are bounded by
    ``login_limits``: a username takes ``SAMPAN_LOGIN_MAX_FAILURES`` failures a window
    (wherever they come from) before every attempt is refused unrecorded, which also keeps the
    few samples too few to time this write against the hasher to learn whether a name
    exists."""
    User = get_user_model()
    try:  # as ModelBackend finds the user (the exact username)
        user = User._default_manager.get_by_natural_key(username)
    except User.DoesNotExist:
        return
    audit_record(actor=None, action="login.failed", target=user,
                 details={"address": address[:64]})


def user_create(*, username: str, password: str, email: str = "") -> Any:
    User = get_user_model()
    if User.objects.filter(username=username).exists():
        raise Conflict(_("user %(username)r exists") % {"username": username}, field="username")
    return User.objects.create_user(username=username, password=password, email=email)
