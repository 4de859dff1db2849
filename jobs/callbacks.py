"""RQ's failure callback of every queued job (``jobs.services.RECORD_FAILURE`` names it)."""

from __future__ import annotations

from typing import Any

from rq.job import Job

from jobs.runner import job_rq_failed


def job_record_failure(
    job: Job, connection: Any, exc_type: type, exc: BaseException, tb: Any
) -> None:
    """Mark the job's record failed with the reason, or interrupted when RQ found the job
    abandoned (``jobs.runner.job_rq_failed``). A worker checks the name against
    ``HACS_JOB_MODULES`` before it calls it."""
    job_rq_failed(job.id, exc_type, exc)
