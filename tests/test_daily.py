"""The daily job runs once a date: at its hour, or at the catch-up after HACS was down then."""

from __future__ import annotations

from datetime import UTC, datetime, time, timedelta
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import pytest
from django.utils import timezone

from hacs.clock import reference_instant
from hacs_site.clock import today
from handoff.models import HandOff, HandOffRun
from jobs.models import JobRecord
from jobs.runner import JobRun
from operations.daily import daily_catch_up, daily_crawl_list_and_hand_offs, daily_list_hour
from scheduling.daily import DAILY_ATTEMPTS, daily_run_claim, daily_run_job, daily_run_open
from scheduling.models import CrawlList
from tests.factories import add_observations, make_site

pytestmark = pytest.mark.django_db


@pytest.fixture()
def collection() -> None:
    t = reference_instant(today())
    for n in range(3):
        site = make_site(seed_url=f"http://daily.example.edu/~d{n}/")
        add_observations(
            site,
            [t - timedelta(days=d) for d in (90, 60, 30, 10)],
            updates=[False, True, True, True],
        )


@pytest.fixture()
def heritrix(tmp_path: Path, settings: Any) -> HandOff:
    settings.HACS_HERITRIX_ROOT = str(tmp_path)  # hand-offs write only inside it
    (tmp_path / "job" / "action").mkdir(parents=True)
    return HandOff.objects.create(
        name="Scholars on Heritrix",
        kind=HandOff.Kind.HERITRIX_ACTION,
        job_dir=str(tmp_path / "job"),
    )


def at(clock: time, settings: Any) -> datetime:
    """Today at ``clock`` in HACS's time zone."""
    return datetime.combine(today(), clock, tzinfo=ZoneInfo(settings.TIME_ZONE))


def fail(run: JobRun, reason: str = "database is locked") -> None:
    """The claimed run fails with ``reason``."""
    with pytest.raises(ValueError), run:
        raise ValueError(reason)


def test_a_second_run_of_the_day_builds_nothing_and_hands_off_nothing(
    settings: Any, collection: None, heritrix: HandOff
) -> None:
    settings.HACS_THETA = 0.0
    list_id = daily_crawl_list_and_hand_offs()
    assert list_id is not None

    assert daily_crawl_list_and_hand_offs() is None

    assert list(CrawlList.objects.values_list("pk", flat=True)) == [list_id]
    assert HandOffRun.objects.get().status == "sent"
    assert len(list(Path(heritrix.job_dir, "action").glob("*.seeds"))) == 1
    assert JobRecord.objects.filter(kind="crawl_list").count() == 1
    run = JobRecord.objects.get(kind="daily")
    assert (run.key, run.status, run.attempts) == (f"daily:{today()}", "finished", 1)
    # The list's job and the hand-off's are the run's steps.
    steps = JobRecord.objects.filter(parent=run).order_by("pk")
    assert [job.kind for job in steps] == ["crawl_list", "hand_off"]
    assert HandOffRun.objects.get().job == steps[1]
    assert CrawlList.objects.daily_for(today()).pk == list_id


def test_the_catch_up_waits_for_the_hour_then_makes_the_run_once(
    settings: Any, collection: None, heritrix: HandOff
) -> None:
    settings.HACS_THETA = 0.0
    settings.HACS_DAILY_CRAWL_LIST_CRON = "30 5 * * *"

    assert daily_catch_up(now=at(time(5, 29), settings)) is None  # the hour is still to come
    assert not CrawlList.objects.exists() and daily_run_job(today()) is None

    list_id = daily_catch_up(now=at(time(9, 15), settings))  # HACS was down at 05:30
    assert list_id == CrawlList.objects.get().pk
    assert HandOffRun.objects.get().crawl_list_id == list_id

    assert daily_catch_up(now=at(time(9, 25), settings)) is None
    assert daily_crawl_list_and_hand_offs() is None  # nor the morning job, were it late
    assert CrawlList.objects.count() == HandOffRun.objects.count() == 1


def test_the_hour_is_read_from_the_cron_expression(settings: Any) -> None:
    zone = ZoneInfo(settings.TIME_ZONE)
    settings.HACS_DAILY_CRAWL_LIST_CRON = "0 5 * * *"
    day = datetime(2026, 11, 24, tzinfo=zone)
    assert daily_list_hour(day.replace(hour=9)) == day.replace(hour=5)
    assert daily_list_hour(day.replace(hour=5)) == day.replace(hour=5)  # the very minute
    assert daily_list_hour(day.replace(hour=4, minute=59)) == day.replace(day=23, hour=5)
    settings.HACS_DAILY_CRAWL_LIST_CRON = "15 6 * * 1-5"  # weekdays: Monday 23 Nov 2026 …
    saturday = datetime(2026, 11, 28, 12, tzinfo=zone)
    assert daily_list_hour(saturday) == datetime(2026, 11, 27, 6, 15, tzinfo=zone)


