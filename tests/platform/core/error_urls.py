"""The platform's URL map plus views that fail on purpose (tests of sampan.core.error_views)."""

from django.core.exceptions import PermissionDenied
from django.urls import path
from rest_framework.permissions import AllowAny
from rest_framework.views import APIView

from sampan.urls import handler400, handler403, handler404, handler500  # noqa: F401
from sampan.urls import urlpatterns as platform_urlpatterns


def plain_view_that_fails(request):  # type: ignore[no-untyped-def]
    raise RuntimeError("boom in a plain view")


def plain_view_that_refuses(request):  # type: ignore[no-untyped-def]
    raise PermissionDenied("not for you")


class ApiViewThatFails(APIView):
    permission_classes = [AllowAny]
    authentication_classes: list[type] = []

    def get(self, request):  # type: ignore[no-untyped-def]
        raise KeyError("boom in a DRF view")


urlpatterns = [
    path("api/v1/test-fail/plain/", plain_view_that_fails),
    path("api/v1/test-fail/refuse/", plain_view_that_refuses),
    path("api/v1/test-fail/drf/", ApiViewThatFails.as_view()),
    path("console-fail/", plain_view_that_fails),
    *platform_urlpatterns,
]
