from django.urls import path

from sampan.registry import apis, predict_apis

P = "projects/<uuid:project_id>/"
urlpatterns = [
    path(P + "models/", apis.ModelListApi.as_view(), name="models"),
    path(P + "model-versions/", apis.ModelVersionListApi.as_view(), name="model-versions"),
    path(P + "model-versions/<uuid:version_id>/", apis.ModelVersionDetailApi.as_view(),
         name="model-version"),
    path(P + "model-versions/<uuid:version_id>/package/", apis.ModelVersionPackageApi.as_view(),
         name="model-version-package"),
    path(P + "model-versions/<uuid:version_id>/offline-bundle/",
         apis.ModelVersionOfflineBundleApi.as_view(), name="model-version-offline-bundle"),
    path(P + "agent-wheelhouses/", apis.AgentWheelhouseListApi.as_view(),
         name="agent-wheelhouses"),
    path(P + "model-versions/<uuid:version_id>/predict/",
         predict_apis.ModelVersionPredictApi.as_view(), name="model-version-predict"),
    path(P + "model-versions/<uuid:version_id>/files/<str:name>",
         apis.ModelVersionFileApi.as_view(), name="model-version-file"),
]
