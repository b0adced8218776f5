"""Accounts API: session login, the current user, API tokens, projects and members."""

from __future__ import annotations

from typing import Any

from django.contrib.auth import authenticate, login, logout
from django.middleware.csrf import get_token
from django.utils.decorators import method_decorator
from django.utils.translation import gettext as _
from django.views.decorators.csrf import ensure_csrf_cookie
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from drf_spectacular.utils import inline_serializer
from rest_framework import serializers, status
from rest_framework.permissions import AllowAny
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from sampan.accounts import lifecycle, login_limits, selectors, services
from sampan.accounts.audit import audit_list, audit_list_all, audit_list_personal
from sampan.accounts.models import ApiToken, Role
from sampan.core.apis import ARCHIVED_PARAMETER, ProjectApi, archived_filter
from sampan.core.errors import AuthenticationFailed, Forbidden, ValidationFailed
from sampan.core.origin import require_same_origin
from sampan.core.pagination import Pagination
from sampan.core.schema import ERROR
from sampan.core.validation import NameField, TextField


class UserSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    username = serializers.CharField()
    email = serializers.CharField()
    is_staff = serializers.BooleanField(help_text="Staff may create users (POST /users/).")


class LoginInput(serializers.Serializer):
    username = serializers.CharField()
    password = serializers.CharField(style={"input_type": "password"})


@method_decorator(ensure_csrf_cookie, name="dispatch")
class CsrfApi(APIView):
    """Sets the ``csrftoken`` cookie for a browser that has none yet (the console's sign-in page).

    A session-authenticated write must send the cookie's value back in the ``X-CSRFToken`` header.
    """

    permission_classes = [AllowAny]
    authentication_classes: list[type] = []

    @extend_schema(responses=inline_serializer("CsrfOutput", {
        "csrf_token": serializers.CharField(help_text="Also set as the csrftoken cookie.")}),
        operation_id="auth_csrf")
    def get(self, request: Request) -> Response:
        return Response({"csrf_token": get_token(request._request)})


class LoginApi(APIView):
    permission_classes = [AllowAny]
    authentication_classes: list[type] = []

    @extend_schema(request=LoginInput, responses=UserSerializer, operation_id="auth_login")
    def post(self, request: Request) -> Response:
        # login CSRF: no session to carry a CSRF token yet, so the Origin decides
        require_same_origin(request._request, _("signing in"))
        data = LoginInput(data=request.data)
        data.is_valid(raise_exception=True)
        username, address = data.validated_data["username"], login_limits.client_address(request)
        login_limits.check(username, address)
        user = authenticate(request, **data.validated_data)
        if user is None:
            login_limits.failed(username, address)
            services.login_failed_record(username=username, address=address)
            raise AuthenticationFailed(_("wrong username or password"))
        login_limits.succeeded(username, address)
        login(request._request, user)
        services.login_succeeded_record(user=user, address=address)
        get_token(request._request)
        return Response(UserSerializer(user).data)


class LogoutApi(APIView):
    @extend_schema(request=None, responses={204: None}, operation_id="auth_logout")
    def post(self, request: Request) -> Response:
        logout(request._request)
        return Response(status=status.HTTP_204_NO_CONTENT)


class MeApi(APIView):
    @extend_schema(responses=UserSerializer, operation_id="auth_me")
    def get(self, request: Request) -> Response:
        return Response(UserSerializer(request.user).data)


class TokenInput(serializers.Serializer):
    name = NameField(max_length=100)
    expires_in_days = serializers.IntegerField(
        required=False, allow_null=True, default=services.DEFAULT_TOKEN_DAYS, min_value=1,
        max_value=services.MAX_TOKEN_DAYS,
        help_text=f"1 to {services.MAX_TOKEN_DAYS} days (default {services.DEFAULT_TOKEN_DAYS}); "
        "null: never expires. A request made with a token cannot ask for more than that "
        "token's own remaining life.")


class TokenOutput(serializers.Serializer):
    id = serializers.UUIDField(source="token.id")
    name = serializers.CharField(source="token.name")
    prefix = serializers.CharField(source="token.prefix")
    expires_at = serializers.DateTimeField(source="token.expires_at", allow_null=True)
    token = serializers.CharField(source="secret", help_text="Shown once; store it now.")


class TokenListOutput(serializers.Serializer):
    id = serializers.UUIDField()
    name = serializers.CharField()
    prefix = serializers.CharField(help_text="The first 12 characters of the secret.")
    created_at = serializers.DateTimeField()
    last_used_at = serializers.DateTimeField(allow_null=True)
    expires_at = serializers.DateTimeField(allow_null=True, help_text="null: never expires")


