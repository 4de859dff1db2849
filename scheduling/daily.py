"""The daily job's claim on its date: one morning run per date, however many workers ask.

The cron scheduler runs the daily job at its hour and, every few minutes, a catch-up that runs it
when that hour has passed without it (the machine was down, or HACS started later in the day;
``operations.daily``). Both first claim the date here: the morning's run is the job keyed
``daily:<date>`` (``jobs.runner.JobRun.claim``), whose steps — building the list, then each
hand-off in turn — are child jobs of it. A failed run may be claimed again up to
``DAILY_ATTEMPTS`` times in all. When the sweep marks the run interrupted (its worker stopped),
when its heartbeat is a lease old, or when it is still marked running after
``HACS_JOB_TIMEOUT``, the run is taken for dead and may be claimed again too. The run claimed
again rebuilds the list (an identical list is not stored twice) and sends only the hand-offs
the dead one had not sent (``handoff.services.hand_offs_run_daily``).
"""

from __future__ import annotations

from datetime import date, datetime, timedelta

from django.conf import settings
from django.db.models import Q
from django.utils import timezone

from hacs.progress import Progress
from hacs_site.clock import today
from jobs.models import JobRecord
from jobs.runner import JobRun
from scheduling.crawl_lists import CrawlListOptions, crawl_list_store
from scheduling.models import CrawlList

DAILY_ATTEMPTS = 3


def daily_key(day: date) -> str:
    """The key of ``day``'s daily job."""
    return f"daily:{day.isoformat()}"


def _again(now: datetime) -> Q:
    """Runs that may be claimed again: failed fewer than DAILY_ATTEMPTS times, or dead (marked
    interrupted by the sweep, no heartbeat for a lease, or going past the job timeout)."""
    late = now - timedelta(seconds=settings.HACS_JOB_TIMEOUT)
    left = now - timedelta(seconds=settings.HACS_JOB_LEASE_SECONDS)
    dead = Q(heartbeat_at__lt=left) | Q(started_at__lt=late)
    failed = Q(status=JobRecord.Status.FAILED, attempts__lt=DAILY_ATTEMPTS)
    interrupted = Q(status=JobRecord.Status.INTERRUPTED)
    return failed | interrupted | (Q(status__in=JobRecord.ACTIVE) & dead)


def daily_run_job(day: date) -> JobRecord | None:
    """``day``'s daily job, if it was ever claimed."""
    return JobRecord.objects.filter(key=daily_key(day)).first()


def daily_run_open(*, day: date, now: datetime | None = None) -> bool:
    """Whether ``day``'s run is still to be made: never claimed, failed, or dead."""
    now = now or timezone.now()
    runs = JobRecord.objects.filter(key=daily_key(day))
    return not runs.exists() or runs.filter(_again(now)).exists()


def daily_run_claim(*, day: date, now: datetime | None = None) -> JobRun | None:
    """The run for ``day`` if this caller may make it: a new claim, or a failed or dead run
    taken over; None when another caller has it or it is done."""
    return JobRun.claim(
        key=daily_key(day),
        kind=JobRecord.Kind.DAILY,
        label=f"{day}: the crawl list and its hand-offs",
        queue="daily",
        again=_again(now or timezone.now()),
        now=now or timezone.now(),
    )


def daily_list_build(*, run: JobRecord | None = None) -> CrawlList:
    """The list of the run's date (today's without a run) with the configured defaults, stored
    (or the identical one stored before it), built as a job of its own, a step of the run."""
    day = date.fromisoformat(run.key.removeprefix("daily:")) if run and run.key else today()
    with JobRun.start(
        kind=JobRecord.Kind.CRAWL_LIST,
        label=f"Daily crawl list {day}",
        queue="daily",
        total=1,
        parent=run,
    ) as job:
        crawl_list = crawl_list_store(
            day=day, options=CrawlListOptions.from_settings(), source=CrawlList.Source.DAILY_JOB
        ).crawl_list
        job.report(Progress(done=1, counts={"sites": crawl_list.entries.count()}))
    return crawl_list
