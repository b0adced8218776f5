"""Accounts API: user accounts made by staff, or by a project's owner into that project
(``POST /api/v1/users/``)."""

from __future__ import annotations

from typing import Any

from django.core.exceptions import ValidationError as DjangoValidationError
from django.db import transaction
from django.utils.translation import gettext as _
from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from sampan.accounts.models import Membership, Project, Role
from sampan.accounts.services import membership_set
from sampan.accounts.users import GENERATED_PASSWORD_CHARS, user_create_checked
from sampan.core.errors import Forbidden, ValidationFailed


class UserCreateInput(serializers.Serializer):
    username = serializers.CharField(max_length=150, help_text="Letters, digits and @.+-_")
    email = serializers.CharField(required=False, allow_blank=True, default="",
                                  help_text="Optional; unique among users (members are "
                                  "invited by it).")
    password = serializers.CharField(
        required=False, allow_blank=True, default="", trim_whitespace=False,
        style={"input_type": "password"},
        help_text="Must pass the server's password validators. Empty or absent: a one-time "
        f"password of {GENERATED_PASSWORD_CHARS} characters is generated and answered once.")
    project_id = serializers.UUIDField(
        required=False, allow_null=True, default=None,
        help_text="Add the new user to this project (with `role`) in the same step. Required "
                  "unless the caller is staff: a project's owner creates users only into a "
                  "project they own.")
    role = serializers.ChoiceField(choices=Role.choices, default=Role.EDITOR,
                                   help_text="The new user's role in `project_id`.")


class UserCreateOutput(serializers.Serializer):
    id = serializers.IntegerField(source="user.id")
    username = serializers.CharField(source="user.username")
    email = serializers.CharField(source="user.email")
    generated_password = serializers.CharField(
        allow_null=True, help_text="The generated password, shown once (hand it to the person; "
        "they sign in with it); null when the request gave the password.")


def _owns(user: Any, project_id: Any) -> bool:
    try:
        return Membership.objects.filter(user=user, project_id=project_id, role=Role.OWNER,
                                         project__archived_at__isnull=True).exists()
    except (TypeError, ValueError, DjangoValidationError):  # not a project id at all
        return False


class UserCreateApi(APIView):
    """Create a user account: staff, or the owner of the project named by ``project_id`` (the
    user is added to it in the same transaction). Anyone else gets the same 403 whatever the
    input (before any check of it), so nobody learns which usernames or projects exist. A
    project owner's request made with an API token that expires cannot create accounts: the new
    account's password would outlive the token (a 1-day token could leave a permanent way in;
    found by a reviewer, issue 12). Staff, who administer accounts anyway, may."""

    @extend_schema(request=UserCreateInput, responses={201: UserCreateOutput},
                   operation_id="users_create")
    def post(self, request: Request) -> Response:
        project_id = request.data.get("project_id") if hasattr(request.data, "get") else None
        if not (request.user.is_staff or (project_id and _owns(request.user, project_id))):
            raise Forbidden(_("creating users needs a staff account, or the owner's role in "
                              "the project the user is added to (project_id)"))
        token = request.auth
        if not request.user.is_staff and getattr(token, "expires_at", None) is not None:
            raise Forbidden(_("an API token that expires cannot create accounts (the account "
                              "would outlive it): sign in, or use a token without expiry"))
        data = UserCreateInput(data=request.data)
        data.is_valid(raise_exception=True)
        values = dict(data.validated_data)
        project_id, role = values.pop("project_id"), values.pop("role")
        project = None
        if project_id is not None:
            project = Project.objects.filter(pk=project_id).first()
            if project is None:  # only staff get here (an owner's project exists)
                raise ValidationFailed(_("no project %(id)s") % {"id": project_id},
                                       field="project_id")
        with transaction.atomic():
            created = user_create_checked(actor=request.user, **values)
            if project is not None:
                membership_set(project=project, role=role, username=created.user.username,
                               actor=request.user)
        return Response(UserCreateOutput(created).data, status=status.HTTP_201_CREATED)
