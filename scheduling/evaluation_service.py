"""Evaluation runs: glue between the stored observations and ``hacs.evaluation``.

* :func:`~scheduling.observations.evaluation_tables_load` reads each level's observations with
  one query as an :class:`~hacs.evaluation.ObservationTable`; sites are numbered 0 … n − 1 in
  canonical-key (URL) order, which gives the engine's rankings DESIGN.md rule 8's final
  tie-break.
* :func:`evaluation_run` runs the engine for a stored :class:`EvaluationRun` and stores its result:
  the engine's dict unchanged (``curves``, ``table``, ``pak``, ``budget``, …) plus ``period`` (the
  dates as given) and ``intervals`` (the paper's Figure 6 check, :func:`interval_distribution`).
* :func:`evaluation_run_create` checks a run's parameters and stores the run, queued.

Readings (see also the engine's module docstring):

* Reference points run from ``start`` (00:00 UTC) every ``step_days`` while t ≤ ``end`` (00:00
  UTC). Observations are loaded from ``start`` − the largest history window (or the posterior's
  prior window, 12 weeks, when longer) to ``end`` + e, which is every observation any window or
  evaluation interval can hold; ``page_index`` and ``link_floor`` still refer to each page's
  full history, as the engine expects.
* Two HACS models are evaluated: ``hacs``, the paper's g with the run's ``method``, and
  ``posterior``, HACS's default reading (its prior at t fitted on the collection's 12-week
  windows ending at t; ``hacs.evaluation.windows``). Runs stored before the posterior have no
  ``posterior`` rows; the page shows them without it.
* The estimate defaults to the *interpolated* one: the paper's Section III evaluates λ̃, the mean
  interpolated-update frequency. ``observed`` is available as a parameter.
* Figure 6: ``hacs.evaluation.interval_distribution`` over [start, end].
* Learned schedulers: the newest GP4C and LWS learned at each level take part in Evaluation 2
  and the budget metrics (``scheduling.learning.learned_for_evaluation``); ``learned`` in the
  results says what each is and whether the run's period overlaps the one it learned on.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from datetime import time as clock_time
from typing import Any

import numpy as np
from numpy.typing import NDArray

from hacs import defaults
from hacs.clock import to_days
from hacs.estimators import METHODS
from hacs.evaluation import DEFAULT_PRIOR_WEEKS, DEFAULT_THETAS, evaluate, interval_distribution
from hacs.progress import Progress, Report, report_nothing
from jobs.runner import JobRun, job_records_sync_with_rq
from scheduling.learning import learned_for_evaluation, period_from_json
from scheduling.models import EvaluationRun, Level
from scheduling.observations import EvaluationTables, evaluation_tables_load
from scheduling.replays import replay_collection
from scheduling.runs import stored_run_job

__all__ = [
    "BOTH",
    "LEVEL_CHOICES",
    "PROGRESS_EVALUATE",
    "PROGRESS_LOAD",
    "EvaluationTables",
    "evaluation_run",
    "evaluation_run_create",
    "evaluation_run_refresh",
    "evaluation_tables_load",
    "interval_distribution",
    "parse_w_weeks",
]

BOTH = "both"
LEVEL_CHOICES = (
    (Level.HOMEPAGE, "Homepage"),
    (Level.WEBSITE, "Website (depth ≤ 2)"),
    (BOTH, "Both"),
)
MAX_W_WEEKS = defaults.MAX_W_WEEKS
REPLAY_DAYS = 28  # the replay section covers the period's last four weeks
_BATCH = 200_000  # rows turned into arrays at a time: bounds the Python objects alive at once
# A run's progress bar, shared as a paper-scale run spends its time (``bench.evaluation_db``:
# load 22 s, the engine 176 s, Figure 6, the intervals and the replay 82 s): loading the tables
# up to PROGRESS_LOAD, the engine up to PROGRESS_EVALUATE, the replay's days the rest.
PROGRESS_LOAD = 0.1
PROGRESS_EVALUATE = 0.7

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.int64]


# --------------------------------------------------------------------------------------------
# Parameters
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class RunParameters:
    """A run's parameters, checked. Stored as JSON in ``EvaluationRun.parameters``."""

    start: date
    end: date
    levels: tuple[str, ...]
    w_weeks: tuple[int, ...]
    method: str = "interpolated"
    e_days: float = 7.0
    step_days: float = 7.0

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> RunParameters:
        start, end = period_from_json(data, what="an evaluation run")
        if end < start:
            raise ValueError(f"end ({end}) must not be before start ({start})")
        levels = tuple(data.get("levels") or (Level.HOMEPAGE, Level.WEBSITE))
        for level in levels:
            if level not in Level.values:
                raise ValueError(f"levels must be among {', '.join(Level.values)}; got {level!r}")
        w_weeks = tuple(sorted({int(w) for w in data.get("w_weeks") or range(1, 13)}))
        if w_weeks[0] < 1 or w_weeks[-1] > MAX_W_WEEKS:
            raise ValueError(f"w_weeks must lie in 1 … {MAX_W_WEEKS}; got {list(w_weeks)}")
        method = str(data.get("method", "interpolated"))
        if method not in METHODS:
            raise ValueError(f"method must be one of {', '.join(METHODS)}; got {method!r}")
        e_days = float(data.get("e_days", 7.0))
        step_days = float(data.get("step_days", 7.0))
        if not (0 < e_days <= 365 and 0 < step_days <= 365):
            raise ValueError("e_days and step_days must be positive numbers of days (≤ 365)")
        return cls(start, end, levels, w_weeks, method, e_days, step_days)

    def to_json(self) -> dict[str, Any]:
        return {
            "start": self.start.isoformat(),
            "end": self.end.isoformat(),
            "levels": list(self.levels),
            "w_weeks": list(self.w_weeks),
            "method": self.method,
            "e_days": self.e_days,
            "step_days": self.step_days,
        }

    @property
    def start_moment(self) -> datetime:
        return datetime.combine(self.start, clock_time.min, tzinfo=UTC)

    @property
    def end_moment(self) -> datetime:
        return datetime.combine(self.end, clock_time.min, tzinfo=UTC)


