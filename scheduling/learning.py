"""Learned schedulers: glue between the stored observations and ``hacs.learning``.

* :func:`learned_scorer_create` checks a learning run's parameters and stores it, queued;
  :func:`learned_scorer_run` learns it on one level's observations over its period and stores
  the result. GP4C (``hacs.learning.gp4c.learn_gp4c``): the function, its fitness on training
  and validation, and the training curve. LWS (``hacs.learning.lws``): the regression of the
  wait for a site's next update, trained on samples at every 7th day of the period (each
  site's timeline up to that day; the wait read from the observations up to the period's end),
  with its fit on held-out sites.
* :func:`learned_scorer_latest` is the newest finished scheduler of a kind and level, the one a
  crawl list of that method ranks by; :func:`learned_scores` scores the sites for a day with it.
* :func:`learning_period_default` is the period the Evaluation page offers to learn on: the
  collection's own history, its earlier part to learn and its later part to test;
  :func:`learned_scorer_summary` says how well a finished one learned, in words (worse than
  guessing included), and shows a GP4C function simplified (``hacs.learning.formula``).

Readings: the learning period [start, end] runs from ``start`` 00:00 UTC to ``end`` 00:00 UTC;
observations are loaded from ``start`` − the history window (or the posterior's prior window,
12 weeks, when longer) to ``end`` + e, every observation a window or evaluation interval can
hold. For a crawl list on day D the reference point is the end of D (``hacs.clock``), with
observations up to it only.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from datetime import time as clock_time
from typing import Any

import numpy as np
from django.db.models import Max, Min, Subquery
from numpy.typing import NDArray

from archive.models import Site
from hacs import defaults
from hacs.clock import reference_instant, to_days
from hacs.evaluation import (
    DEFAULT_PRIOR_WEEKS,
    TERMINALS,
    ExtraScorer,
    ObservationTable,
    window_scores,
)
from hacs.learning import gp4c, lws
from hacs.learning.formula import ReadableFormula, readable_formula, terminal_name
from hacs.learning.gp4c import (
    FITNESSES,
    GENERATIONS,
    POPULATION,
    ScoreFunction,
    learn_gp4c,
    training_periods,
)
from hacs.learning.lws import (
    LwsModel,
    evaluation_scorer,
    fit_lws,
    lws_samples,
    lws_scores,
    sample_points,
)
from hacs.progress import Progress, Report, report_nothing
from hacs.replay import Policy
from jobs.runner import JobRun
from scheduling.cells import day_text
from scheduling.estimates import timelines_load
from scheduling.models import Learned, LearnedScorer, Level
from scheduling.observations import EpochMilliseconds, evaluation_tables_load, observations_queryset
from scheduling.runs import stored_run_job

__all__ = [
    "LearnParameters",
    "learned_for_evaluation",
    "learned_replay_policies",
    "NoLearnedScorer",
    "UnusableLearnedScorer",
    "learned_scorer_create",
    "learned_scorer_latest",
    "learned_scorer_run",
    "learned_scores",
]

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.int64]

_PROGRESS_LOAD = 0.1  # share of the progress bar given to loading the observations


class NoLearnedScorer(LookupError):
    """No finished scheduler of the kind and level has been learned yet."""


class UnusableLearnedScorer(NoLearnedScorer):
    """The newest finished scheduler's stored model cannot be read back (edited or corrupt,
    e.g. a GP4C function nested deeper than ``gp4c.MAX_LOADED_DEPTH``); the message says which
    and what to do. A ``NoLearnedScorer``, so that forms and commands say it the same way."""


def period_from_json(data: Mapping[str, Any], *, what: str) -> tuple[date, date]:
    """The ``start`` and ``end`` dates of a run's stored parameters (ISO dates), checked: an
    evaluation run's and a learning run's alike."""
    try:
        start = date.fromisoformat(str(data["start"]))
        end = date.fromisoformat(str(data["end"]))
    except KeyError as missing:
        raise ValueError(f"{what} needs {missing}") from None
    except ValueError as error:
        raise ValueError(f"start and end must be dates like 2018-06-01 ({error})") from None
    return start, end


@dataclass(frozen=True)
class LearnParameters:
    """A learning run's parameters, checked; stored as JSON in ``LearnedScorer.parameters``."""

    kind: str
    level: str
    start: date
    end: date
    w_weeks: int = 12
    e_days: float = 7.0
    method: str = "observed"
    fitness: str = "ndcg"
    budget_fraction: float = 0.05
    generations: int = GENERATIONS
    population: int = POPULATION
    seed: int = 0

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> LearnParameters:
        start, end = period_from_json(data, what="a learning run")
        kind = str(data.get("kind", Learned.GP4C))
        if kind not in Learned.values:
            raise ValueError(f"kind must be one of {', '.join(Learned.values)}; got {kind!r}")
        level = str(data.get("level", Level.HOMEPAGE))
        if level not in Level.values:
            raise ValueError(f"level must be one of {', '.join(Level.values)}; got {level!r}")
        params = cls(
            kind=kind,
            level=level,
            start=start,
            end=end,
            w_weeks=_whole(data, "w_weeks", 12, 1, defaults.MAX_W_WEEKS),
            e_days=float(data.get("e_days", 7.0)),
            method=str(data.get("method", "observed")),
            fitness=str(data.get("fitness", "ndcg")),
            budget_fraction=float(data.get("budget_fraction", 0.05)),
            generations=_whole(data, "generations", GENERATIONS, 1, 1000),
            population=_whole(data, "population", POPULATION, 2, 10_000),
            seed=_whole(data, "seed", 0, 0, 2**31 - 1),
        )
        if params.fitness not in FITNESSES:
            raise ValueError(
                f"fitness must be one of {', '.join(FITNESSES)}; got {params.fitness!r}"
            )
        if not 0 < params.budget_fraction <= 1:
            raise ValueError(f"budget_fraction must lie in (0, 1]; got {params.budget_fraction}")
        if not 0 < params.e_days <= 365:
            raise ValueError(
                f"e_days must be a positive number of days (≤ 365); got {params.e_days}"
            )
        training_periods(0.0, float((end - start).days), params.e_days)  # long enough?
        return params

    def to_json(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "level": self.level,
            "start": self.start.isoformat(),
            "end": self.end.isoformat(),
            "w_weeks": self.w_weeks,
            "e_days": self.e_days,
            "method": self.method,
            "fitness": self.fitness,
            "budget_fraction": self.budget_fraction,
            "generations": self.generations,
            "population": self.population,
            "seed": self.seed,
        }

    def describe(self) -> str:
        return (
            f"{self.kind.upper()} at {self.level} level, learned on {day_text(self.start)} to "
            f"{day_text(self.end)}"
        )


