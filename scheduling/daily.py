"""The daily job's claim on its date: one morning run per date, however many workers ask.

The cron scheduler runs the daily job at its hour and, every few minutes, a catch-up that runs it
when that hour has passed without it (the machine was down, or HACS started later in the day;
``operations.daily``). Both first claim the date here. A failed run may be claimed again up to
``DAILY_ATTEMPTS`` times in all. A run follows its current job (building the list, then each
hand-off in turn): when the sweep marks that job interrupted (its worker stopped), when the job
ended a lease ago and the run has not moved on, or when the run is still marked running after
``HACS_JOB_TIMEOUT``, the run is taken for dead and may be claimed again too. The run claimed
again rebuilds the list (an identical list is not stored twice) and sends only the hand-offs
the dead one had not sent (``handoff.services.hand_offs_run_daily``).
"""

from __future__ import annotations

from datetime import date, datetime, timedelta

from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import F, Q
from django.utils import timezone

from hacs_site.clock import today
from jobs.models import JobRecord
from jobs.runner import JobRun
from scheduling.crawl_lists import CrawlListOptions, crawl_list_store
from scheduling.models import CrawlList, DailyRun

DAILY_ATTEMPTS = 3


def _again(now: datetime) -> Q:
    """Runs that may be claimed again: failed fewer than DAILY_ATTEMPTS times, or dead (its
    job marked interrupted by the sweep, or ended a lease ago with the run not moved on, or the
    run going past the job timeout)."""
    late = now - timedelta(seconds=settings.HACS_JOB_TIMEOUT)
    left = now - timedelta(seconds=settings.HACS_JOB_LEASE_SECONDS)
    dead = (
        Q(job__status=JobRecord.Status.INTERRUPTED)
        | Q(job__finished_at__lt=left)
        | Q(started_at__lt=late)
    )
    return Q(status=DailyRun.Status.FAILED, attempts__lt=DAILY_ATTEMPTS) | (
        Q(status=DailyRun.Status.RUNNING) & dead
    )


def daily_run_open(*, day: date, now: datetime | None = None) -> bool:
    """Whether ``day``'s run is still to be made: never claimed, failed, or dead."""
    now = now or timezone.now()
    runs = DailyRun.objects.filter(date=day)
    return not runs.exists() or runs.filter(_again(now)).exists()


def daily_run_claim(*, day: date, now: datetime | None = None) -> DailyRun | None:
    """The run for ``day`` if this caller may make it: a new claim, or a failed or dead run
    taken over; None when another caller has it or it is done."""
    now = now or timezone.now()
    if not DailyRun.objects.filter(date=day).exists():
        try:
            with transaction.atomic():
                return DailyRun.objects.create(date=day, started_at=now)
        except IntegrityError:  # another caller inserted it first
            pass
    # One UPDATE: of two callers taking over the same run, only one changes a row. (The
    # condition on the job is read in a subquery: an UPDATE cannot join.)
    again = DailyRun.objects.filter(_again(now), date=day).values("pk")
    taken = DailyRun.objects.filter(pk__in=again, date=day).update(
        status=DailyRun.Status.RUNNING,
        attempts=F("attempts") + 1,
        started_at=now,
        finished_at=None,
        error="",
        job=None,
    )
    return DailyRun.objects.get(date=day) if taken else None


def daily_run_follow(*, run: DailyRun, job: JobRecord) -> None:
    """The run's current job is now ``job``: the run lives as long as it does."""
    DailyRun.objects.filter(pk=run.pk).update(job=job)


def daily_list_build(*, run: DailyRun | None = None) -> CrawlList:
    """The list of the run's date (today's without a run) with the configured defaults, stored
    (or the identical one stored before it), built as a job of its own, which the run follows."""
    day = run.date if run is not None else today()
    with JobRun.start(
        kind=JobRecord.Kind.CRAWL_LIST, label=f"Daily crawl list {day}", queue="daily", total=1
    ) as job:
        if run is not None:
            daily_run_follow(run=run, job=job.record)
        crawl_list = crawl_list_store(
            day=day, options=CrawlListOptions.from_settings(), source=CrawlList.Source.DAILY_JOB
        ).crawl_list
        job.advance(1, sites=crawl_list.entries.count())
    return crawl_list


def daily_run_finish(
    *, run: DailyRun, crawl_list: CrawlList | None = None, error: str = ""
) -> None:
    """Record the run's outcome: the list it built, or the error that stopped it."""
    run.status = DailyRun.Status.FAILED if error else DailyRun.Status.FINISHED
    run.crawl_list = crawl_list
    run.error = error[:5000]
    run.finished_at = timezone.now()
    run.save(update_fields=["status", "crawl_list", "error", "finished_at"])
