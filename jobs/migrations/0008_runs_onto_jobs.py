"""Every run's status, progress, error and timing moves onto a job record.

Evaluation runs and learned scorers, the daily runs and the hand-off runs each kept a status of
their own; from now on their job holds it (``scheduling`` 0017 and ``handoff`` 0004 then drop
their fields, and the daily runs). A run that had no job gets one, keyed by the run; a daily run
becomes the job keyed ``daily:<date>``, the parent of its list's job and its hand-offs' jobs.
Where a run and its job disagreed, the job is made to say what the run's page said.
"""

import uuid
from datetime import timedelta
from typing import Any

from django.db import migrations

RUN_STATUS = {"queued": "queued", "running": "running", "done": "finished", "failed": "failed"}
DAILY_STATUS = {"running": "running", "finished": "finished", "failed": "failed"}
ENDED = ("finished", "partial", "failed")
DONE = ("finished", "partial")
STEPS = 100  # a run's progress in percent


def _new_job(JobRecord: Any, **fields: Any) -> Any:
    created_at = fields.pop("created_at", None)
    job = JobRecord.objects.create(rq_id=uuid.uuid4().hex, **fields)
    if created_at is not None:
        JobRecord.objects.filter(pk=job.pk).update(created_at=created_at)
    return job


def _key_free(JobRecord: Any, key: str) -> str | None:
    return None if JobRecord.objects.filter(key=key).exists() else key


def _stored_run_onto_job(JobRecord: Any, run: Any, kind: str, prefix: str) -> None:
    """The run's status, progress, error and timing onto its job (a new one if it had none and
    was ever started: a run never queued reads as queued without a job, as it did)."""
    status = RUN_STATUS.get(run.status, "failed")
    job = JobRecord.objects.filter(pk=run.job_id).first()
    if job is None and status == "queued":
        return
    if job is None:
        job = _new_job(
            JobRecord,
            kind=kind,
            label=f"{prefix} run {run.pk} (kept from before runs had jobs)",
            queue="terminal",
            key=_key_free(JobRecord, f"{prefix}:{run.pk}"),
            created_by_id=run.created_by_id,
            created_at=run.created_at,
            status=status,
        )
        run.job_id = job.pk
        run.save(update_fields=["job"])
    elif job.key is None:
        job.key = _key_free(JobRecord, f"{prefix}:{run.pk}")
    # An ended run says how it ended; an active one defers to its job (which a sweep may have
    # found interrupted since).
    if status in ENDED and (
        job.status not in ENDED or (status == "failed") != (job.status == "failed")
    ):
        job.status = status
    job.total = job.total or STEPS
    job.done = max(job.done, round(min(max(run.progress, 0.0), 1.0) * job.total))
    job.error = job.error or run.error
    job.finished_at = job.finished_at or run.finished_at
    if job.started_at is None and run.finished_at is not None:
        job.started_at = run.finished_at - timedelta(seconds=run.duration_seconds or 0.0)
    job.heartbeat_at = job.heartbeat_at or job.finished_at
    job.save()


def _daily_run_onto_job(JobRecord: Any, run: Any) -> None:
    current = JobRecord.objects.filter(pk=run.job_id).first()
    key = f"daily:{run.date.isoformat()}"
    daily = JobRecord.objects.filter(key=key).first() or _new_job(
        JobRecord,
        kind="daily",
        label=f"{run.date}: the crawl list and its hand-offs",
        queue="daily",
        key=key,
        created_at=run.started_at,
    )
    daily.status = DAILY_STATUS.get(run.status, "failed")
    daily.attempts = run.attempts
    daily.started_at = run.started_at
    daily.finished_at = run.finished_at
    daily.error = run.error
    beat = current.heartbeat_at if current is not None else None
    daily.heartbeat_at = beat or run.finished_at or run.started_at
    if run.crawl_list_id is not None:
        daily.counts = {**daily.counts, "crawl_list": run.crawl_list_id}
    daily.save()
    steps = JobRecord.objects.filter(queue="daily", label=f"Daily crawl list {run.date}")
    steps.exclude(pk=daily.pk).update(parent=daily)
    if current is not None and current.pk != daily.pk:
        JobRecord.objects.filter(pk=current.pk).update(parent=daily)