def _whole(data: Mapping[str, Any], name: str, default: int, low: int, high: int) -> int:
    value = data.get(name, default)
    if isinstance(value, bool) or not isinstance(value, int | str):
        raise ValueError(f"{name} must be a whole number; got {value!r}")
    try:
        number = int(value)
    except ValueError:
        raise ValueError(f"{name} must be a whole number; got {value!r}") from None
    if not low <= number <= high:
        raise ValueError(f"{name} must lie in {low} … {high}; got {number}")
    return number


def _midnight(day: date) -> datetime:
    return datetime.combine(day, clock_time.min, tzinfo=UTC)


def learned_scorer_create(*, parameters: Mapping[str, Any], user: Any = None) -> LearnedScorer:
    """Store a queued learning run after checking its parameters (``ValueError`` names the
    bad one)."""
    checked = LearnParameters.from_json(parameters)
    return LearnedScorer.objects.create(
        kind=checked.kind,
        level=checked.level,
        start=checked.start,
        end=checked.end,
        parameters=checked.to_json(),
        created_by=user if getattr(user, "is_authenticated", False) else None,
    )


def learned_scorer_run(
    *, scorer: LearnedScorer, report: Report = report_nothing, job: JobRun | None = None
) -> LearnedScorer:
    """Learn what ``scorer`` describes and store the result, as its job ``job`` (a worker's)
    or as a job of its own (``scheduling.runs.stored_run_job``).

    The job, and ``report`` too, are told the finished fraction (0 … 1) and the stage (the best
    fitness so far). On an error the job is marked failed with the message, and the error is
    raised again.
    """
    params = LearnParameters.from_json(scorer.parameters)
    with stored_run_job(scorer, job) as running:

        def stage(fraction: float, line: str) -> None:
            progress = Progress(fraction=min(max(fraction, 0.0), 1.0), notes={"stage": line})
            running.report(progress)
            report(progress)

        for name, value in _learn(params, stage).items():
            setattr(scorer, name, value)
        scorer.save(update_fields=LEARNED_FIELDS)
    return scorer


