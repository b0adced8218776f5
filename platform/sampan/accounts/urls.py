from django.urls import path

from sampan.accounts import apis, user_apis

urlpatterns = [
    path("auth/csrf/", apis.CsrfApi.as_view(), name="auth-csrf"),
    path("auth/login/", apis.LoginApi.as_view(), name="auth-login"),
    path("auth/logout/", apis.LogoutApi.as_view(), name="auth-logout"),
    path("auth/me/", apis.MeApi.as_view(), name="auth-me"),
    path("auth/me/audit/", apis.MyAuditApi.as_view(), name="auth-me-audit"),
    path("auth/tokens/", apis.ApiTokenCreateApi.as_view(), name="auth-tokens"),
    path("auth/tokens/<uuid:token_id>/", apis.ApiTokenDetailApi.as_view(), name="auth-token"),
    path("users/", user_apis.UserCreateApi.as_view(), name="users"),
    path("audit/", apis.AuditListApi.as_view(), name="audit-all"),
    path("projects/", apis.ProjectListApi.as_view(), name="projects"),
    path("projects/<uuid:project_id>/", apis.ProjectDetailApi.as_view(), name="project"),
    path("projects/<uuid:project_id>/members/", apis.MembershipListApi.as_view(), name="members"),
    path("projects/<uuid:project_id>/audit/", apis.ProjectAuditApi.as_view(), name="audit"),
    path("projects/<uuid:project_id>/members/<uuid:membership_id>/",
         apis.MembershipDetailApi.as_view(), name="member"),
]
