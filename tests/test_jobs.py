"""Background jobs go web → Redis → worker → database, and the Jobs page shows how they went."""

from __future__ import annotations

import io
from datetime import UTC, date, datetime, timedelta
from typing import Any

import pytest
import redis
from django.core.management import call_command
from django.db import connection
from rq.job import JobStatus

from hacs.progress import Progress
from jobs.models import JobRecord
from jobs.runner import job_item_done, job_item_interrupted, job_records_sync_with_rq
from jobs.services import QUEUE_PRIORITY, JobQueue, job_enqueue
from operations.jobs import enqueue_import, import_sites
from scheduling.estimates import estimates_for_window
from scheduling.evaluation_service import evaluation_run_create, evaluation_run_refresh
from scheduling.jobs import enqueue_evaluation
from scheduling.models import Estimate, EvaluationRun
from scripts.localservers import free_port
from tests.factories import add_observations, make_site

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.integration]


def test_health_job_round_trip_through_redis_and_a_worker_process(
    logged_in_client: Any, redis_url: str, run_worker: Any
) -> None:
    response = logged_in_client.post("/jobs/health/")
    assert response.status_code == 302
    record = JobRecord.objects.get()
    assert record.status == JobRecord.Status.QUEUED
    # The job is really in Redis, waiting on the default queue.
    assert redis.Redis.from_url(redis_url).llen("rq:queue:default") == 1

    run_worker("default")

    record.refresh_from_db()
    assert record.status == JobRecord.Status.FINISHED
    assert record.counts["database"] == connection.vendor
    assert record.done == record.total == 1
    assert record.worker  # the worker process wrote its host name
    page = logged_in_client.get("/jobs/")
    assert b"Finished" in page.content
    status = logged_in_client.get("/jobs/status.json").json()
    assert status["jobs"][0]["status"] == "finished"
    assert status["jobs"][0]["fraction"] == 1.0


def test_a_job_that_raises_is_marked_failed_with_its_reason(
    redis_url: str, run_worker: Any
) -> None:
    # health_check(record_id, "x") raises TypeError inside the worker: a real failure, recorded
    # by RQ's failure callback.
    record = job_enqueue(
        kind=JobRecord.Kind.HEALTH, func="operations.jobs.health_check", args=("x",)
    )
    run_worker("default")
    record.refresh_from_db()
    assert record.status == JobRecord.Status.FAILED
    assert "TypeError" in record.error


def test_a_running_job_whose_rq_job_failed_is_shown_as_failed(redis_url: str) -> None:
    record = job_enqueue(
        kind=JobRecord.Kind.HEALTH, func="operations.jobs.health_check", args=("x",)
    )
    job = JobQueue(connection=redis.Redis.from_url(redis_url)).fetch_job(record.rq_id)
    assert job is not None
    job.set_status(JobStatus.FAILED)  # as RQ leaves a job whose callback could not run
    JobRecord.objects.filter(pk=record.pk).update(status="running")
    record.refresh_from_db()
    assert job_records_sync_with_rq([record]) is True
    record.refresh_from_db()
    assert record.status == JobRecord.Status.FAILED


def test_a_job_whose_items_all_failed_is_failed_and_one_with_some_failures_partial(
    redis_url: str, logged_in_client: Any
) -> None:
    sites = [make_site() for _ in range(4)]
    every = enqueue_import([s.pk for s in sites[:2]])
    some = enqueue_import([s.pk for s in sites[2:]])
    import_sites(every.pk, [s.pk for s in sites[:2]])
    import_sites(some.pk, [s.pk for s in sites[2:]])
    # Elapsed time runs from the fan-out, before any site has finished.
    every.refresh_from_db()
    assert every.status == JobRecord.Status.RUNNING and every.elapsed_seconds is not None
    for site in sites[:2]:
        unreachable = "The archive cannot be reached."
        job_item_done(every.pk, Progress(done=1, item=site.seed_url, failure=unreachable))
    job_item_done(some.pk, Progress(done=1, item=sites[2].seed_url, failure="HTTP 404"))
    job_item_done(some.pk, Progress(done=1, item=sites[3].seed_url, counts={"captures added": 3}))
    every.refresh_from_db()
    some.refresh_from_db()
    assert every.status == JobRecord.Status.FAILED and every.error.startswith("All 2 failed")
    assert some.status == JobRecord.Status.PARTIAL and some.counts["failed"] == 1
    assert every.elapsed_seconds is not None and every.elapsed_seconds >= 0
    assert every.elapsed_seconds == (every.finished_at - every.started_at).total_seconds()
    page = logged_in_client.get("/jobs/").content.decode()
    assert f'id="job-{every.pk}"' in page
    assert '<span class="status status-failed" data-field="status">Failed</span>' in page
    assert (
        '<span class="status status-partial" data-field="status">Finished with failures</span>'
        in page
    )
    status = {j["id"]: j for j in logged_in_client.get("/jobs/status.json").json()["jobs"]}
    assert status[every.pk]["status"] == "failed"
    assert status[some.pk]["status_display"] == "Finished with failures"


