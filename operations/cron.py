"""Periodic jobs, for ``manage.py rqcron operations.cron`` (the run command starts it).

* The daily crawl list at ``HACS_DAILY_CRAWL_LIST_CRON`` (UTC; default 05:00 every day), so that
  each morning's list is waiting when librarians arrive.
* The retry pass for failed memento fetches at ``HACS_FETCH_RETRY_CRON`` (default 04:00), before
  the list, so that the list sees what the retry found.
"""

from django.conf import settings
from rq import cron

from operations.jobs import daily_fetch_retry
from scheduling.jobs import daily_crawl_list

cron.register(
    daily_crawl_list,
    queue_name="estimation",
    cron=settings.HACS_DAILY_CRAWL_LIST_CRON,
    name="daily-crawl-list",
)
cron.register(
    daily_fetch_retry,
    queue_name="import",
    cron=settings.HACS_FETCH_RETRY_CRON,
    name="fetch-retry",
)
