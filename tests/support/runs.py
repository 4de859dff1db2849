"""Stored evaluation and learning runs as a test needs them: where a run stands is its job's, so
a run said to be done, running or failed is made with a job record saying so."""

from __future__ import annotations

import uuid
from datetime import datetime, timedelta
from typing import Any, TypeVar

from django.utils import timezone

from handoff.models import HandOffRun
from jobs.models import JobRecord
from scheduling.models import StoredRun

RunT = TypeVar("RunT", bound=StoredRun)

JOB_STATUS = {
    "queued": JobRecord.Status.QUEUED,
    "running": JobRecord.Status.RUNNING,
    "done": JobRecord.Status.FINISHED,
    "failed": JobRecord.Status.FAILED,
}


def stored_run(
    run_model: type[RunT],
    /,
    *,
    status: str = "done",
    progress: float = 0.0,
    error: str = "",
    finished_at: datetime | None = None,
    duration_seconds: float = 1.0,
    **fields: Any,
) -> RunT:
    """A run of ``run_model`` with ``fields``, and a job in the state ``status`` names (a queued
    run has none yet)."""
    run = run_model.objects.create(**fields)
    if status == "queued":
        return run
    ended = status in ("done", "failed")
    end = (finished_at or timezone.now()) if ended else None
    start = end - timedelta(seconds=duration_seconds) if end else timezone.now()
    kind = (
        JobRecord.Kind.EVALUATION if run_model.KEY_PREFIX == "evaluate" else JobRecord.Kind.LEARNING
    )
    job = JobRecord.objects.create(
        rq_id=uuid.uuid4().hex,
        kind=kind,
        queue="evaluation",
        key=run.job_key,
        status=JOB_STATUS[status],
        total=100,
        done=round(100 * (1.0 if status == "done" else progress)),
        error=error,
        started_at=start,
        heartbeat_at=end or start,
        finished_at=end,
    )
    run_model.objects.filter(pk=run.pk).update(job=job)
    run.job = job
    return run


def hand_off_run_sent(**fields: Any) -> HandOffRun:
    """A hand-off run that sent its sites: its job finished."""
    job = JobRecord.objects.create(
        rq_id=uuid.uuid4().hex,
        kind=JobRecord.Kind.HAND_OFF,
        queue="terminal",
        status=JobRecord.Status.FINISHED,
        total=1,
        done=1,
        finished_at=timezone.now(),
    )
    return HandOffRun.objects.create(job=job, **fields)