def test_a_running_job_whose_rq_job_vanished_is_shown_as_failed(redis_url: str) -> None:
    record = JobRecord.objects.create(
        rq_id="gone", kind=JobRecord.Kind.HEALTH, queue="default", status="running"
    )
    # A terminal's job and a fanned-out import have no RQ job to lose.
    terminal = JobRecord.objects.create(
        rq_id="terminal", kind=JobRecord.Kind.IMPORT, queue="terminal", status="running"
    )
    job_records_sync_with_rq([record, terminal])
    record.refresh_from_db()
    terminal.refresh_from_db()
    assert record.status == JobRecord.Status.FAILED and "worker stopped" in record.error
    assert terminal.status == JobRecord.Status.RUNNING


def test_an_interrupted_site_that_reports_after_all_is_counted_once(redis_url: str) -> None:
    site = make_site()
    record = enqueue_import([site.pk])
    import_sites(record.pk, [site.pk])
    job_item_interrupted(record.pk, item=site.seed_url)
    record.refresh_from_db()
    assert record.done == 0 and len(record.failures) == 1
    # Its work-horse outlived the worker and finished the site.
    job_item_done(record.pk, Progress(done=1, item=site.seed_url, counts={"captures added": 1}))
    record.refresh_from_db()
    assert record.status == JobRecord.Status.FINISHED
    assert record.done == 1 and record.failures == []


def test_a_worker_serves_crawl_lists_before_imports(
    redis_url: str, run_worker: Any, logged_in_client: Any
) -> None:
    from scripts.run import LIST_QUEUES, QUEUES, web_timeout, worker_queues

    assert QUEUES == QUEUE_PRIORITY and LIST_QUEUES == QUEUE_PRIORITY[:-1]
    assert "import" not in worker_queues(0, 2) and worker_queues(1, 2) == QUEUES
    assert worker_queues(0, 1) == QUEUES  # a lone worker serves everything, lists first
    # A request handing a list to Browsertrix outlives the hand-off's whole deadline.
    assert web_timeout({}) == 120 and web_timeout({"HACS_HTTP_DEADLINE": "600"}) == 630
    assert web_timeout({"HACS_HTTP_DEADLINE": "10"}) == 120
    make_site()
    imports = enqueue_import([])
    # The scheduler queues the daily list without a record; the Jobs page shows it waiting.
    JobQueue("estimation", connection=redis.Redis.from_url(redis_url)).enqueue(
        "operations.daily.daily_crawl_list_and_hand_offs"
    )
    page = logged_in_client.get("/jobs/").content.decode()
    assert "Waiting in the queues" in page and "Daily crawl list (from the scheduler)" in page
    assert logged_in_client.get("/jobs/status.json").json()["waiting"] == 1

    run_worker(*QUEUES)

    crawl_list = JobRecord.objects.get(kind=JobRecord.Kind.CRAWL_LIST)
    imports.refresh_from_db()
    assert crawl_list.status == imports.status == JobRecord.Status.FINISHED
    # Queued after the import, run before it.
    assert crawl_list.started_at < imports.started_at
    assert "Waiting in the queues" not in logged_in_client.get("/jobs/").content.decode()


