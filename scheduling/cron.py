"""Periodic jobs, for ``manage.py rqcron scheduling.cron`` (the run command starts it).

The daily crawl list is built at ``HACS_DAILY_CRAWL_LIST_CRON`` (UTC; default 05:00 every day),
so that each morning's list is waiting when librarians arrive.
"""

from django.conf import settings
from rq import cron

from scheduling.crawl_jobs import daily_crawl_list

cron.register(
    daily_crawl_list,
    queue_name="estimation",
    cron=settings.HACS_DAILY_CRAWL_LIST_CRON,
    name="daily-crawl-list",
)