def test_a_failed_run_may_be_claimed_again_three_times_in_all(settings: Any) -> None:
    day = today()
    now = at(time(5, 0), settings)
    first = daily_run_claim(day=day, now=now)
    assert first is not None
    run = daily_run_job(day)
    assert run is not None and run.attempts == 1 and run.status == "running"
    assert daily_run_claim(day=day, now=now) is None  # running: nobody else may make it
    assert not daily_run_open(day=day, now=now)
    fail(first)
    for attempt in range(2, DAILY_ATTEMPTS + 1):
        assert daily_run_open(day=day, now=now)
        again = daily_run_claim(day=day, now=now)
        assert again is not None
        run = daily_run_job(day)
        assert run is not None and run.attempts == attempt and run.error == ""
        assert run.status == "running"
        assert daily_run_claim(day=day, now=now) is None  # one taker only
        fail(again)
    assert not daily_run_open(day=day, now=now)
    assert daily_run_claim(day=day, now=now) is None
    run = daily_run_job(day)
    assert run is not None and run.error == "ValueError: database is locked"
    assert JobRecord.objects.filter(kind="daily").count() == 1


def test_a_run_still_beating_past_the_job_timeout_is_taken_over(settings: Any) -> None:
    """A run whose heartbeat goes on (its worker hangs) is taken for dead after the job
    timeout."""
    day = today()
    start = at(time(5, 0), settings)
    assert daily_run_claim(day=day, now=start) is not None
    within = start + timedelta(seconds=settings.HACS_JOB_TIMEOUT - 60)
    JobRecord.objects.filter(kind="daily").update(heartbeat_at=within)
    assert daily_run_claim(day=day, now=within) is None
    after = start + timedelta(seconds=settings.HACS_JOB_TIMEOUT + 60)
    JobRecord.objects.filter(kind="daily").update(heartbeat_at=after - timedelta(seconds=1))
    assert daily_run_open(day=day, now=after)
    taken = daily_run_claim(day=day, now=after)
    assert taken is not None
    run = daily_run_job(day)
    assert run is not None and run.attempts == 2 and run.started_at == after


def test_a_run_the_sweep_marked_interrupted_is_taken_over_at_once(settings: Any) -> None:
    """The worker making the run stopped: the sweep marks the run's job interrupted a lease
    later, and the next catch-up need not wait for the job timeout."""
    day = today()
    start = at(time(5, 0), settings)
    assert daily_run_claim(day=day, now=start) is not None
    soon = start + timedelta(minutes=1)
    assert daily_run_claim(day=day, now=soon) is None  # its job still counts as alive
    JobRecord.objects.filter(kind="daily").update(status=JobRecord.Status.INTERRUPTED)
    assert daily_run_open(day=day, now=soon)
    taken = daily_run_claim(day=day, now=soon)
    assert taken is not None
    run = daily_run_job(day)
    assert run is not None and run.attempts == 2 and run.status == "running"
    assert daily_run_claim(day=day, now=soon) is None  # one taker only


def test_a_list_built_on_the_page_does_not_stand_for_the_daily_run(
    settings: Any, collection: None, heritrix: HandOff, client: Any
) -> None:
    """A librarian's identical list earlier in the day stays an experiment: the daily run
    builds the day's own list and hands that one off, once; Overview, the feed and the
    hand-offs all mean it by "today's list"."""
    from dashboard.feeds import newest_crawl_list
    from dashboard.overview import due_today
    from handoff.services import hand_off_list_for_day
    from scheduling.crawl_lists import CrawlListOptions, crawl_list_store

    settings.HACS_THETA = 0.0
    built = crawl_list_store(
        day=today(), options=CrawlListOptions.from_settings(), source=CrawlList.Source.PAGE
    ).crawl_list
    assert not HandOffRun.objects.exists()
    assert not built.is_daily and due_today(day=today()).built is None
    assert (
        newest_crawl_list() is None
        and hand_off_list_for_day(hand_off=heritrix, day=today()) is None
    )

    daily = daily_crawl_list_and_hand_offs()
    assert daily is not None and daily != built.pk
    assert CrawlList.objects.get(pk=daily).is_daily
    assert HandOffRun.objects.get().crawl_list_id == daily
    assert daily_catch_up(now=at(time(23, 0), settings)) is None
    assert HandOffRun.objects.count() == 1
    assert due_today(day=today()).built.pk == daily
    assert newest_crawl_list().pk == daily
    assert hand_off_list_for_day(hand_off=heritrix, day=today()).pk == daily
    built.refresh_from_db()
    assert not built.is_daily and built.built_by != "by the daily job"


def test_the_admin_shows_the_daily_runs_and_their_errors(admin_client: Any, settings: Any) -> None:
    run = daily_run_claim(day=today(), now=at(time(5, 0), settings))
    assert run is not None
    fail(run)
    page = admin_client.get("/admin/jobs/jobrecord/?kind__exact=daily").content.decode()
    assert "failed" in page and f"daily:{today()}" in page
    detail = admin_client.get(f"/admin/jobs/jobrecord/{run.record.pk}/change/").content.decode()
    assert "database is locked" in detail


