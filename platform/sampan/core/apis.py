"""Shared pieces of API views: the project-scoped base view."""

from __future__ import annotations

from typing import Any

from rest_framework.request import Request
from rest_framework.views import APIView

from sampan.accounts.models import Project, Role

SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})


class ProjectApi(APIView):
    """A view under ``/api/v1/projects/<project_id>/``.

    Reading needs the viewer role, writing the editor role (``write_role``), unless a view says
    otherwise. Non-members get 404: another project's objects are invisible.
    """

    read_role: str = Role.VIEWER
    write_role: str = Role.EDITOR

    def get_project(self, request: Request, role: str | None = None) -> Project:
        from sampan.accounts.selectors import project_get_for

        needed = role or (self.read_role if request.method in SAFE_METHODS else self.write_role)
        return project_get_for(user=request.user, project_id=self.kwargs["project_id"], role=needed)

    # A view that pages its list sets this; drf-spectacular reads it, so the OpenAPI schema
    # describes the ``{count, next, previous, results}`` envelope that ``paginate`` returns.
    pagination_class: type | None = None

    def paginate(self, request: Request, queryset: Any, serializer_class: Any) -> Any:
        if self.pagination_class is None:
            raise TypeError(f"{type(self).__name__} pages its list: set pagination_class")
        paginator = self.pagination_class()
        page = paginator.paginate_queryset(queryset, request, view=self)
        return paginator.get_paginated_response(serializer_class(page, many=True).data)
