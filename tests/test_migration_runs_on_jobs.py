"""Upgrading moves every run's status, progress, error and timing onto a job record: evaluation
and learning runs, the daily runs and the hand-off runs keep their history (on SQLite and
PostgreSQL: Django's migration executor, back to the state before, rows made, then forward)."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta
from typing import Any

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

BEFORE = [
    ("jobs", "0007_key_parent_attempts"),
    ("scheduling", "0016_prior_reset_rate"),
    ("handoff", "0003_crawl_read_back"),
]
T = datetime(2026, 11, 20, 5, 0, tzinfo=UTC)


def _old_rows(apps: Any) -> dict[str, Any]:
    """A history as the previous version stored it."""
    return {**_old_stored_runs(apps), **_old_daily_and_hand_offs(apps)}


def _old_stored_runs(apps: Any) -> dict[str, Any]:
    """Evaluation and learning runs with statuses of their own."""
    Job = apps.get_model("jobs", "JobRecord")
    Evaluation = apps.get_model("scheduling", "EvaluationRun")
    Learned = apps.get_model("scheduling", "LearnedScorer")
    period = {"start": date(2017, 1, 1), "end": date(2017, 6, 1)}
    rows: dict[str, Any] = {}
    # A run made in a terminal before runs had jobs: done in 90 s, no job.
    rows["done"] = Evaluation.objects.create(
        parameters={"start": "2017-01-01"},
        status="done",
        progress=1.0,
        duration_seconds=90.0,
        finished_at=T,
    )
    # A run whose job a worker ran, and which failed; the job had not heard.
    job = Job.objects.create(
        rq_id="ev-job", kind="evaluation", queue="evaluation", status="running"
    )
    rows["failed"] = Evaluation.objects.create(
        parameters={},
        status="failed",
        progress=0.3,
        error="ValueError: no sites",
        finished_at=T,
        duration_seconds=5.0,
        job=job,
    )
    rows["queued"] = Evaluation.objects.create(parameters={}, status="queued")
    rows["learned"] = Learned.objects.create(
        kind="gp4c",
        level="homepage",
        status="done",
        progress=1.0,
        finished_at=T,
        duration_seconds=12.0,
        parameters={},
        **period,
    )
    return rows


def _old_daily_and_hand_offs(apps: Any) -> dict[str, Any]:
    """A daily run that failed on its second attempt, and three hand-off runs of its list."""
    Job = apps.get_model("jobs", "JobRecord")
    HandOff = apps.get_model("handoff", "HandOff")
    HandOffRun = apps.get_model("handoff", "HandOffRun")
    listed = apps.get_model("scheduling", "CrawlList").objects.create(
        date=date(2026, 11, 20), history_days=1095, e_days=1.0, is_daily=True
    )
    step = Job.objects.create(
        rq_id="hand-1", kind="hand_off", queue="daily", status="finished", finished_at=T
    )
    rows: dict[str, Any] = {}
    rows["daily"] = apps.get_model("scheduling", "DailyRun").objects.create(
        date=date(2026, 11, 20),
        status="failed",
        attempts=2,
        started_at=T - timedelta(hours=1),
        finished_at=T,
        error="OperationalError: locked",
        crawl_list=listed,
        job=step,
    )
    heritrix = HandOff.objects.create(name="h", kind="heritrix_action", job_dir="/x")
    rows["sent"] = HandOffRun.objects.create(
        hand_off=heritrix, crawl_list=listed, job=step, status="sent", sites=3, steps=["wrote"]
    )
    rows["lost"] = HandOffRun.objects.create(
        hand_off=heritrix, crawl_list=listed, status="failed", message="Directory gone."
    )
    rows["empty"] = HandOffRun.objects.create(
        hand_off=heritrix, crawl_list=listed, status="empty", message="Nothing to send."
    )
    return rows


def _migrate_forward() -> None:
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(executor.loader.graph.leaf_nodes())


@pytest.mark.django_db(transaction=True)
def test_every_runs_status_error_and_timing_land_on_a_job() -> None:
    executor = MigrationExecutor(connection)
    executor.migrate(BEFORE)
    rows = _old_rows(executor.loader.project_state(BEFORE).apps)
    _migrate_forward()

    from handoff.models import HandOffRun
    from jobs.models import JobRecord
    from scheduling.models import EvaluationRun, LearnedScorer

    done = EvaluationRun.objects.get(pk=rows["done"].pk)
    assert (done.status, done.progress, done.finished_at) == ("done", 1.0, T)
    assert done.duration_seconds == pytest.approx(90.0)
    assert done.job is not None and done.job.key == f"evaluate:{done.pk}"
    failed = EvaluationRun.objects.get(pk=rows["failed"].pk)
    assert (failed.status, failed.error) == ("failed", "ValueError: no sites")
    assert failed.job is not None and failed.job.rq_id == "ev-job" and failed.job.done == 30
    queued = EvaluationRun.objects.get(pk=rows["queued"].pk)
    assert (queued.status, queued.job) == ("queued", None)
    learned = LearnedScorer.objects.get(pk=rows["learned"].pk)
    assert (learned.status, learned.finished_at) == ("done", T)
    assert learned.job is not None and learned.job.key == f"learn:{learned.pk}"
    assert LearnedScorer.objects.done().get() == learned

    daily = JobRecord.objects.get(key="daily:2026-11-20")
    assert (daily.kind, daily.status, daily.attempts, daily.error) == (
        "daily",
        "failed",
        2,
        "OperationalError: locked",
    )
    assert (daily.started_at, daily.finished_at) == (T - timedelta(hours=1), T)
    assert [j.rq_id for j in daily.children.all()] == ["hand-1"]

    outcome = {
        run.pk: (run.status, run.job.status if run.job else None, run.message)
        for run in HandOffRun.objects.select_related("job")
    }
    assert outcome == {
        rows["sent"].pk: ("sent", "finished", ""),
        rows["lost"].pk: ("failed", "failed", "Directory gone."),
        rows["empty"].pk: ("empty", "finished", "Nothing to send."),
    }
    lost = HandOffRun.objects.get(pk=rows["lost"].pk)
    assert lost.job is not None and lost.job.error == "Directory gone."
    assert JobRecord.objects.get(rq_id="hand-1").counts == {"sites": 3, "steps": 1}


@pytest.mark.django_db(transaction=True)
def test_going_back_gives_the_runs_their_own_fields_again() -> None:
    executor = MigrationExecutor(connection)
    executor.migrate(BEFORE)
    rows = _old_rows(executor.loader.project_state(BEFORE).apps)
    _migrate_forward()
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(BEFORE)
    apps = executor.loader.project_state(BEFORE).apps
    done = apps.get_model("scheduling", "EvaluationRun").objects.get(pk=rows["done"].pk)
    assert (done.status, done.error, done.finished_at) == ("done", "", T)
    daily = apps.get_model("scheduling", "DailyRun").objects.get()
    assert (daily.status, daily.attempts, daily.error) == ("failed", 2, "OperationalError: locked")
    statuses = apps.get_model("handoff", "HandOffRun").objects.order_by("pk")
    assert [r.status for r in statuses] == ["sent", "failed", "empty"]
    _migrate_forward()