def _hand_off_run_onto_job(JobRecord: Any, run: Any) -> None:
    failed = run.status == "failed"
    job = JobRecord.objects.filter(pk=run.job_id).first()
    if job is None:
        job = _new_job(
            JobRecord,
            kind="hand_off",
            label=f"{run.hand_off.name}: list {run.crawl_list_id} (kept from before hand-offs "
            "had jobs)",
            queue="terminal",
            created_by_id=run.created_by_id,
            created_at=run.created_at,
            total=1,
            started_at=run.created_at,
        )
        run.job_id = job.pk
        run.save(update_fields=["job"])
    if failed and job.status != "failed":
        job.status = "failed"
        job.error = job.error or run.message or "The hand-off failed."
    elif not failed and job.status not in DONE:
        job.status, job.error = "finished", ""
    job.done = job.done if failed else max(job.done, 1)
    job.counts = {"sites": run.sites, "steps": len(run.steps or []), **job.counts}
    job.finished_at = job.finished_at or run.created_at
    job.heartbeat_at = job.heartbeat_at or job.finished_at
    if job.queue == "daily" and job.parent_id is None and run.crawl_list_id is not None:
        day = run.crawl_list.date.isoformat()
        job.parent = JobRecord.objects.filter(key=f"daily:{day}").first()
    job.save()


def forward(apps: Any, schema_editor: Any) -> None:
    JobRecord = apps.get_model("jobs", "JobRecord")
    for model, kind, prefix in (
        ("EvaluationRun", "evaluation", "evaluate"),
        ("LearnedScorer", "learning", "learn"),
    ):
        for run in apps.get_model("scheduling", model).objects.order_by("pk"):
            _stored_run_onto_job(JobRecord, run, kind, prefix)
    for daily in apps.get_model("scheduling", "DailyRun").objects.order_by("date"):
        _daily_run_onto_job(JobRecord, daily)
    runs = apps.get_model("handoff", "HandOffRun").objects.select_related("hand_off", "crawl_list")
    for run in runs.order_by("pk"):
        _hand_off_run_onto_job(JobRecord, run)


def backward(apps: Any, schema_editor: Any) -> None:
    """The runs' own fields again, from their jobs (the daily runs from the daily jobs)."""
    JobRecord = apps.get_model("jobs", "JobRecord")
    back = {"queued": "queued", "running": "running", "finished": "done", "partial": "done"}
    for model in ("EvaluationRun", "LearnedScorer"):
        for run in apps.get_model("scheduling", model).objects.exclude(job=None):
            job = JobRecord.objects.get(pk=run.job_id)
            run.status = back.get(job.status, "failed")
            run.error, run.finished_at = job.error, job.finished_at
            run.progress = 1.0 if job.status in DONE else (job.done / job.total if job.total else 0)
            if job.started_at and job.finished_at:
                run.duration_seconds = (job.finished_at - job.started_at).total_seconds()
            run.save()
    DailyRun = apps.get_model("scheduling", "DailyRun")
    for job in JobRecord.objects.filter(kind="daily"):
        DailyRun.objects.update_or_create(
            date=job.key.removeprefix("daily:"),
            defaults={
                "status": job.status if job.status in DAILY_STATUS else "failed",
                "attempts": job.attempts,
                "started_at": job.started_at or job.created_at,
                "finished_at": job.finished_at,
                "error": job.error,
            },
        )
    for run in apps.get_model("handoff", "HandOffRun").objects.exclude(job=None):
        job = JobRecord.objects.get(pk=run.job_id)
        run.status = "failed" if job.status not in DONE else ("sent" if run.sites else "empty")
        run.save(update_fields=["status"])


class Migration(migrations.Migration):
    dependencies = [
        ("jobs", "0007_key_parent_attempts"),
        ("scheduling", "0016_prior_reset_rate"),
        ("handoff", "0003_crawl_read_back"),
    ]

    operations = [migrations.RunPython(forward, backward)]
