"""Background jobs go web → Redis → worker → database, and the Jobs page shows how they went."""

from __future__ import annotations

from typing import Any

import pytest
import redis
from django.db import connection

from dashboard.models import JobRecord
from dashboard.services import job_enqueue, job_records_sync_with_rq

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
