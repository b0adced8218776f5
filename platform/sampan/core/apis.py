"""Shared pieces of API views: the project-scoped base view, the answer of a job create."""

from __future__ import annotations

from typing import Any

from django.utils.translation import gettext as _
from drf_spectacular.utils import OpenApiParameter
from rest_framework import status
from rest_framework.permissions import BasePermission, IsAuthenticated
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from sampan.accounts.models import Project, Role
from sampan.core.errors import ValidationFailed
from sampan.core.idempotency import REPLAYED_HEADER

SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})


class ProjectRolePermission(BasePermission):
    """The caller's role in the URL's project, checked by DRF before any handler runs: a view
    that forgets to call :meth:`ProjectApi.get_project` still cannot serve a non-member (404) or
    a role too low for the method (403). Authorization by construction, not by each view's
    memory (tests/platform/core/test_authorization.py checks every project route)."""

    def has_permission(self, request: Request, view: Any) -> bool:
        view.get_project(request)  # raises NotFound or Forbidden
        return True


class ProjectApi(APIView):
    """A view under ``/api/v1/projects/<project_id>/``.

    Reading needs the viewer role, writing the editor role (``write_role``), unless a view says
    otherwise; a handler may ask for more (``get_project(request, role=...)``). Non-members get
    404: another project's objects are invisible. :class:`ProjectRolePermission` checks the
    method's role before the handler runs.
    """

    read_role: str = Role.VIEWER
    write_role: str = Role.EDITOR
    permission_classes = [IsAuthenticated, ProjectRolePermission]

    def get_project(self, request: Request, role: str | None = None) -> Project:
        from sampan.accounts.selectors import project_get_for

        needed = role or (self.read_role if request.method in SAFE_METHODS else self.write_role)
        cache: dict[str, Project] = self.__dict__.setdefault("_projects", {})
        if needed not in cache:  # the permission and the handler ask once between them
            cache[needed] = project_get_for(user=request.user,
                                            project_id=self.kwargs["project_id"], role=needed)
        return cache[needed]

    # A view that pages its list sets this; drf-spectacular reads it, so the OpenAPI schema
    # describes the ``{count, next, previous, results}`` envelope that ``paginate`` returns.
    pagination_class: type | None = None

    def paginate(self, request: Request, queryset: Any, serializer_class: Any) -> Any:
        if self.pagination_class is None:
            raise TypeError(f"{type(self).__name__} pages its list: set pagination_class")
        paginator = self.pagination_class()
        page = paginator.paginate_queryset(queryset, request, view=self)
        return paginator.get_paginated_response(serializer_class(page, many=True).data)


#: the ``Idempotency-Key`` request header of the creates that start a job, for the schema
IDEMPOTENCY_KEY_PARAMETER = OpenApiParameter(
    name="Idempotency-Key", location=OpenApiParameter.HEADER, required=False, type=str,
    description="Chosen by the client (a UUID), 1-128 visible ASCII characters. A retry with "
    "the same key answers the job the first request made (200, `Idempotent-Replayed: true`) "
    "instead of starting another; the same key with a different body answers 422 "
    "`idempotency_key_reused`.")


def created_or_replayed(data: Any, created: bool) -> Response:
    """201 for a new job; 200 with ``Idempotent-Replayed: true`` for the job an earlier request
    with the same ``Idempotency-Key`` made (``sampan.core.idempotency``)."""
    if created:
        return Response(data, status=status.HTTP_201_CREATED)
    return Response(data, status=status.HTTP_200_OK, headers={REPLAYED_HEADER: "true"})


#: the ``archived`` query parameter of the project and dataset lists, for the schema
ARCHIVED_PARAMETER = OpenApiParameter(
    name="archived", location=OpenApiParameter.QUERY, required=False, type=str,
    enum=["false", "true", "all"],
    description="false (the default): the active ones; true: the archived ones only; all: both.")


def archived_filter(request: Request) -> bool | None:
    """The list's ``?archived=`` choice: False (active only, the default), True (archived only)
    or None (all). Raises ValidationFailed (field ``archived``) for another value."""
    value = request.query_params.get("archived", "false").strip().lower()
    choices: dict[str, bool | None] = {"false": False, "true": True, "all": None}
    if value not in choices:
        raise ValidationFailed(_("archived must be one of false, true, all; got %(value)r")
                               % {"value": value}, field="archived")
    return choices[value]
