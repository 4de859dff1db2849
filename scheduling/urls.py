from django.urls import path

from scheduling import views, views_crawl

urlpatterns = [
    path("crawl-list/", views_crawl.crawl_list, name="crawl-list"),
    path("crawl-list/build/", views_crawl.crawl_list_create, name="crawl-list-create"),
    path("crawl-list/<int:pk>.csv", views_crawl.crawl_list_download_csv, name="crawl-list-csv"),
    path("crawl-list/<int:pk>.txt", views_crawl.crawl_list_download_urls, name="crawl-list-urls"),
    path("evaluation/", views.evaluation, name="evaluation"),
]
