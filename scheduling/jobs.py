"""Background jobs of the scheduling app: evaluation runs, learned schedulers and crawl lists.

Each takes its JobRecord id first and runs inside ``jobs.runner.JobRun``; its arguments are
JSON-able (ids, ISO dates, option dicts). A learning run started in a terminal runs in place,
kept as a job too (:func:`learning_run_here`).
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import date
from typing import Any

from hacs.progress import Progress, Report, report_nothing
from jobs.models import JobRecord
from jobs.runner import JobRun
from jobs.services import job_enqueue
from scheduling.crawl_lists import CrawlListOptions, crawl_list_store
from scheduling.daily import daily_list_build
from scheduling.estimates import RecomputeOptions, estimates_recompute
from scheduling.evaluation_service import evaluation_run
from scheduling.learning import learned_scorer_run
from scheduling.models import CrawlList, EvaluationRun, LearnedScorer, StoredRun
from scheduling.runs import PROGRESS_STEPS, stored_run_kind


def run_evaluation(record_id: int, run_id: int) -> None:
    """Run a stored evaluation as its job (its record follows the engine)."""
    run = EvaluationRun.objects.get(pk=run_id)
    with JobRun.resume(record_id) as job:
        job.report(Progress(total=PROGRESS_STEPS))
        evaluation_run(run=run, job=job)


def enqueue_evaluation(run: EvaluationRun, *, user: Any = None) -> JobRecord:
    """Hand a stored evaluation to a worker."""
    return _enqueue_stored(run, run_evaluation, user=user)


def run_learning(record_id: int, scorer_id: int) -> None:
    """Learn a stored scheduler as its job (its record follows the learning)."""
    scorer = LearnedScorer.objects.get(pk=scorer_id)
    with JobRun.resume(record_id) as job:
        job.report(Progress(total=PROGRESS_STEPS))
        learned_scorer_run(scorer=scorer, job=job)


def enqueue_learning(scorer: LearnedScorer, *, user: Any = None) -> JobRecord:
    """Hand a stored learning run to a worker (the evaluation queue: never behind imports)."""
    return _enqueue_stored(scorer, run_learning, user=user)


def _enqueue_stored(run: StoredRun, func: Callable[[int, int], None], *, user: Any) -> JobRecord:
    """Queue ``run``'s job, keyed by the run unless a job of the run holds its key already,
    and link the run to it."""
    key = None if JobRecord.objects.filter(key=run.job_key).exists() else run.job_key
    kind, label = stored_run_kind(run)
    record = job_enqueue(
        kind=kind, func=func, args=(run.pk,), label=label, user=user, total=PROGRESS_STEPS, key=key
    )
    type(run)._default_manager.filter(pk=run.pk).update(job=record)
    run.job = record
    return record


def learning_run_here(scorer: LearnedScorer, *, report: Report = report_nothing) -> LearnedScorer:
    """Learn a stored scheduler in this process (``learn_scorer`` in a terminal), as a job of
    its own so that the Jobs page shows it beside those run by workers; errors are raised."""
    return learned_scorer_run(scorer=scorer, report=report)


def build_crawl_list(record_id: int, day: str, options: dict[str, Any]) -> int:
    """Build and store one crawl list; returns its id. (Nothing queues it now; kept for a job
    an earlier version queued.)"""
    with JobRun.resume(record_id) as job:
        job.report(Progress(total=1))
        stored = crawl_list_store(
            day=date.fromisoformat(day),
            options=CrawlListOptions.from_json(options),
            source=CrawlList.Source.PAGE,
        )
        job.report(Progress(done=1, counts={"sites": stored.crawl_list.entries.count()}))
    return stored.crawl_list.pk


def daily_crawl_list() -> int:
    """Today's list with the configured defaults, as a job of its own; returns its id. The
    daily run calls ``daily_list_build`` in place; this is the job an earlier version's cron
    queued, and RQ keeps a job's result as JSON (an id, not a list)."""
    return daily_list_build().pk


def recompute_estimates(record_id: int, options: dict[str, Any] | None = None) -> None:
    """Recompute stored estimates with the ``recompute_estimates`` command's options."""
    with JobRun.resume(record_id) as job:
        job.report(Progress(total=1))
        written = estimates_recompute(**RecomputeOptions.from_json(options or {}).as_kwargs())
        job.report(Progress(done=1, counts={"estimates": written}))


def enqueue_recompute(options: RecomputeOptions, *, user: Any = None) -> JobRecord:
    return job_enqueue(
        kind=JobRecord.Kind.ESTIMATION,
        func=recompute_estimates,
        args=(options.to_json(),),
        label=options.describe(),
        user=user,
    )