class ApiTokenCreateApi(APIView):
    @extend_schema(responses=TokenListOutput(many=True), operation_id="tokens_list")
    def get(self, request: Request) -> Response:
        """The caller's API tokens that are not revoked, newest first, with their last use."""
        return Response(TokenListOutput(services.api_token_list(user=request.user),
                                        many=True).data)

    @extend_schema(request=TokenInput, responses={201: TokenOutput}, operation_id="tokens_create")
    def post(self, request: Request) -> Response:
        data = TokenInput(data=request.data)
        data.is_valid(raise_exception=True)
        minted_by = request.auth if isinstance(request.auth, ApiToken) else None
        issued = services.api_token_create(user=request.user, minted_by=minted_by,
                                           **data.validated_data)
        return Response(TokenOutput(issued).data, status=status.HTTP_201_CREATED)


class ApiTokenDetailApi(APIView):
    @extend_schema(request=None, responses={204: None}, operation_id="tokens_revoke")
    def delete(self, request: Request, token_id: str) -> Response:
        """Revoke one of the caller's tokens: refused from now on (404 for another's)."""
        services.api_token_revoke(user=request.user, token_id=token_id)
        return Response(status=status.HTTP_204_NO_CONTENT)


class ProjectSerializer(serializers.Serializer):
    id = serializers.UUIDField()
    name = serializers.CharField()
    description = serializers.CharField()
    created_at = serializers.DateTimeField()
    archived = serializers.BooleanField(
        help_text="Archived: hidden from the default list, refuses new work (409 archived).")
    archived_at = serializers.DateTimeField(allow_null=True)
    role = serializers.ChoiceField(
        choices=Role.choices,
        help_text="The caller's role in the project: viewers read, editors also write, "
                  "owners also manage members, rename, archive and delete it.")


class ProjectInput(serializers.Serializer):
    name = NameField(max_length=200)
    description = TextField(required=False, allow_blank=True, default="")


class ProjectUpdateInput(serializers.Serializer):
    name = NameField(max_length=200, required=False)
    description = TextField(required=False, allow_blank=True)
    archived = serializers.BooleanField(required=False, help_text="true: archive; false: "
                                        "unarchive.")


class ProjectListApi(APIView):
    @extend_schema(parameters=[ARCHIVED_PARAMETER], responses=ProjectSerializer(many=True),
                   operation_id="projects_list")
    def get(self, request: Request) -> Response:
        projects = selectors.project_list(user=request.user, archived=archived_filter(request))
        return Response(ProjectSerializer(projects, many=True).data)

    @extend_schema(request=ProjectInput, responses={201: ProjectSerializer},
                   operation_id="projects_create")
    def post(self, request: Request) -> Response:
        data = ProjectInput(data=request.data)
        data.is_valid(raise_exception=True)
        project = services.project_create(user=request.user, **data.validated_data)
        project.role = Role.OWNER
        return Response(ProjectSerializer(project).data, status=status.HTTP_201_CREATED)


class ProjectDetailApi(ProjectApi):
    """A project; renaming, archiving and deleting it need the owner role."""

    write_role = Role.OWNER

    @extend_schema(responses=ProjectSerializer, operation_id="projects_retrieve")
    def get(self, request: Request, project_id: str) -> Response:
        project = selectors.project_list(user=request.user).get(pk=self.get_project(request).pk)
        return Response(ProjectSerializer(project).data)

    @extend_schema(request=ProjectUpdateInput, responses=ProjectSerializer,
                   operation_id="projects_update")
    def patch(self, request: Request, project_id: str) -> Response:
        """Rename, describe, archive or unarchive (fields left out stay as they are)."""
        project = self.get_project(request)
        data = ProjectUpdateInput(data=request.data)
        data.is_valid(raise_exception=True)
        lifecycle.project_update(project=project, actor=request.user, **data.validated_data)
        project = selectors.project_list(user=request.user).get(pk=project.pk)
        return Response(ProjectSerializer(project).data)

    @extend_schema(request=None, responses={204: None}, operation_id="projects_delete")
    def delete(self, request: Request, project_id: str) -> Response:
        """Delete the project, everything in it and its files. 409 ``delete_blocked`` (with
        ``details.blockers``) while a device runs one of its models or a job of it runs."""
        lifecycle.project_delete(project=self.get_project(request), actor=request.user)
        return Response(status=status.HTTP_204_NO_CONTENT)


class MembershipSerializer(serializers.Serializer):
    id = serializers.UUIDField()
    username = serializers.CharField(source="user.username")
    role = serializers.ChoiceField(choices=Role.choices)


class MembershipInput(serializers.Serializer):
    username = serializers.CharField(required=False, allow_blank=True, default="",
                                     help_text="The user to add or change; or give email.")
    email = serializers.CharField(required=False, allow_blank=True, default="",
                                  help_text="Invite the user whose e-mail address this is "
                                  "(case-insensitive) instead of naming the username.")
    role = serializers.ChoiceField(choices=Role.choices)

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        if bool(attrs["username"].strip()) == bool(attrs["email"].strip()):
            raise ValidationFailed(_("give either a username or an e-mail address"),
                                   field="username")
        return attrs


