from django.urls import path

from sampan.compression import apis

P = "projects/<uuid:project_id>/"
urlpatterns = [
    path(P + "compression-jobs/", apis.CompressionJobListApi.as_view(),
         name="compression-jobs"),
    path(P + "compression-jobs/<uuid:job_id>/", apis.CompressionJobDetailApi.as_view(),
         name="compression-job"),
    path(P + "compression-jobs/<uuid:job_id>/cancel/", apis.CompressionJobCancelApi.as_view(),
         name="compression-job-cancel"),
]
