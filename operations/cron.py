"""Periodic jobs, for ``manage.py rqcron operations.cron`` (the run command starts it).

* The daily crawl list at ``HACS_DAILY_CRAWL_LIST_CRON`` (in ``TIME_ZONE``, default UTC;
  default 05:00 every day), so that each morning's list is waiting when librarians
  arrive, handed at once to every enabled hand-off at its level (``operations.daily``).
* Every ten minutes, the daily list's catch-up: when that hour passed today while HACS was down
  or not yet started, the list is built then (once a date, however many machines run workers).
* The nightly refresh from the configured archive at ``HACS_ARCHIVE_REFRESH_CRON`` (default
  03:00; "off" turns it off): an incremental import of every site holding captures from that
  archive, so that the morning's list counts the copies the archive made since the day before.
* The retry pass for failed memento fetches at ``HACS_FETCH_RETRY_CRON`` (default 04:00), before
  the list, so that the list sees what the retry found; with it, when no import is under way,
  the history pass for the contents of copies older than each site's window, which imports
  leave for later (``operations.jobs.enqueue_history_pass``).
* Every fifteen minutes (``HACS_CRAWL_READBACK_CRON``; "off" turns it off), the crawl read-back:
  what the library's crawlers fetched after a hand-off (Heritrix's WARC files, Browsertrix's
  WACZ files) and what was dropped into the crawl inbox, imported as observations
  (``operations.readback``).
* Every minute, the sweep that marks interrupted the jobs (and their sites) whose worker, Redis or
  terminal stopped (``operations.jobs.sweep_interrupted``), on the first queue every worker
  serves, so that it never waits behind an import.

Its jobs are stored as JSON, like every other job (``jobs.services.JobQueue``).
"""

from django.conf import settings
from rq import cron

from jobs.services import JobQueue
from operations.daily import daily_catch_up, daily_crawl_list_and_hand_offs
from operations.jobs import crawls_read_back, daily_fetch_retry, nightly_refresh, sweep_interrupted

# RQ 3.0's cron enqueues through a plain ``rq.Queue`` made inside ``CronJob.enqueue``, which takes
# no serializer and so pickles, and HACS's workers refuse pickles. Until RQ's cron takes one, it
# makes HACS's queues instead (tests/test_security_redis.py checks what it stores).
cron.Queue = JobQueue  # type: ignore[attr-defined, misc]

cron.register(sweep_interrupted, queue_name="default", interval=60, name="sweep-interrupted")
cron.register(
    daily_crawl_list_and_hand_offs,
    queue_name="estimation",
    cron=settings.HACS_DAILY_CRAWL_LIST_CRON,
    name="daily-crawl-list",
)
cron.register(daily_catch_up, queue_name="estimation", interval=600, name="daily-catch-up")
cron.register(
    daily_fetch_retry, queue_name="import", cron=settings.HACS_FETCH_RETRY_CRON, name="fetch-retry"
)
if settings.HACS_ARCHIVE_REFRESH_CRON != "off":
    cron.register(
        nightly_refresh,
        queue_name="import",
        cron=settings.HACS_ARCHIVE_REFRESH_CRON,
        name="archive-refresh",
    )
if settings.HACS_CRAWL_READBACK_CRON != "off":
    cron.register(
        crawls_read_back,
        queue_name="import",
        cron=settings.HACS_CRAWL_READBACK_CRON,
        name="crawl-read-back",
    )
