"""Accounts API: user accounts made by staff (``POST /api/v1/users/``)."""

from __future__ import annotations

from django.utils.translation import gettext as _
from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from sampan.accounts.users import GENERATED_PASSWORD_CHARS, user_create_checked
from sampan.core.errors import Forbidden


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


class UserCreateOutput(serializers.Serializer):
    id = serializers.IntegerField(source="user.id")
    username = serializers.CharField(source="user.username")
    email = serializers.CharField(source="user.email")
    generated_password = serializers.CharField(
        allow_null=True, help_text="The generated password, shown once (hand it to the person; "
        "they sign in with it); null when the request gave the password.")


class UserCreateApi(APIView):
    """Create a user account: staff only (403 for anyone else, before any check of the input)."""

    @extend_schema(request=UserCreateInput, responses={201: UserCreateOutput},
                   operation_id="users_create")
    def post(self, request: Request) -> Response:
        if not request.user.is_staff:
            raise Forbidden(_("creating users needs a staff account"))
        data = UserCreateInput(data=request.data)
        data.is_valid(raise_exception=True)
        created = user_create_checked(actor=request.user, **data.validated_data)
        return Response(UserCreateOutput(created).data, status=status.HTTP_201_CREATED)