class MembershipListApi(ProjectApi):
    write_role = Role.OWNER

    @extend_schema(responses=MembershipSerializer(many=True), operation_id="members_list")
    def get(self, request: Request, project_id: str) -> Response:
        project = self.get_project(request)
        return Response(MembershipSerializer(selectors.membership_list(project=project),
                                             many=True).data)

    @extend_schema(request=MembershipInput, responses=MembershipSerializer,
                   operation_id="members_set")
    def post(self, request: Request, project_id: str) -> Response:
        project = self.get_project(request)
        data = MembershipInput(data=request.data)
        data.is_valid(raise_exception=True)
        membership = services.membership_set(project=project, actor=request.user,
                                             **data.validated_data)
        return Response(MembershipSerializer(membership).data)


class MembershipDetailApi(ProjectApi):
    write_role = Role.OWNER

    @extend_schema(responses={204: None}, operation_id="members_delete")
    def delete(self, request: Request, project_id: str, membership_id: str) -> Response:
        services.membership_delete(project=self.get_project(request), membership_id=membership_id,
                                   actor=request.user)
        return Response(status=status.HTTP_204_NO_CONTENT)


class AuditEventOutput(serializers.Serializer):
    id = serializers.IntegerField()
    created_at = serializers.DateTimeField()
    actor = serializers.CharField(source="actor_name", help_text="username; empty: the system")
    action = serializers.CharField(help_text="project.create, project.update, project.archive, "
                                   "project.unarchive, dataset.update, dataset.archive, "
                                   "dataset.unarchive, dataset.delete, member.set, member.remove, "
                                   "training.create, compression.create, deployment.create, "
                                   "rollout.create, rollout.rollback, device.update, "
                                   "device.re_enroll, enrollment_token.create, "
                                   "alert_rule.delete; of no project: token.create, "
                                   "token.revoke, login.succeeded, login.failed, user.create, "
                                   "project.delete")
    target_type = serializers.CharField()
    target_id = serializers.CharField()
    details = serializers.JSONField()


class ProjectAuditApi(ProjectApi):
    """The project's audit log, newest first: owners only."""

    read_role = Role.OWNER
    pagination_class = Pagination

    @extend_schema(responses=AuditEventOutput(many=True), operation_id="projects_audit",
                   parameters=[OpenApiParameter(
                       "action", str, required=False,
                       description="Only events of this action (member.set), or of every "
                       "action of a kind when it ends with a dot (member.).")])
    def get(self, request: Request, project_id: str) -> Response:
        return self.paginate(request, audit_list(project=self.get_project(request),
                                                 action=request.query_params.get("action")),
                             AuditEventOutput)


class AuditActionInput(serializers.Serializer):
    action = serializers.CharField(
        required=False, allow_blank=True, max_length=64,
        help_text="Only events of this action (token.create), or of every action of a kind "
        "when it ends with a dot (token.).")


class AuditFilterInput(AuditActionInput):
    project = serializers.UUIDField(required=False, help_text="Only this project's events.")
    actor = serializers.CharField(required=False, allow_blank=True, max_length=150,
                                  help_text="Only the events done by the user of this "
                                  "username.")


_AUDIT_ERRORS = {
    401: OpenApiResponse(ERROR, description="Not signed in: no session or Bearer token, or a "
                         "wrong one."),
    404: OpenApiResponse(ERROR, description="No such page: `page` is past the last one."),
}


def _audit_page(view: APIView, request: Request, events: Any) -> Response:
    paginator = Pagination()
    page = paginator.paginate_queryset(events, request, view=view)
    return paginator.get_paginated_response(AuditEventOutput(page, many=True).data)


class MyAuditApi(APIView):
    """The caller's own events of no project, newest first: API tokens created and revoked,
    sign-ins (and failed tries of the password), user accounts created, projects deleted."""

    pagination_class = Pagination

    @extend_schema(parameters=[AuditActionInput], operation_id="auth_me_audit",
                   responses={200: AuditEventOutput(many=True), **_AUDIT_ERRORS})
    def get(self, request: Request) -> Response:
        data = AuditActionInput(data=request.query_params)
        data.is_valid(raise_exception=True)
        return _audit_page(self, request, audit_list_personal(
            user=request.user, action=data.validated_data.get("action")))


class AuditListApi(APIView):
    """Every event of every project and account, newest first: staff only."""

    pagination_class = Pagination

    @extend_schema(parameters=[AuditFilterInput], operation_id="audit_list",
                   responses={200: AuditEventOutput(many=True), **_AUDIT_ERRORS,
                              403: OpenApiResponse(ERROR, description="Not a staff account "
                                                   "(your own events: GET /api/v1/auth/me/"
                                                   "audit/; a project's: its owners).")})
    def get(self, request: Request) -> Response:
        if not request.user.is_staff:
            raise Forbidden(_("the whole audit log is for staff; your own events are at "
                              "/api/v1/auth/me/audit/, a project's for its owners"))
        data = AuditFilterInput(data=request.query_params)
        data.is_valid(raise_exception=True)
        return _audit_page(self, request, audit_list_all(
            action=data.validated_data.get("action"),
            project_id=data.validated_data.get("project"),
            actor=data.validated_data.get("actor")))
