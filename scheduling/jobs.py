"""Background jobs of the scheduling app. Each takes its JobRecord id first."""

from __future__ import annotations

from typing import Any

from dashboard.models import JobRecord
from dashboard.services import JobProgress, job_enqueue
from scheduling.evaluation_service import evaluation_job_label, evaluation_run
from scheduling.models import EvaluationRun

PROGRESS_STEPS = 100  # the Jobs page shows an evaluation's progress in percent


def run_evaluation(record_id: int, run_id: int) -> None:
    """Run a stored evaluation; its record and ``EvaluationRun.progress`` follow the engine."""
    run = EvaluationRun.objects.get(pk=run_id)
    with JobProgress(record_id) as job:
        job.set_total(PROGRESS_STEPS)

        def progress(fraction: float) -> None:
            done = int(fraction * PROGRESS_STEPS) - job.record.done
            if done > 0:
                job.advance(done)

        evaluation_run(run=run, progress=progress)


def enqueue_evaluation(run: EvaluationRun, *, user: Any = None) -> JobRecord:
    return job_enqueue(
        kind=JobRecord.Kind.EVALUATION,
        func=run_evaluation,
        args=(run.pk,),
        label=evaluation_job_label(run),
        user=user,
        total=PROGRESS_STEPS,
    )
