from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.contrib.auth.decorators import login_not_required
from django.templatetags.static import static
from django.urls import include, path
from django.utils.functional import lazy
from django.views.generic import RedirectView

handler403 = "dashboard.views.errors.permission_denied"

urlpatterns = [
    path("", include("dashboard.urls")),
    path("accounts/login/", auth_views.LoginView.as_view(), name="login"),
    path("accounts/logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("admin/", admin.site.urls),
    path("django-rq/", include("django_rq.urls")),
    path(
        "favicon.ico",
        login_not_required(RedirectView.as_view(url=lazy(static, str)("favicon.svg"))),
        name="favicon",
    ),
]
