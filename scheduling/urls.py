from django.urls import path

from scheduling import views

urlpatterns = [
    path("crawl-list/", views.crawl_list, name="crawl-list"),
    path("evaluation/", views.evaluation, name="evaluation"),
]
