"""Every page of HACS, by URL."""

from django.urls import path

from dashboard.views import (
    crawl_lists,
    crawl_upload,
    evaluation,
    feeds,
    handoff,
    home,
    jobs,
    site_manage,
    sites,
    upload,
)
from dashboard.views.demo_archive import replay as demo_archive_replay

urlpatterns = [
    path("", home.home, name="home"),
    path("demo-archive/<str:timestamp>/<path:url>", demo_archive_replay, name="demo-archive"),
    path("jobs/", jobs.job_list, name="jobs"),
    path("jobs/status.json", jobs.job_status, name="job-status"),
    path("jobs/health/", jobs.health_job, name="job-health"),
    path("jobs/retry/", jobs.job_retry, name="job-retry"),
    path("sites/", sites.site_list, name="site-list"),
    path("sites/<int:pk>/", sites.site_detail, name="site-detail"),
    path("sites/<int:pk>/move/", sites.site_move_view, name="site-move"),
    path("sites/<int:pk>/retry/", site_manage.site_retry, name="site-retry"),
    path("sites/<int:pk>/pause/", site_manage.site_pause_view, name="site-pause"),
    path("sites/<int:pk>/tags/", site_manage.site_tags_view, name="site-tags"),
    path("sites/<int:pk>/remove/", site_manage.site_remove_view, name="site-remove"),
    path("sites.csv", sites.site_list_csv, name="site-list-csv"),
    path("sites/upload/", upload.upload_seeds, name="upload-seeds"),
    path("sites/upload/crawl/", crawl_upload.upload_crawl, name="upload-crawl"),
    path("crawl-list/", crawl_lists.crawl_list, name="crawl-list"),
    path("crawl-list/build/", crawl_lists.crawl_list_create, name="crawl-list-create"),
    path("crawl-list/<int:pk>.csv", crawl_lists.crawl_list_download_csv, name="crawl-list-csv"),
    path("crawl-list/<int:pk>.txt", crawl_lists.crawl_list_download_urls, name="crawl-list-urls"),
    path("crawl-list/hand-off/<int:pk>/", handoff.hand_off_now, name="hand-off-now"),
    path("evaluation/", evaluation.evaluation, name="evaluation"),
    path("evaluation/start/", evaluation.evaluation_start, name="evaluation-start"),
    path("evaluation/learn/", evaluation.learning_start, name="learning-start"),
    path("evaluation/<int:pk>/status.json", evaluation.evaluation_status, name="evaluation-status"),
    path(
        "evaluation/<int:pk>/results.json",
        evaluation.evaluation_download_json,
        name="evaluation-json",
    ),
    path(
        "evaluation/<int:pk>/table.csv",
        evaluation.evaluation_download_table_csv,
        name="evaluation-table-csv",
    ),
    path("feeds/", feeds.feed_page, name="feeds"),
    path("feeds/reset/", feeds.feed_reset, name="feed-reset"),
    # A feed reader's addresses: no login, the token stands for the user (dashboard.feeds).
    path("feeds/<str:token>/updates.atom", feeds.updates_feed, name="feed-updates"),
    path("feeds/<str:token>/tags/<int:tag_id>.atom", feeds.tag_feed, name="feed-tag"),
    path("feeds/<str:token>/list.atom", feeds.crawl_list_feed, name="feed-list"),
]