def test_the_crawl_list_page_without_lists_says_when_the_daily_job_builds_one(
    logged_in_client: Any, settings: Any
) -> None:
    settings.HACS_DAILY_CRAWL_LIST_CRON = "45 6 * * *"
    now = datetime.now(UTC)
    page = " ".join(logged_in_client.get("/crawl-list/").content.decode().split())
    following = datetime.combine(now.date(), time(6, 45), tzinfo=UTC)
    if following <= now:
        following += timedelta(days=1)
    assert "No daily list yet" in page
    assert f"builds the day's list at 06:45 UTC on {following.day} {following:%b %Y}" in page


def second_crawler(tmp_path: Path) -> HandOff:
    (tmp_path / "second" / "action").mkdir(parents=True)
    return HandOff.objects.create(
        name="Second crawler", kind=HandOff.Kind.HERITRIX_ACTION, job_dir=str(tmp_path / "second")
    )


def test_a_run_whose_worker_stopped_while_handing_off_is_finished_by_the_catch_up(
    settings: Any, collection: None, heritrix: HandOff, tmp_path: Path, monkeypatch: Any
) -> None:
    """The worker stopped during the second hand-off: the sweep marks the run's job and that
    hand-off's interrupted, and the next catch-up sends that hand-off, not the first one
    again, and stores no second list."""
    import handoff.services
    from jobs.runner import job_records_sweep

    settings.HACS_THETA = 0.0
    settings.HACS_DAILY_CRAWL_LIST_CRON = "0 5 * * *"
    second = second_crawler(tmp_path)
    deliver = handoff.services.hand_off_deliver

    def stop_at_the_second(*, hand_off: HandOff, **kwargs: Any) -> Any:
        if hand_off.pk == second.pk:
            raise KeyboardInterrupt  # the worker is stopped mid-delivery
        return deliver(hand_off=hand_off, **kwargs)

    monkeypatch.setattr(handoff.services, "hand_off_deliver", stop_at_the_second)
    # A worker killed mid-delivery runs nothing on its way out (Ctrl-C would mark the
    # hand-off interrupted at once): its job is found by its silent heartbeat.
    stop = JobRun._stop
    monkeypatch.setattr(JobRun, "_stop", lambda run, error: None)
    with pytest.raises(KeyboardInterrupt):
        daily_catch_up(now=at(time(5, 5), settings))
    run = JobRecord.objects.get(kind="daily")
    stopped = JobRecord.objects.get(kind="hand_off", status="running")
    assert (run.status, stopped.parent_id) == ("running", run.pk)
    assert [r.hand_off_id for r in HandOffRun.objects.all()] == [heritrix.pk]
    JobRecord.objects.filter(pk=run.pk).update(heartbeat_at=at(time(5, 14), settings))
    assert daily_catch_up(now=at(time(5, 15), settings)) is None  # its job still holds a lease

    monkeypatch.setattr(handoff.services, "hand_off_deliver", deliver)
    monkeypatch.setattr(JobRun, "_stop", stop)
    lease = timedelta(seconds=settings.HACS_JOB_LEASE_SECONDS)
    silent = JobRecord.objects.filter(pk__in=[run.pk, stopped.pk])
    silent.update(heartbeat_at=timezone.now() - 2 * lease)
    assert [r.pk for r in job_records_sweep(rq_cleanup=False)] == [run.pk, stopped.pk]
    list_id = daily_catch_up(now=at(time(5, 15), settings))

    assert list_id is not None and CrawlList.objects.get().pk == list_id
    sent = HandOffRun.objects.order_by("pk")
    assert [(r.hand_off_id, r.status) for r in sent] == [(heritrix.pk, "sent"), (second.pk, "sent")]
    assert len(list(Path(heritrix.job_dir, "action").glob("*.seeds"))) == 1
    assert len(list(Path(second.job_dir, "action").glob("*.seeds"))) == 1
    run.refresh_from_db()
    assert (run.status, run.attempts) == ("finished", 2)
    steps = JobRecord.objects.filter(parent=run, kind="hand_off").order_by("pk")
    assert [job.status for job in steps] == ["finished", "interrupted", "finished"]


def test_a_run_whose_heartbeat_stopped_is_dead_a_lease_later(settings: Any) -> None:
    """The list was built and the worker stopped before the first hand-off began: the run's
    own heartbeat stops."""
    day = today()
    start = at(time(5, 0), settings)
    assert daily_run_claim(day=day, now=start) is not None
    beat = start + timedelta(minutes=1)
    JobRecord.objects.filter(kind="daily").update(heartbeat_at=beat)
    lease = timedelta(seconds=settings.HACS_JOB_LEASE_SECONDS)
    assert daily_run_claim(day=day, now=beat + lease / 2) is None
    taken = daily_run_claim(day=day, now=beat + lease + timedelta(seconds=1))
    assert taken is not None
    run = daily_run_job(day)
    assert run is not None and run.attempts == 2
