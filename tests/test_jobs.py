"""Background jobs go web → Redis → worker → database, and the Jobs page shows how they went."""

from __future__ import annotations

import io
from datetime import UTC, date, datetime, timedelta
from typing import Any

import pytest
import redis
from django.core.management import call_command
from django.db import connection

from jobs.models import JobRecord
from jobs.services import job_enqueue, job_records_sync_with_rq
from scheduling.estimates import estimates_for_window
from scheduling.evaluation_service import evaluation_run_create, evaluation_run_refresh
from scheduling.jobs import enqueue_evaluation
from scheduling.models import Estimate, EvaluationRun
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
    # int(record_id, "x") raises TypeError inside the worker: a real failure, recorded by RQ's
    # failure callback.
    record = job_enqueue(kind=JobRecord.Kind.HEALTH, func="builtins.int", args=("x",))
    run_worker("default")
    record.refresh_from_db()
    assert record.status == JobRecord.Status.FAILED
    assert "TypeError" in record.error


def test_a_running_job_whose_rq_job_vanished_is_shown_as_failed(redis_url: str) -> None:
    record = JobRecord.objects.create(
        rq_id="gone", kind=JobRecord.Kind.IMPORT, queue="import", status="running"
    )
    job_records_sync_with_rq([record])
    record.refresh_from_db()
    assert record.status == JobRecord.Status.FAILED
    assert "worker stopped" in record.error


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
    options = ["--level", "website", "--method", "interpolated", "--start", "2018-01-01",
               "--end", "2018-03-31"]  # fmt: skip
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
        level="website", method="interpolated", start=stored.window_start,
        end=stored.window_end,
    )[site.pk]  # fmt: skip
    whole = estimates_for_window(level="website", method="interpolated")[site.pk]
    assert stored.rate == pytest.approx(expected.rate, rel=1e-12)
    assert stored.rate != pytest.approx(whole.rate)  # the window made a difference


def test_an_evaluation_run_whose_job_failed_is_marked_failed(redis_url: str) -> None:
    run = evaluation_run_create(parameters={"start": "2016-01-11", "end": "2016-02-15"})
    record = enqueue_evaluation(run)
    assert EvaluationRun.objects.get(pk=run.pk).job == record  # the run knows its job
    other = enqueue_evaluation(evaluation_run_create(parameters=run.parameters))
    # The run's job failed without the run hearing of it (RQ's callback marks the record only);
    # a failed job of another run must not matter.
    JobRecord.objects.filter(pk=record.pk).update(
        status=JobRecord.Status.FAILED, error="MemoryError"
    )
    run = EvaluationRun.objects.get(pk=run.pk)
    assert run.status == EvaluationRun.Status.QUEUED
    evaluation_run_refresh(run)
    assert run.status == EvaluationRun.Status.FAILED and run.error == "MemoryError"
    assert EvaluationRun.objects.get(pk=run.pk).status == EvaluationRun.Status.FAILED
    still = EvaluationRun.objects.exclude(pk=run.pk).get()
    assert still.job == other
    assert evaluation_run_refresh(still).status == EvaluationRun.Status.QUEUED
