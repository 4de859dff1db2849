"""Background jobs of the scheduling app: evaluation runs, learned schedulers and crawl lists.

Each takes its JobRecord id first and reports through ``jobs.services.JobProgress``.
"""

from __future__ import annotations

from datetime import date
from typing import Any

from hacs_site.clock import today
from jobs.models import JobRecord
from jobs.services import JobProgress, job_enqueue, job_record_create
from scheduling.crawl_lists import CrawlListOptions, crawl_list_build
from scheduling.daily import daily_run_follow
from scheduling.estimates import RecomputeOptions, estimates_recompute
from scheduling.evaluation_service import evaluation_run
from scheduling.learning import learned_scorer_run
from scheduling.models import DailyRun, EvaluationRun, LearnedScorer

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
    with JobProgress(record_id) as job:
        job.set_total(PROGRESS_STEPS)

        def progress(fraction: float, line: str) -> None:
            done = int(fraction * PROGRESS_STEPS) - job.record.done
            if done > 0:
                job.advance(done)

        learned_scorer_run(scorer=scorer, progress=progress)


def enqueue_learning(scorer: LearnedScorer, *, user: Any = None) -> JobRecord:
    """Hand a stored learning run to a worker (the evaluation queue: never behind imports)."""
    record = job_enqueue(
        kind=JobRecord.Kind.EVALUATION,
        func=run_learning,
        args=(scorer.pk,),
        label=f"learn {scorer.kind.upper()} {scorer.level}: {scorer.start} to {scorer.end}",
        user=user,
        total=PROGRESS_STEPS,
    )
    LearnedScorer.objects.filter(pk=scorer.pk).update(job=record)
    scorer.job = record
    return record


def build_crawl_list(record_id: int, day: str, options: dict[str, Any]) -> int:
    """Build and store one crawl list; returns its id."""
    with JobProgress(record_id) as progress:
        progress.set_total(1)
        crawl_list = crawl_list_build(
            day=date.fromisoformat(day), options=CrawlListOptions.from_json(options)
        )
        progress.advance(1, sites=crawl_list.entries.count())
    return crawl_list.pk


def daily_crawl_list(*, run: DailyRun | None = None) -> int:
    """Today's list with the configured defaults, run every morning by the RQ cron scheduler;
    its job record is tied to the day's ``run`` when given (``scheduling.daily``)."""
    day = today()
    record = job_record_create(kind=JobRecord.Kind.CRAWL_LIST, label=f"Daily crawl list {day}")
    if run is not None:
        daily_run_follow(run=run, job=record)
    return build_crawl_list(record.pk, day.isoformat(), CrawlListOptions.from_settings().to_json())


def recompute_estimates(record_id: int, options: dict[str, Any] | None = None) -> None:
    """Recompute stored estimates with the ``recompute_estimates`` command's options."""
    with JobProgress(record_id) as progress:
        progress.set_total(1)
        written = estimates_recompute(**RecomputeOptions.from_json(options or {}).as_kwargs())
        progress.advance(1, estimates=written)


def enqueue_recompute(options: RecomputeOptions, *, user: Any = None) -> JobRecord:
    return job_enqueue(
        kind=JobRecord.Kind.ESTIMATION,
        func=recompute_estimates,
        args=(options.to_json(),),
        label=options.describe(),
        user=user,
    )
