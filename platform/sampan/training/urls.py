from django.urls import path

from sampan.training import apis

P = "projects/<uuid:project_id>/"
urlpatterns = [
    path(P + "training-jobs/", apis.TrainingJobListApi.as_view(), name="training-jobs"),
    path(P + "training-jobs/<uuid:job_id>/", apis.TrainingJobDetailApi.as_view(),
         name="training-job"),
    path(P + "training-jobs/<uuid:job_id>/cancel/", apis.TrainingJobCancelApi.as_view(),
         name="training-job-cancel"),
    path(P + "training-jobs/<uuid:job_id>/report/", apis.EvaluationReportApi.as_view(),
         name="training-job-report"),
]
