"""URL map: the user API (/api/v1/), the device API (/api/device/v1/), schema, docs, console."""

from django.contrib import admin
from django.urls import include, path, re_path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerView

from sampan.console import CONSOLE_PATH_PATTERN, console_index
from sampan.core.health import healthz, readyz
from sampan.fleet.urls import device_urlpatterns
from sampan.fleet.urls import urlpatterns as fleet_urlpatterns
from sampan.metrics import metrics_view


urlpatterns = [
    path("admin/", admin.site.urls),
    path("healthz", healthz),
    path("readyz", readyz),
    path("metrics", metrics_view),
    path("api/v1/", include("sampan.accounts.urls")),
    path("api/v1/", include("sampan.datasets.urls")),
    path("api/v1/", include("sampan.training.urls")),
    path("api/v1/", include("sampan.registry.urls")),
    path("api/v1/", include("sampan.compression.urls")),
    path("api/schema/", SpectacularAPIView.as_view(), name="schema"),
    path("api/docs/", SpectacularSwaggerView.as_view(url_name="schema"), name="docs"),
]

urlpatterns += [
    path("api/v1/", include(fleet_urlpatterns)),
    path("api/device/v1/", include((device_urlpatterns, "device"))),
]

# Last: every other path is a route of the browser console (sampan.console).
urlpatterns += [re_path(CONSOLE_PATH_PATTERN, console_index, name="console")]

# Under /api/ these answer the platform's JSON errors (sampan.core.error_views); HTML elsewhere.
handler400 = "sampan.core.error_views.bad_request"
handler403 = "sampan.core.error_views.permission_denied"
handler404 = "sampan.core.error_views.not_found"
handler500 = "sampan.core.error_views.server_error"
