"""The morning's work, run by the cron scheduler (``operations.cron``): build today's crawl list,
then hand it to every enabled hand-off at its level (``handoff``).

It runs once per date (``scheduling.daily`` claims the date): at ``HACS_DAILY_CRAWL_LIST_CRON``,
or, when that hour passed while HACS was down or not yet started, at the next catch-up
(:func:`daily_catch_up`, every few minutes), so that a librarian never finds the morning's list
missing because of a restart. The run is the job keyed ``daily:<date>``; building the list and
each hand-off are its child jobs, and one hand-off that fails (a crawler down, a directory
gone) leaves the stored list and the other hand-offs as they are. A
run whose worker stopped, while building the list or while handing it off, is taken over by
the next catch-up, which sends only the hand-offs not yet sent.
"""

from __future__ import annotations

import logging
from datetime import datetime
from zoneinfo import ZoneInfo

from croniter import croniter
from django.conf import settings
from django.utils import timezone

from hacs import clock
from hacs_site.clock import today
from handoff.services import hand_offs_run_daily
from scheduling.daily import daily_list_build, daily_run_claim, daily_run_open

logger = logging.getLogger(__name__)


def daily_crawl_list_and_hand_offs() -> int | None:
    """Build today's list with the configured defaults and hand it off; returns the list's id,
    or None when today's run was made already (or is being made elsewhere)."""
    run = daily_run_claim(day=today())
    if run is None:
        return None
    with run:
        crawl_list = daily_list_build(run=run.record)
        # Each hand-off records its own outcome (a failed one can be repeated from the Crawl
        # list page) as a step of the run, so that one stopped half-way is taken over.
        hand_offs_run_daily(crawl_list=crawl_list, parent=run.record)
    return crawl_list.pk


def _schedule_time(moment: datetime) -> datetime:
    """``moment`` in ``TIME_ZONE``, where the cron expressions are read: RQ's cron scheduler reads
    them in local time, and Django sets a process's local time zone to ``TIME_ZONE``."""
    return moment.astimezone(ZoneInfo(settings.TIME_ZONE))


def daily_list_hour(moment: datetime) -> datetime:
    """The latest time at or before ``moment`` at which the daily job was due."""
    minute = _schedule_time(moment).replace(second=0, microsecond=0)
    if croniter.match(settings.HACS_DAILY_CRAWL_LIST_CRON, minute):
        return minute
    fired: datetime = croniter(settings.HACS_DAILY_CRAWL_LIST_CRON, minute).get_prev(datetime)
    return fired


def daily_list_next(moment: datetime) -> datetime:
    """The next time after ``moment`` at which the daily job is due."""
    schedule = croniter(settings.HACS_DAILY_CRAWL_LIST_CRON, _schedule_time(moment))
    fired: datetime = schedule.get_next(datetime)
    return fired


def daily_catch_up(*, now: datetime | None = None) -> int | None:
    """Make today's run if its hour has passed today and no run has been made; a no-op
    otherwise. Returns the list's id when it built one."""
    now = now or timezone.now()
    day = clock.today(settings.TIME_ZONE, now=now)
    due = daily_list_hour(now).date()
    if due != day or not daily_run_open(day=day, now=now):
        return None
    logger.info("The daily crawl list of %s was not made at its hour; making it now.", day)
    return daily_crawl_list_and_hand_offs()