#: What a learning run stores besides its status: the model and how well it learned.
LEARNED_FIELDS = ("model", "curve", "training_fitness", "validation_fitness")


def _learn(params: LearnParameters, report: Callable[[float, str], None]) -> dict[str, Any]:
    return _learn_lws(params, report) if params.kind == Learned.LWS else _learn_gp4c(params, report)


def _learn_lws(params: LearnParameters, report: Callable[[float, str], None]) -> dict[str, Any]:
    report(0.0, "loading the observations")
    timelines = timelines_load(level=params.level, end=_midnight(params.end))
    report(
        _PROGRESS_LOAD,
        f"{timelines.times.size:,} observations of {timelines.site_ids.size:,} sites",
    )
    start, end = to_days(_midnight(params.start)), to_days(_midnight(params.end))
    x, y, site, _ = lws_samples(
        timelines.times,
        timelines.updated,
        timelines.offsets,
        sample_points(start, end),
        horizon_end=end,
        new_links=timelines.new_links,
        page=timelines.page,
    )
    if y.size < 2:
        raise ValueError(_too_few(params, f"({y.size} samples)"))
    report(0.5, f"fitting on {y.size:,} samples")
    model = fit_lws(x, y, seed=params.seed, groups=site, period=(start, end))
    report(1.0, "fitted")
    return {
        "model": model.to_dict(),
        "curve": None,
        "training_fitness": None,
        "validation_fitness": model.held_out_r2,
    }


def _learn_gp4c(params: LearnParameters, report: Callable[[float, str], None]) -> dict[str, Any]:
    report(0.0, "loading the observations")
    history = timedelta(weeks=max(params.w_weeks, DEFAULT_PRIOR_WEEKS))
    tables = evaluation_tables_load(
        levels=[params.level],
        start=_midnight(params.start) - history,
        end=_midnight(params.end) + timedelta(days=params.e_days),
    )
    table = tables[params.level]
    if not table.size:
        raise ValueError(_too_few(params, "(no observation)"))
    report(_PROGRESS_LOAD, f"{table.size:,} observations of {table.site_count:,} sites")

    def generation(done: int, best: float) -> None:
        share = done / params.generations
        line = f"generation {done}/{params.generations}: best {params.fitness} {best:.4f}"
        report(_PROGRESS_LOAD + (1 - _PROGRESS_LOAD) * share, line)

    evolution = learn_gp4c(
        table,
        start=to_days(_midnight(params.start)),
        end=to_days(_midnight(params.end)),
        w_weeks=params.w_weeks,
        e_days=params.e_days,
        method=params.method,
        website=params.level == Level.WEBSITE,
        fitness=params.fitness,
        budget_fraction=params.budget_fraction,
        generations=params.generations,
        population=params.population,
        seed=params.seed,
        progress=generation,
    )
    alone = {expr: valid for expr, _train, valid in evolution.finalists if expr in TERMINALS}
    return {
        "model": {
            "expression": evolution.function.expression,
            "formula": evolution.function.formula,
            "evaluations": evolution.evaluations,
            # What the function is judged against on the validation period (its fitness
            # there is ``validation_fitness``): each terminal alone and Random's expectation.
            "baselines": {"terminals": alone, "random": _json_number(evolution.random_validation)},
        },
        "curve": {
            "best": list(evolution.best_per_generation),
            "mean": list(evolution.mean_per_generation),
        },
        "training_fitness": evolution.training_fitness,
        "validation_fitness": evolution.validation_fitness,
    }


def _json_number(value: float) -> float | None:
    """A float as JSON stores it: NaN (undefined) as null."""
    return None if not np.isfinite(value) else float(value)


def _too_few(params: LearnParameters, counted: str) -> str:
    """Why a period gave nothing to learn from, and which period would."""
    history = learning_history(level=params.level)
    where = (
        f"the collection's {params.level} observations run from {day_text(history[0])} to "
        f"{day_text(history[1])}; learn on the earlier part of that (the Evaluation page "
        "offers it)"
        if history
        else "no observations are stored yet: import the collection's archive history first"
    )
    return (
        f"the period {day_text(params.start)} to {day_text(params.end)} holds too few "
        f"updates to learn from {counted}; {where}"
    )


# --- The period to learn on, and how well it learned --------------------------------------------

