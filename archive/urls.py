from django.urls import path

from archive import views

urlpatterns = [
    path("", views.site_list, name="site-list"),
    path("upload/", views.upload_seeds, name="upload-seeds"),
    path("<int:pk>/", views.site_detail, name="site-detail"),
]