@pytest.fixture()
def redis_down(settings: Any) -> str:
    """Point HACS at a port where nothing listens: every connection is refused."""
    url = f"redis://127.0.0.1:{free_port()}/0"
    settings.REDIS_URL = url
    settings.RQ_QUEUES = {name: {**c, "URL": url} for name, c in settings.RQ_QUEUES.items()}
    return url


def test_pages_show_a_banner_instead_of_failing_when_redis_is_down(
    redis_down: str, logged_in_client: Any
) -> None:
    JobRecord.objects.create(rq_id="r1", kind="import", queue="import", status="running")
    for url in ("/", "/jobs/", "/sites/"):
        response = logged_in_client.get(url)
        assert response.status_code == 200, url
        page = response.content.decode()
        assert "Background jobs are stopped." in page
        assert redis_down.removeprefix("redis://") in page
    status = logged_in_client.get("/jobs/status.json")
    assert status.status_code == 200 and status.json()["jobs"][0]["status"] == "running"


def test_no_banner_while_redis_answers(redis_url: str, logged_in_client: Any) -> None:
    assert "Background jobs are stopped." not in logged_in_client.get("/jobs/").content.decode()


def test_a_health_check_with_redis_down_says_so_and_leaves_no_record(
    redis_down: str, logged_in_client: Any
) -> None:
    response = logged_in_client.post("/jobs/health/", follow=True)
    assert response.status_code == 200
    assert "The health check could not start." in response.content.decode()
    assert not JobRecord.objects.exists()


def test_retry_with_redis_down_says_so_and_leaves_no_record(
    redis_down: str, logged_in_client: Any
) -> None:
    make_site(import_status="failed", import_error="HTTP 503")
    response = logged_in_client.post("/jobs/retry/", follow=True)
    assert "Nothing was retried." in response.content.decode()
    assert not JobRecord.objects.exists()


def test_an_enqueued_recompute_keeps_the_commands_level_method_and_window(
    redis_url: str, run_worker: Any
) -> None:
    site = make_site()
    moments = [datetime(2017, 11, 1, tzinfo=UTC) + timedelta(days=15 * k) for k in range(14)]
    flags = [k % 3 == 1 for k in range(14)]
    add_observations(site, moments, updates=flags)
    add_observations(site, moments[::2], updates=flags[::2], page="/pubs.html", depth=1)
    inside = [m for m in moments if date(2018, 1, 1) <= m.date() <= date(2018, 3, 31)]
    out = io.StringIO()
    options = [
        "--level",
        "website",
        "--method",
        "interpolated",
        "--start",
        "2018-01-01",
        "--end",
        "2018-03-31",
    ]
    call_command("recompute_estimates", "--enqueue", *options, stdout=out)
    assert "queued as job" in out.getvalue()
    assert not Estimate.objects.exists()  # nothing is computed before the worker runs it

    run_worker("estimation")

    record = JobRecord.objects.get(kind=JobRecord.Kind.ESTIMATION)
    assert record.status == JobRecord.Status.FINISHED, record.error
    assert "website / interpolated" in record.label and "2018-01-01 to 2018-03-31" in record.label
    [stored] = Estimate.objects.all()  # one level and one method, not all four
    assert (stored.level, stored.method) == ("website", "interpolated")
    assert stored.window_start == datetime(2018, 1, 1, tzinfo=UTC)
    assert stored.window_end == datetime(2018, 3, 31, 23, 59, 59, 999999, tzinfo=UTC)
    # Only the window's observations: the homepage's and the page's that fall inside it.
    homepage_in = len(inside)
    page_in = len([m for m in moments[::2] if m in inside])
    assert stored.observations == homepage_in + page_in
    expected = estimates_for_window(
        level="website", method="interpolated", start=stored.window_start, end=stored.window_end
    )[site.pk]
    whole = estimates_for_window(level="website", method="interpolated")[site.pk]
    assert stored.rate == pytest.approx(expected.rate, rel=1e-12)
    assert stored.rate != pytest.approx(whole.rate)  # the window made a difference


