from django.urls import path

from archive import views, views_upload

urlpatterns = [
    path("", views.site_list, name="site-list"),
    path("<int:pk>/", views.site_detail, name="site-detail"),
    # Upload routes (archive/views_upload.py):
    path("upload/", views_upload.upload_seeds, name="upload-seeds"),
]