#: The share of the collection's history the default learning period takes (its earlier part);
#: the rest is left to test what is learned. The same split as GP4C's own inside its period
#: (``gp4c.training_periods``: 2/3 to train, 1/3 to choose the function), so a default GP4C run
#: trains on 4/9 of the history, chooses on 2/9 and is tested on the last third.
LEARN_SHARE = 2 / 3
_GAP_DAYS = 7  # e: a test period starts this long after learning ends, so none of it is learned


def learning_history(*, level: str) -> tuple[date, date] | None:
    """The first and the last day (UTC) with an observation at ``level``; None when there is
    none. One query: at the homepage level (the Evaluation page's) two reads of the partial
    index ``capture_homepage_time``, one from each end, in two subqueries; at the website level
    an aggregate over the observations."""
    rows = observations_queryset(level=level, start=None, end=None, site_ids=None)
    ends: Mapping[str, Any]
    if level == Level.HOMEPAGE:
        times = rows.values("timestamp")
        ends = (
            Site.objects.order_by()
            .annotate(
                first=Subquery(times.order_by("timestamp")[:1]),
                last=Subquery(times.order_by("-timestamp")[:1]),
            )
            .values("first", "last")
            .first()  # a site holds every observation
        ) or {"first": None, "last": None}
    else:
        ends = rows.aggregate(first=Min("timestamp"), last=Max("timestamp"))
    if ends["first"] is None or ends["last"] is None:
        return None
    return ends["first"].astimezone(UTC).date(), ends["last"].astimezone(UTC).date()


@dataclass(frozen=True)
class LearningPeriod:
    """A period to learn on (``start`` … ``end``), the later one that tests it (``test_start``
    … ``test_end``, None when the history leaves none) and ``note``, a sentence saying so."""

    start: date
    end: date
    test_start: date | None
    test_end: date | None
    note: str


_UNREAD: Any = object()


def learning_period_default(
    *, level: str, today: date, history: tuple[date, date] | None = _UNREAD
) -> LearningPeriod:
    """The collection's own history at ``level`` (``learning_history``, or ``history`` when the
    caller has read it): its first ``LEARN_SHARE`` to learn on, the rest, from e after learning
    ends to the last observation, to test it. A history too short to leave a test period is
    learned on whole; with no observation at all, the year before ``today`` is offered and the
    note says that nothing can be learned yet."""
    if history is _UNREAD:
        history = learning_history(level=level)
    if history is None:
        return LearningPeriod(
            start=today - timedelta(days=365),
            end=today,
            test_start=None,
            test_end=None,
            note="No observations are stored yet, so nothing can be learned: import the "
            "collection's archive history first (Upload seeds, or import_archive).",
        )
    first, last = history
    span = (last - first).days
    end = first + timedelta(days=round(span * LEARN_SHARE))
    if not _learnable(first, end) or (last - end).days <= 2 * _GAP_DAYS:
        whole = f"{day_text(first)} to {day_text(last)}"
        return LearningPeriod(
            start=first,
            end=last,
            test_start=None,
            test_end=None,
            note=f"The collection's {level} history ({whole}) is too short to keep a later "
            "part for testing: the form learns on all of it. Evaluate a later period once "
            "more history is imported.",
        )
    test_start, test_end = end + timedelta(days=_GAP_DAYS), last - timedelta(days=_GAP_DAYS)
    return LearningPeriod(
        start=first,
        end=end,
        test_start=test_start,
        test_end=test_end,
        note=f"The first two thirds of the collection's {level} history, {day_text(first)} "
        f"to {day_text(end)}; evaluate {day_text(test_start)} to {day_text(test_end)} to "
        "test what it learns.",
    )


def _learnable(start: date, end: date) -> bool:
    """Whether a learning period is long enough for GP4C (``gp4c.training_periods``)."""
    try:
        training_periods(0.0, float((end - start).days))
    except ValueError:
        return False
    return True


@dataclass(frozen=True)
class LearnedFit:
    """How well a finished scheduler learned, as a sentence; ``worse`` when it does worse than
    the baseline it is measured against (LWS: predicting the mean wait; GP4C: crawling at
    random, or one of its terminals alone)."""

    sentence: str
    worse: bool = False


@dataclass(frozen=True)
class LearnedSummary:
    """What the Evaluation page and ``learn_scorer`` say of a finished scheduler: its fit,
    and a GP4C function simplified (None for LWS, or a function that cannot be read)."""

    fit: LearnedFit
    formula: ReadableFormula | None


