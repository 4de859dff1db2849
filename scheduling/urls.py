from django.urls import path

from scheduling import views_crawl, views_evaluation

urlpatterns = [
    path("crawl-list/", views_crawl.crawl_list, name="crawl-list"),
    path("crawl-list/build/", views_crawl.crawl_list_create, name="crawl-list-create"),
    path("crawl-list/<int:pk>.csv", views_crawl.crawl_list_download_csv, name="crawl-list-csv"),
    path("crawl-list/<int:pk>.txt", views_crawl.crawl_list_download_urls, name="crawl-list-urls"),
    path("evaluation/", views_evaluation.evaluation, name="evaluation"),
    path("evaluation/start/", views_evaluation.evaluation_start, name="evaluation-start"),
    path(
        "evaluation/<int:pk>/status.json",
        views_evaluation.evaluation_status,
        name="evaluation-status",
    ),
    path(
        "evaluation/<int:pk>/results.json",
        views_evaluation.evaluation_download_json,
        name="evaluation-json",
    ),
    path(
        "evaluation/<int:pk>/table.csv",
        views_evaluation.evaluation_download_table_csv,
        name="evaluation-table-csv",
    ),
]
