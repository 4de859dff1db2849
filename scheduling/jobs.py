"""Background jobs of the scheduling app: evaluation runs, learned schedulers and crawl lists.

Each takes its JobRecord id first and runs inside ``jobs.runner.JobRun``; its arguments are
JSON-able (ids, ISO dates, option dicts). A learning run started in a terminal runs in place,
kept as a job too (:func:`learning_run_here`).
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import date
from typing import Any

from jobs.models import JobRecord
from jobs.runner import JobRun
from jobs.services import job_enqueue
from scheduling.cells import day_text
from scheduling.crawl_lists import CrawlListOptions, crawl_list_store
from scheduling.daily import daily_list_build
from scheduling.estimates import RecomputeOptions, estimates_recompute
from scheduling.evaluation_service import evaluation_run
from scheduling.learning import learned_scorer_run
from scheduling.models import CrawlList, EvaluationRun, LearnedScorer

PROGRESS_STEPS = 100  # the Jobs page shows an evaluation's progress in percent


def run_evaluation(record_id: int, run_id: int) -> None:
    """Run a stored evaluation; its record and ``EvaluationRun.progress`` follow the engine."""
    run = EvaluationRun.objects.get(pk=run_id)
    with JobRun.resume(record_id) as job:
        job.set_total(PROGRESS_STEPS)
        evaluation_run(run=run, progress=job.fraction)


def enqueue_evaluation(run: EvaluationRun, *, user: Any = None) -> JobRecord:
    parameters = run.parameters
    levels = " + ".join(parameters.get("levels", []))
    record = job_enqueue(
        kind=JobRecord.Kind.EVALUATION,
        func=run_evaluation,
        args=(run.pk,),
        label=f"run {run.pk}: {parameters.get('start')} to {parameters.get('end')}, {levels}",
        user=user,
        total=PROGRESS_STEPS,
    )
    EvaluationRun.objects.filter(pk=run.pk).update(job=record)
    run.job = record
    return record


def run_learning(record_id: int, scorer_id: int) -> None:
    """Learn a stored scheduler; its record and ``LearnedScorer.progress`` follow the learning."""
    scorer = LearnedScorer.objects.get(pk=scorer_id)
    with JobRun.resume(record_id, on_stop=_learning_stopped(scorer_id)) as job:
        job.set_total(PROGRESS_STEPS)
        learned_scorer_run(scorer=scorer, progress=lambda fraction, _line: job.fraction(fraction))


def _learning_stopped(scorer_id: int) -> Callable[[JobRecord, str], None]:
    """The hook of a learning job that stopped: a run left "running" (Ctrl-C, a stop signal,
    which the learning itself does not catch) is marked failed with the job's reason."""

    def stopped(record: JobRecord, reason: str) -> None:
        running = LearnedScorer.objects.filter(pk=scorer_id, status=LearnedScorer.Status.RUNNING)
        running.update(status=LearnedScorer.Status.FAILED, error=reason)

    return stopped


def enqueue_learning(scorer: LearnedScorer, *, user: Any = None) -> JobRecord:
    """Hand a stored learning run to a worker (the evaluation queue: never behind imports)."""
    record = job_enqueue(
        kind=JobRecord.Kind.LEARNING,
        func=run_learning,
        args=(scorer.pk,),
        label=learning_label(scorer),
        user=user,
        total=PROGRESS_STEPS,
    )
    LearnedScorer.objects.filter(pk=scorer.pk).update(job=record)
    scorer.job = record
    return record


def learning_run_here(
    scorer: LearnedScorer, *, progress: Callable[[float, str], None] | None = None
) -> LearnedScorer:
    """Learn a stored scheduler in this process (``learn_scorer`` in a terminal), kept as a
    job so that the Jobs page shows it beside those run by workers; errors are raised."""
    with JobRun.start(
        kind=JobRecord.Kind.LEARNING,
        label=f"{learning_label(scorer)} from the terminal",
        queue="terminal",
        total=PROGRESS_STEPS,
        on_stop=_learning_stopped(scorer.pk),
    ) as job:
        LearnedScorer.objects.filter(pk=scorer.pk).update(job=job.record)
        scorer.job = job.record

        def report(fraction: float, line: str) -> None:
            job.fraction(fraction)
            if progress is not None:
                progress(fraction, line)

        return learned_scorer_run(scorer=scorer, progress=report)


def learning_label(scorer: LearnedScorer) -> str:
    """A learning job as the Jobs page names it."""
    return (
        f"{scorer.kind.upper()} at the {scorer.level} level, learned on "
        f"{day_text(scorer.start)} to {day_text(scorer.end)} (learning run {scorer.pk})"
    )


def build_crawl_list(record_id: int, day: str, options: dict[str, Any]) -> int:
    """Build and store one crawl list; returns its id. (Nothing queues it now; kept for a job
    an earlier version queued.)"""
    with JobRun.resume(record_id) as job:
        job.set_total(1)
        stored = crawl_list_store(
            day=date.fromisoformat(day),
            options=CrawlListOptions.from_json(options),
            source=CrawlList.Source.PAGE,
        )
        job.advance(1, sites=stored.crawl_list.entries.count())
    return stored.crawl_list.pk


def daily_crawl_list() -> int:
    """Today's list with the configured defaults, as a job of its own; returns its id. The
    daily run calls ``daily_list_build`` in place; this is the job an earlier version's cron
    queued, and RQ keeps a job's result as JSON (an id, not a list)."""
    return daily_list_build().pk


def recompute_estimates(record_id: int, options: dict[str, Any] | None = None) -> None:
    """Recompute stored estimates with the ``recompute_estimates`` command's options."""
    with JobRun.resume(record_id) as job:
        job.set_total(1)
        written = estimates_recompute(**RecomputeOptions.from_json(options or {}).as_kwargs())
        job.advance(1, estimates=written)


def enqueue_recompute(options: RecomputeOptions, *, user: Any = None) -> JobRecord:
    return job_enqueue(
        kind=JobRecord.Kind.ESTIMATION,
        func=recompute_estimates,
        args=(options.to_json(),),
        label=options.describe(),
        user=user,
    )
