from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import include, path

from dashboard import views as dashboard_views

urlpatterns = [
    path("", dashboard_views.home, name="home"),
    path("jobs/", dashboard_views.job_list, name="jobs"),
    path("jobs/status.json", dashboard_views.job_status, name="job-status"),
    path("jobs/health/", dashboard_views.health_job, name="job-health"),
    path("jobs/retry/", dashboard_views.job_retry, name="job-retry"),
    path("sites/", include("archive.urls")),
    path("", include("scheduling.urls")),
    path("accounts/login/", auth_views.LoginView.as_view(), name="login"),
    path("accounts/logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("admin/", admin.site.urls),
    path("django-rq/", include("django_rq.urls")),
]