def learned_scorer_summary(scorer: LearnedScorer) -> LearnedSummary:
    """How well ``scorer`` (finished) learned, in words, and its formula for people; a stored
    run that cannot be read back (edited or corrupt) says so instead."""
    try:
        _loaded(scorer)
    except UnusableLearnedScorer as error:
        return LearnedSummary(LearnedFit(str(error), worse=True), None)
    if scorer.kind == Learned.LWS:
        return LearnedSummary(_lws_fit(scorer.validation_fitness), None)
    model = scorer.model or {}  # _loaded checked it holds an expression
    params = LearnParameters.from_json(scorer.parameters)
    baselines = model.get("baselines")
    return LearnedSummary(
        _gp4c_fit(
            str(model["expression"]),
            scorer.validation_fitness,
            baselines if isinstance(baselines, Mapping) else {},
            metric=_metric_name(params.fitness, params.budget_fraction),
        ),
        readable_formula(str(model["expression"])),
    )


def _metric_name(fitness: str, fraction: float) -> str:
    name = "NDCG" if fitness == "ndcg" else "ChangeRate"
    return f"{name} at a {fraction * 100:g} % crawl budget"


def _lws_fit(r2: float | None) -> LearnedFit:
    """LWS's R² of the log wait on held-out sites against predicting their mean (R² = 0)."""
    if r2 is None:
        return LearnedFit("No held-out fit: too few sites to hold some out.")
    if r2 < 0:
        return LearnedFit(
            f"Worse than guessing: R² {_signed(r2, 3)} on held-out sites, so predicting every "
            "site's wait as the mean wait would fit better. Rank by HACS's probability instead, "
            "or learn on a longer period.",
            worse=True,
        )
    return LearnedFit(
        f"R² {r2:.3f} on held-out sites: it explains {r2 * 100:.1f} % of how the wait for the "
        f"next update varies between sites (the mean wait explains none), {_how_much(r2)}."
    )


def _how_much(r2: float) -> str:
    """R² in words a librarian can weigh (Cohen's conventions for R² are .02, .13 and .26)."""
    if r2 < 0.02:
        return "hardly better than guessing the mean wait for every site"
    if r2 < 0.13:
        return "a little better than guessing the mean wait"
    if r2 < 0.26:
        return "clearly better than guessing the mean wait"
    return "much better than guessing the mean wait"


def _gp4c_fit(
    expression: str, fitness: float | None, baselines: Mapping[str, Any], *, metric: str
) -> LearnedFit:
    """GP4C's validation fitness against Random's expectation and each terminal alone."""
    if fitness is None:
        return LearnedFit("No validation fitness was recorded.")
    shown = f"{metric} on the validation period {fitness:.3f}"
    chance = _stored_number(baselines.get("random"))
    terminals = baselines.get("terminals")
    alone = {
        str(name): number
        for name, value in (terminals.items() if isinstance(terminals, Mapping) else ())
        if (number := _stored_number(value)) is not None
    }
    if not baselines:  # learned before baselines were kept
        return LearnedFit(f"{shown}.")
    if chance is None:
        return LearnedFit(
            f"{shown}, but the validation period holds no update, so this says nothing: learn "
            "on a period with updates.",
            worse=True,
        )
    if fitness < chance:
        return LearnedFit(
            f"Worse than guessing: {shown}, below crawling at random ({chance:.3f} expected). "
            "Rank by HACS's probability instead, or learn on a longer period.",
            worse=True,
        )
    best = max(alone.items(), key=lambda item: item[1], default=None)
    if best is not None and fitness < best[1]:
        return LearnedFit(
            f"Worse than one of its terminals alone: {shown}, against "
            f"{best[1]:.3f} for {terminal_name(best[0])}. Learn again on a longer period or "
            "with more generations.",
            worse=True,
        )
    if expression in TERMINALS:
        return LearnedFit(
            f"No evolved formula did better than one terminal alone: it ranks by "
            f"{terminal_name(expression)}; {shown}, against {chance:.3f} for crawling at random."
        )
    against = f"the best terminal alone, {terminal_name(best[0])}, {best[1]:.3f}; " if best else ""
    return LearnedFit(f"{shown}, against {against}crawling at random {chance:.3f}.")


