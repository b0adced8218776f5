"""The platform's URL map plus a project view that forgets its role check on purpose (tests
of sampan.core.apis.ProjectRolePermission)."""

from django.urls import path
from rest_framework.request import Request
from rest_framework.response import Response

from sampan.core.apis import ProjectApi
from sampan.urls import urlpatterns as platform_urlpatterns


class ForgetfulApi(ProjectApi):
    """Never calls get_project: the permission must refuse for it."""

    def get(self, request: Request, project_id: str) -> Response:
        return Response({"secret": "project data"})

    def post(self, request: Request, project_id: str) -> Response:
        return Response({"written": True})


urlpatterns = [
    path("api/v1/projects/<uuid:project_id>/forgetful/", ForgetfulApi.as_view()),
    *platform_urlpatterns,
]