def parse_w_weeks(text: str) -> list[int]:
    """History sizes written ``1-12``, ``4`` or ``1,2,4-6`` (weeks, 1 … MAX_W_WEEKS)."""
    weeks: set[int] = set()
    for part in text.replace(" ", "").split(","):
        low, dash, high = part.partition("-")
        try:
            first, last = int(low), int(high if dash else low)
        except ValueError:
            raise ValueError(f"{text!r} is not a list of weeks like 1-12 or 1,2,4") from None
        if not 1 <= first <= last <= MAX_W_WEEKS:
            raise ValueError(f"weeks must run upwards within 1 … {MAX_W_WEEKS}; got {part!r}")
        weeks.update(range(first, last + 1))
    return sorted(weeks)


def levels_of(choice: str) -> list[str]:
    """A level choice of the form or command (homepage, website, both) as a list of levels."""
    return [Level.HOMEPAGE, Level.WEBSITE] if choice == BOTH else [choice]


# --------------------------------------------------------------------------------------------
# Runs
# --------------------------------------------------------------------------------------------


def evaluation_run_create(*, parameters: Mapping[str, Any], user: Any = None) -> EvaluationRun:
    """Store a queued run after checking its parameters (``ValueError`` names the bad one)."""
    checked = RunParameters.from_json(parameters)
    return EvaluationRun.objects.create(
        parameters=checked.to_json(),
        created_by=user if getattr(user, "is_authenticated", False) else None,
    )


def evaluation_run_refresh(run: EvaluationRun) -> EvaluationRun:
    """Bring a queued or running run's job into line with RQ: it failed when its RQ job
    failed or vanished with its worker (``job_records_sync_with_rq``); the sweep marks it
    interrupted when its lease ran out. A killed worker cannot update the job itself."""
    active = (EvaluationRun.Status.QUEUED, EvaluationRun.Status.RUNNING)
    if run.status in active and run.job is not None:
        job_records_sync_with_rq([run.job])
    return run


def evaluation_run(
    *, run: EvaluationRun, report: Report = report_nothing, job: JobRun | None = None
) -> dict[str, Any]:
    """Run the evaluation ``run`` describes and store its results, as its job ``job`` (a
    worker's) or as a job of its own (``scheduling.runs.stored_run_job``).

    The job, and ``report`` too, are told the finished fraction, 0 … 1. On an error the job is
    marked failed with the message, and the error is raised again.
    """
    with stored_run_job(run, job) as running:

        def share(fraction: float) -> None:
            progress = Progress(fraction=min(max(fraction, 0.0), 1.0))
            running.report(progress)
            report(progress)

        run.results = _evaluate(RunParameters.from_json(run.parameters), share)
        run.save(update_fields=["results"])
    report(Progress(fraction=1.0))
    results: dict[str, Any] = run.results
    return results


def _evaluate(params: RunParameters, report: Callable[[float], None]) -> dict[str, Any]:
    report(0.0)
    history = timedelta(weeks=max(*params.w_weeks, DEFAULT_PRIOR_WEEKS))
    tables = evaluation_tables_load(
        levels=params.levels,
        start=params.start_moment - history,
        end=params.end_moment + timedelta(days=params.e_days),
    )
    report(PROGRESS_LOAD)
    start, end = to_days(params.start_moment), to_days(params.end_moment)
    span = PROGRESS_EVALUATE - PROGRESS_LOAD
    scorers, learned = learned_for_evaluation(
        tables, start=params.start, end=params.end, e_days=params.e_days
    )
    results = evaluate(
        tables,
        start=start,
        end=end,
        step_days=params.step_days,
        e_days=params.e_days,
        w_weeks=params.w_weeks,
        thetas=DEFAULT_THETAS,
        method=params.method,
        progress=lambda done: report(PROGRESS_LOAD + span * done),
        scorers=scorers,
    )
    results["period"] = params.to_json()
    results["learned"] = learned
    results["intervals"] = {
        level: interval_distribution(table, start=start, end=end) for level, table in tables.items()
    }
    results["replay"] = _replay(
        params, lambda done: report(PROGRESS_EVALUATE + (1 - PROGRESS_EVALUATE) * done)
    )
    return results


def _replay(params: RunParameters, progress: Callable[[float], None]) -> dict[str, Any] | None:
    """The daily list used day after day over the period's last four weeks (``simulate``), at
    the homepage level when the run covers it; None for a period shorter than a day."""
    last = params.end
    first = max(params.start, last - timedelta(days=REPLAY_DAYS))
    days = (last - first).days
    if days < 1:
        return None
    level = Level.HOMEPAGE if Level.HOMEPAGE in params.levels else params.levels[0]
    return replay_collection(level=level, start=first, days=days, progress=progress)
