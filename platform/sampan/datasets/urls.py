from django.urls import path

from sampan.datasets import apis

P = "projects/<uuid:project_id>/"
urlpatterns = [
    path(P + "datasets/", apis.DatasetListApi.as_view(), name="datasets"),
    path(P + "datasets/<uuid:dataset_id>/", apis.DatasetDetailApi.as_view(), name="dataset"),
    path(P + "datasets/<uuid:dataset_id>/class-labels/", apis.ClassLabelListApi.as_view(),
         name="class-labels"),
    path(P + "datasets/<uuid:dataset_id>/class-labels/hotkeys/",
         apis.ClassLabelHotkeysApi.as_view(), name="class-label-hotkeys"),
    path(P + "datasets/<uuid:dataset_id>/imports/", apis.ImportCreateApi.as_view(),
         name="imports"),
    path(P + "datasets/<uuid:dataset_id>/samples/", apis.SampleListApi.as_view(), name="samples"),
    path(P + "datasets/<uuid:dataset_id>/labels/bulk/", apis.BulkLabelApi.as_view(),
         name="labels-bulk"),
    path(P + "datasets/<uuid:dataset_id>/versions/", apis.DatasetVersionListApi.as_view(),
         name="dataset-versions"),
    path(P + "imports/<uuid:job_id>/", apis.ImportDetailApi.as_view(), name="import"),
    path(P + "samples/<uuid:sample_id>/", apis.SampleDetailApi.as_view(), name="sample"),
    path(P + "samples/<uuid:sample_id>/image/", apis.SampleImageApi.as_view(),
         name="sample-image"),
    path(P + "samples/<uuid:sample_id>/label/", apis.SampleLabelApi.as_view(),
         name="sample-label"),
    path(P + "samples/<uuid:sample_id>/boxes/", apis.SampleBoxesApi.as_view(),
         name="sample-boxes"),
    path(P + "dataset-versions/<uuid:version_id>/", apis.DatasetVersionDetailApi.as_view(),
         name="dataset-version"),
    path(P + "dataset-versions/<uuid:version_id>/items/", apis.DatasetVersionItemsApi.as_view(),
         name="dataset-version-items"),
    path(P + "dataset-versions/<uuid:version_id>/export/", apis.DatasetVersionExportApi.as_view(),
         name="dataset-version-export"),
]
