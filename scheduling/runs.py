"""The job of a stored evaluation or learning run: its status, progress, error and timing.

An evaluation run and a learning run keep their parameters and results; the job running them
(``jobs.runner.JobRun``) keeps where they stand. A run queued for a worker has its job from
``scheduling.jobs``; a run made in place (a command in a terminal, a test) gets one here, keyed
``evaluate:<id>`` or ``learn:<id>``.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from hacs.progress import Progress
from jobs.models import JobRecord
from jobs.runner import JobRun
from scheduling.cells import day_text
from scheduling.models import EvaluationRun, LearnedScorer, StoredRun

PROGRESS_STEPS = 100  # the pages show a run's progress in percent


def evaluation_label(run: EvaluationRun) -> str:
    """An evaluation job as the Jobs page names it."""
    parameters = run.parameters
    levels = " + ".join(parameters.get("levels", []))
    return f"run {run.pk}: {parameters.get('start')} to {parameters.get('end')}, {levels}"


def learning_label(scorer: LearnedScorer) -> str:
    """A learning job as the Jobs page names it."""
    return (
        f"{scorer.kind.upper()} at the {scorer.level} level, learned on "
        f"{day_text(scorer.start)} to {day_text(scorer.end)} (learning run {scorer.pk})"
    )


def stored_run_kind(run: StoredRun) -> tuple[str, str]:
    """The kind of ``run``'s job and its label on the Jobs page."""
    if isinstance(run, EvaluationRun):
        return JobRecord.Kind.EVALUATION, evaluation_label(run)
    assert isinstance(run, LearnedScorer)
    return JobRecord.Kind.LEARNING, learning_label(run)


def _run_in_place(run: StoredRun) -> JobRun:
    """The run's queued job run here, or a new job of the terminal (keyed by the run when it
    has had none)."""
    if run.job is not None and run.job.status == JobRecord.Status.QUEUED:
        return JobRun(run.job.pk, thread=True)
    kind, label = stored_run_kind(run)
    return JobRun.start(
        kind=kind,
        label=f"{label} from the terminal",
        queue="terminal",
        total=PROGRESS_STEPS,
        key=run.job_key if run.job is None else None,
    )


@contextmanager
def stored_run_job(run: StoredRun, job: JobRun | None = None) -> Iterator[JobRun]:
    """Run the block as ``run``'s job: ``job`` when a worker runs it, else a job made here.
    The job ends finished, or failed with the exception the block raises (raised again); the
    run's ``job`` is the job's record as it ended."""
    if job is not None:
        if run.job_id != job.record.pk:
            type(run)._default_manager.filter(pk=run.pk).update(job=job.record)
        run.job = job.record
        yield job
        return
    running = _run_in_place(run)
    try:
        with running:
            type(run)._default_manager.filter(pk=run.pk).update(job=running.record)
            run.job = running.record
            running.report(Progress(total=PROGRESS_STEPS))
            yield running
    finally:
        if hasattr(running, "record"):
            run.job = running.record