def test_an_evaluation_run_whose_job_failed_reads_failed(redis_url: str) -> None:
    run = evaluation_run_create(parameters={"start": "2016-01-11", "end": "2016-02-15"})
    record = enqueue_evaluation(run)
    assert EvaluationRun.objects.get(pk=run.pk).job == record  # the run knows its job
    assert record.key == f"evaluate:{run.pk}"
    other = enqueue_evaluation(evaluation_run_create(parameters=run.parameters))
    # The run's job failed (RQ's callback marks the record only): the run's status is its
    # job's, so it reads failed at once; a failed job of another run must not matter.
    JobRecord.objects.filter(pk=record.pk).update(
        status=JobRecord.Status.FAILED, error="MemoryError"
    )
    run = EvaluationRun.objects.get(pk=run.pk)
    assert run.status == EvaluationRun.Status.FAILED and run.error == "MemoryError"
    evaluation_run_refresh(run)
    assert EvaluationRun.objects.get(pk=run.pk).status == EvaluationRun.Status.FAILED
    still = EvaluationRun.objects.exclude(pk=run.pk).get()
    assert still.job == other
    assert evaluation_run_refresh(still).status == EvaluationRun.Status.QUEUED


def test_the_cron_scheduler_sweeps_for_interrupted_jobs_every_minute(redis_url: str) -> None:
    from rq.cron import CronScheduler

    scheduler = CronScheduler(connection=redis.Redis.from_url(redis_url))
    scheduler.load_config_from_file("operations.cron")
    jobs = {job.name: job for job in scheduler.get_jobs()}
    sweep = jobs["sweep-interrupted"]
    assert sweep.func_name == "operations.jobs.sweep_interrupted"
    assert (sweep.interval, sweep.queue_name) == (60, "default")
    # The scheduler's jobs go to queues served before imports.
    assert jobs["daily-crawl-list"].queue_name in QUEUE_PRIORITY[:-1]


def test_redis_dying_before_the_commit_leaves_no_record(settings: Any) -> None:
    from django.db import transaction

    from jobs.services import QueueUnavailable
    from scripts.localservers import start_redis

    private = start_redis()
    url = private.url()
    settings.RQ_QUEUES = {name: {**c, "URL": url} for name, c in settings.RQ_QUEUES.items()}
    try:
        with pytest.raises(QueueUnavailable, match="cannot be reached"):
            with transaction.atomic():
                job_enqueue(kind=JobRecord.Kind.HEALTH, func="operations.jobs.health_check")
                private.stop()  # Redis answered the check, then died before the commit
    finally:
        private.stop()
    assert not JobRecord.objects.exists()


def test_a_site_job_that_rq_found_abandoned_or_that_raised_ends_its_site(redis_url: str) -> None:
    from rq.exceptions import AbandonedJobError

    from archive.models import Site
    from operations.jobs import import_site_failed

    abandoned, raised = make_site(), make_site()
    record = enqueue_import([abandoned.pk, raised.pk])
    import_sites(record.pk, [abandoned.pk, raised.pk])
    connection = redis.Redis.from_url(redis_url)
    ids = [abandoned.pk, raised.pk]
    queue = JobQueue("import", connection=connection)
    jobs = {pk: queue.fetch_job(f"{record.rq_id}-{pk}") for pk in ids}
    Site.objects.update(import_status=Site.ImportStatus.RUNNING)

    import_site_failed(jobs[abandoned.pk], connection, AbandonedJobError, AbandonedJobError(), None)
    error = ValueError("a bug")
    import_site_failed(jobs[raised.pk], connection, ValueError, error, None)

    record.refresh_from_db()
    abandoned.refresh_from_db()
    raised.refresh_from_db()
    assert abandoned.import_status == raised.import_status == Site.ImportStatus.FAILED
    assert abandoned.import_error.startswith("Interrupted")
    assert raised.import_error == "ValueError: a bug"
    # The abandoned site is listed but not counted: its work-horse may still report.
    assert record.done == 1 and record.status == JobRecord.Status.RUNNING
    assert {f["item"]: f.get("interrupted", False) for f in record.failures} == {
        abandoned.seed_url: True,
        raised.seed_url: False,
    }


def test_an_import_of_one_site_is_labelled_in_the_singular(redis_url: str) -> None:
    from operations.jobs import enqueue_import
    from tests.factories import make_site

    one = enqueue_import([make_site().pk])
    two = enqueue_import([make_site().pk, make_site().pk])
    assert one.label == "1 site from the archive"
    assert two.label == "2 sites from the archive"