def _stored_number(value: Any) -> float | None:
    """A number read back from a stored run's JSON, or None when it holds something else."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value) if math.isfinite(value) else None


def _signed(value: float, places: int) -> str:
    return f"{value:.{places}f}".replace("-", "−")


def learned_scorer_latest(kind: str, level: str) -> LearnedScorer:
    """The newest finished scheduler of ``kind`` at ``level``; :class:`NoLearnedScorer` with
    a sentence saying how to learn one when there is none."""
    found = (
        LearnedScorer.objects.done()
        .filter(kind=kind, level=level)
        .order_by("-job__finished_at", "-pk")
        .first()
    )
    if found is None:
        label = Learned(kind).label.split(",")[0]
        raise NoLearnedScorer(
            f"No {label} scheduler has been learned at the {level} level yet: learn one with "
            f"`manage.py learn_scorer --kind {kind} --level {level} --start … --end …` "
            "or on the Evaluation page."
        )
    _loaded(found)  # a model that cannot be read back is said here, where forms ask
    return found


@dataclass(frozen=True)
class LearnedScores:
    """Each scored site's ``Site`` pk and score (higher first) on a day."""

    site_ids: IntArray
    scores: FloatArray


@dataclass(frozen=True)
class NewestCopies:
    """Each site's newest observation (days) before an instant, by ``Site`` pk ascending."""

    site_ids: IntArray
    times: FloatArray


def newest_copies(*, level: str, end: datetime) -> NewestCopies:
    """The newest observation at ``level`` of every site observed by ``end``: one aggregate
    query, in the days the timelines use (whole milliseconds, ``EpochMilliseconds``)."""
    rows = (
        observations_queryset(level=level, start=None, end=end, site_ids=None)
        .order_by()
        .values("site_id")
        .annotate(last=Max(EpochMilliseconds("timestamp")))
        .order_by("site_id")
        .values_list("site_id", "last")
    )
    found = np.array(list(rows), dtype=np.int64).reshape(-1, 2)
    return NewestCopies(found[:, 0], found[:, 1].astype(np.float64) / 1e3 / 86400.0)


def learned_scores(scorer: LearnedScorer, *, day: date, e_days: float) -> LearnedScores:
    """Score the sites for ``day``, from the observations before its end: GP4C every site with
    an observation, its window's terminals for those observed in its history window and
    ``gp4c.empty_window_terminals`` for the rest, with the function's own e; LWS every site
    with an observation, ranking by the updates expected since its newest copy by the end of
    the day plus ``e_days`` (the list's horizon)."""
    params = LearnParameters.from_json(scorer.parameters)
    t = reference_instant(day)
    learned = _loaded(scorer)
    if isinstance(learned, LwsModel):
        timelines = timelines_load(level=scorer.level, end=t - timedelta(microseconds=1))
        last = timelines.offsets[1:] - 1
        scores = lws_scores(
            learned,
            timelines.times,
            timelines.updated,
            timelines.offsets,
            timelines.times[last],
            to_days(t),
            e_days,
            new_links=timelines.new_links,
            page=timelines.page,
        )
        return LearnedScores(site_ids=timelines.site_ids, scores=scores)
    history = timedelta(weeks=max(params.w_weeks, DEFAULT_PRIOR_WEEKS))
    tables = evaluation_tables_load(
        levels=[scorer.level], start=t - history, end=t - timedelta(microseconds=1)
    )
    found = window_scores(
        tables[scorer.level],
        t=to_days(t),
        w_weeks=params.w_weeks,
        e_days=params.e_days,
        method=params.method,
        website=scorer.level == Level.WEBSITE,
    )
    site_ids = tables.site_ids[found.site]
    scores = learned.score(found.terminals)
    # Every other site with a copy before the day: scored from its newest copy as a window
    # without observations reads (gp4c.empty_window_terminals), so that the list ranks it by
    # the function too.
    newest = newest_copies(level=scorer.level, end=t - timedelta(microseconds=1))
    rest = np.setdiff1d(newest.site_ids, site_ids)
    if rest.size:
        copies = newest.times[np.searchsorted(newest.site_ids, rest)]
        columns = gp4c.empty_window_terminals(to_days(t), params.e_days, copies, found.prior)
        site_ids = np.concatenate([site_ids, rest])
        scores = np.concatenate([scores, learned.score(columns)])
    return LearnedScores(site_ids=site_ids, scores=scores)


def learned_for_evaluation(
    tables: Mapping[str, ObservationTable], *, start: date, end: date, e_days: float
) -> tuple[dict[str, dict[str, ExtraScorer]], list[dict[str, Any]]]:
    """The newest finished scheduler of each kind at each level, as Evaluation 2 models
    (``hacs.evaluation.evaluate``'s ``scorers``), and what the Evaluation page says of each:
    its period, parameters, model and fit, and whether the evaluated period [start, end + e]
    overlaps the period it learned on (then its figures there are not test figures)."""
    scorers: dict[str, dict[str, ExtraScorer]] = {}
    shown: list[dict[str, Any]] = []
    for level, table in tables.items():
        for scorer in _newest(level):
            kind = scorer.kind
            params = LearnParameters.from_json(scorer.parameters)
            learned = _loaded(scorer)
            scorers.setdefault(level, {})[kind] = (
                _function_scorer(learned)
                if isinstance(learned, ScoreFunction)
                else evaluation_scorer(learned, table, e_days)
            )
            overlap = start < scorer.end + timedelta(days=params.e_days) and scorer.start <= end
            shown.append(
                {
                    "id": scorer.pk,
                    "kind": kind,
                    "level": level,
                    "start": scorer.start.isoformat(),
                    "end": scorer.end.isoformat(),
                    "parameters": params.to_json(),
                    "model": scorer.model,
                    "curve": scorer.curve,
                    "training_fitness": scorer.training_fitness,
                    "validation_fitness": scorer.validation_fitness,
                    "overlaps": overlap,
                }
            )
    return scorers, shown


def _function_scorer(function: ScoreFunction) -> ExtraScorer:
    def score(t: float, sites: IntArray, columns: Mapping[str, FloatArray]) -> FloatArray:
        return function.score(columns)

    return score


def learned_replay_policies(level: str) -> dict[str, tuple[Policy, str]]:
    """The newest finished scheduler of each kind at ``level`` as a replay policy, with its
    label (kind and learning period)."""
    policies: dict[str, tuple[Policy, str]] = {}
    for scorer in _newest(level):
        params = LearnParameters.from_json(scorer.parameters)
        learned = _loaded(scorer)
        policy = (
            gp4c.replay_policy(learned, w_weeks=params.w_weeks, e_days=params.e_days)
            if isinstance(learned, ScoreFunction)
            else lws.replay_policy(learned)
        )
        label = (
            f"{scorer.kind.upper()}, learned on {day_text(scorer.start)} to {day_text(scorer.end)}"
        )
        policies[scorer.kind] = (policy, label)
    return policies


def _newest(level: str) -> list[LearnedScorer]:
    """The newest finished scheduler of each kind at ``level`` (kinds with none left out)."""
    found = []
    for kind in Learned.values:
        try:
            found.append(learned_scorer_latest(kind, level))
        except UnusableLearnedScorer:
            raise  # said, not skipped as if none had been learned
        except NoLearnedScorer:
            continue
    return found


def _loaded(scorer: LearnedScorer) -> ScoreFunction | LwsModel:
    """What a stored scheduler ranks with: GP4C's function or the LWS model;
    :class:`UnusableLearnedScorer` when the stored model cannot be read back."""
    try:
        # Its parameters too: every list and replay reads them (its window, its e).
        if not isinstance(scorer.parameters, Mapping) or not isinstance(scorer.model, Mapping):
            raise TypeError("they are not a JSON object")
        LearnParameters.from_json(scorer.parameters)
    except (ValueError, TypeError) as error:
        raise _unusable(scorer, f"its parameters are not usable ({error})") from None
    try:
        if scorer.kind == Learned.GP4C:
            return ScoreFunction(str(scorer.model["expression"]))
        return LwsModel.from_dict(scorer.model)
    except (KeyError, ValueError, TypeError) as error:
        reason = f"its model has no {error}" if isinstance(error, KeyError) else str(error)
        raise _unusable(scorer, reason) from None


def _unusable(scorer: LearnedScorer, reason: str) -> UnusableLearnedScorer:
    return UnusableLearnedScorer(
        f"The {scorer.kind.upper()} scheduler learned at the {scorer.level} level on "
        f"{day_text(scorer.start)} to {day_text(scorer.end)} (learning run {scorer.pk}) cannot "
        "be read back: "
        f"{reason}. Learn a new one with `manage.py learn_scorer --kind {scorer.kind} "
        f"--level {scorer.level} --start … --end …` or on the Evaluation page."
    )
