"""Estimates from stored captures: glue between the observation loader and the pure core.

Observation data is read once per call as flat NumPy arrays (``timelines_load``), window-relative
update flags are derived with array operations from each observation's ``page_index`` and
``link_floor`` (DESIGN's speed hint), and every site is estimated in one call to
``hacs.estimators.estimate_many``. :class:`RecomputeOptions` carries the ``recompute_estimates``
command's options to a background job unchanged.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import date, datetime
from typing import Any

import numpy as np
from django.db import transaction
from django.db.models import ExpressionWrapper, F, FloatField, Value
from django.db.models.functions import Greatest, Ln
from numpy.typing import NDArray

from archive.health import sites_health_update
from archive.models import Site
from hacs.bayes import (
    GammaPrior,
    IntervalEvidence,
    change_dispersion,
    fit_interval_prior,
    fit_reset_rate,
    interval_bounds,
    interval_credible_bounds,
    interval_evidence,
    interval_posterior,
)
from hacs.clock import day_end, day_start, from_days
from hacs.estimators import RateEstimates, estimate_many
from hacs.updates import timeline_order, window_update_flags
from hacs.website import fit_page_prior, page_links, website_posterior
from scheduling.models import Estimate, Level, Method, RatePrior
from scheduling.observations import Observations, known_page_counts, observations_load

FloatArray = NDArray[np.float64]


@dataclass(frozen=True)
class Timelines:
    """Observation timelines of many sites, back to back (site i owns offsets[i]:offsets[i+1])."""

    site_ids: NDArray[np.int64]
    times: NDArray[np.float64]
    updated: NDArray[np.bool_]
    offsets: NDArray[np.int64]
    # Each observation's page (numbered from 0) and the links no earlier copy of it held.
    page: NDArray[np.int64] | None = None
    new_links: NDArray[np.int64] | None = None


@dataclass(frozen=True)
class LevelPrior:
    """A level's collection prior: on a site's rate (homepage) or on one page's rate with κ,
    the new links per update (website; ``hacs.website``), and φ, the evidence's dispersion:
    of the changed intervals (homepage; ``hacs.bayes.change_dispersion``) or of the new links
    (website; ``hacs.website.link_dispersion``); at homepage level ρ, how often a site's rate
    starts afresh from the prior (``hacs.bayes.fit_reset_rate``)."""

    gamma: GammaPrior
    links_per_update: float = 1.0
    dispersion: float = 1.0
    reset_rate: float = 0.0


def timelines_load(
    *,
    level: str,
    start: datetime | None = None,
    end: datetime | None = None,
    site_ids: Sequence[int] | None = None,
) -> Timelines:
    """The level's observation timelines in [start, end], flagged relative to that window.

    Rule 3 flags each observation for its own page within the window (its first observation
    there is the baseline); rule 4 merges each site's pages in time order (page, then page
    index, break ties so that runs are reproducible).
    """
    return _timelines(observations_load(level=level, start=start, end=end, site_ids=site_ids))


def _timelines(found: Observations) -> Timelines:
    if found.time.size == 0:
        empty_i = np.zeros(0, dtype=np.int64)
        return Timelines(
            empty_i, np.zeros(0), np.zeros(0, dtype=bool), np.zeros(1, np.int64), empty_i, empty_i
        )
    flags = window_update_flags(found.page, found.page_index, found.link_floor)
    order = timeline_order(found.site_pk, found.time, found.page, found.page_index)
    site, times, flags = found.site_pk[order], found.time[order], flags[order]
    starts = np.flatnonzero(np.r_[True, site[1:] != site[:-1]])
    offsets = np.r_[starts, site.size].astype(np.int64)
    return Timelines(site[starts], times, flags, offsets, found.page[order], found.new_links[order])


def estimates_for_window(
    *,
    level: str,
    method: str,
    start: datetime | None = None,
    end: datetime | None = None,
    site_ids: Sequence[int] | None = None,
    prior: LevelPrior | None = None,
) -> dict[int, Estimate]:
    """Unsaved estimates, one per site with observations in the window.

    The posterior method needs the collection's prior: ``prior`` when given; else fitted on the
    window's sites when they are all of them (``site_ids`` None), else the stored one
    (:func:`prior_for`). At website level the posterior is the sum of the posteriors of the
    site's pages known up to ``end``, each from its new links in the window (``hacs.website``).
    """
    found = observations_load(level=level, start=start, end=end, site_ids=site_ids)
    timelines = _timelines(found)
    times, updated, offsets = timelines.times, timelines.updated, timelines.offsets
    mle = estimate_many(
        times,
        updated,
        offsets,
        method=Method.INTERPOLATED if method == Method.INTERPOLATED else Method.OBSERVED,
    )
    evidence = interval_evidence(times, updated, offsets)
    if method != Method.POSTERIOR:
        readings = _Readings.of_rates(mle.rate)
        return _window_estimates(timelines, mle, evidence, readings, level, method, start, end)
    if prior is None:
        prior = (
            _prior_of(level, found, timelines)
            if site_ids is None
            else prior_for(level=level, start=start, end=end)
        )
    if level == Level.WEBSITE:
        readings = _website_readings(prior, found, timelines, end=end, site_ids=site_ids)
    else:
        readings = _homepage_readings(prior, evidence)
    return _window_estimates(timelines, mle, evidence, readings, level, method, start, end)


@dataclass(frozen=True)
class _Readings:
    """Per site: the rate, the posterior's Gamma (shape, rate), the credible interval of the
    mean interval, whether it is open, and the prior's credibility weight (NaN where a method
    has none)."""

    rate: NDArray[np.float64]
    alpha: NDArray[np.float64]
    beta: NDArray[np.float64]
    low: NDArray[np.float64]
    high: NDArray[np.float64]
    share: NDArray[np.float64]
    is_open: NDArray[np.bool_]

    @classmethod
    def of_rates(cls, rate: NDArray[np.float64]) -> _Readings:
        """A method without a posterior: its rates alone."""
        nothing = np.full(rate.size, np.nan)
        is_open = np.zeros(rate.size, dtype=np.bool_)
        return cls(rate, nothing, nothing, nothing, nothing, nothing, is_open)

    @classmethod
    def posterior(
        cls,
        prior: LevelPrior,
        alpha: NDArray[np.float64],
        beta: NDArray[np.float64],
        low: NDArray[np.float64],
        high: NDArray[np.float64],
        is_open: NDArray[np.bool_],
    ) -> _Readings:
        """The posterior's readings: its mean rate and the prior's weight in it."""
        # The credibility weight of the prior: the posterior mean is share · prior mean +
        # (1 − share) · the copies' own rate, share = β_prior / β (matched Gamma at both levels).
        with np.errstate(divide="ignore", invalid="ignore"):
            share = np.clip(prior.gamma.rate / beta, 0.0, 1.0)
        return cls(alpha / beta, alpha, beta, low, high, share, is_open)


def _website_readings(
    prior: LevelPrior,
    found: Observations,
    timelines: Timelines,
    *,
    end: datetime | None,
    site_ids: Sequence[int] | None,
) -> _Readings:
    """The website posterior: the sum of the posteriors of the site's pages known up to
    ``end``, each from its new links in the window (``hacs.website``)."""
    site_index = np.searchsorted(timelines.site_ids, found.site_pk)
    pages = page_links(site_index, found.page, found.time, found.new_links)
    known = known_page_counts(level=Level.WEBSITE, end=end, site_ids=site_ids)
    known_pages = [known[site_id] for site_id in timelines.site_ids.tolist()]
    n_sites, kappa = timelines.site_ids.size, prior.links_per_update
    alpha, beta = website_posterior(pages, n_sites, prior.gamma, kappa, known_pages)
    # The interval reads the links' dispersion; the rate and p do not (hacs.website).
    low, high = interval_credible_bounds(alpha, beta, dispersion=prior.dispersion)
    return _Readings.posterior(prior, alpha, beta, low, high, np.zeros(alpha.size, np.bool_))


def _homepage_readings(prior: LevelPrior, evidence: IntervalEvidence) -> _Readings:
    """The homepage posterior: the rate now, its rate starting afresh at the prior's reset rate
    (hacs.ranking.default_posterior reads the replay's timelines the same way)."""
    alpha, beta = interval_posterior(prior.gamma, evidence, prior.reset_rate)
    # Read from the posterior on the grid, open when the captures are sparser than the
    # changes (docs/readings.md, "intervals that cover").
    bounds = interval_bounds(
        prior.gamma, evidence, dispersion=prior.dispersion, reset_rate=prior.reset_rate
    )
    return _Readings.posterior(prior, alpha, beta, bounds.low, bounds.high, bounds.open)


def _window_estimates(
    timelines: Timelines,
    mle: RateEstimates,
    evidence: IntervalEvidence,
    readings: _Readings,
    level: str,
    method: str,
    start: datetime | None,
    end: datetime | None,
) -> dict[int, Estimate]:
    """One unsaved estimate per site of the window's timelines."""
    estimates: dict[int, Estimate] = {}
    for i, site_id in enumerate(timelines.site_ids.tolist()):
        mle_rate = float(mle.rate[i])
        # The paper's estimates need two instants ("insufficient history" below); the posterior
        # has one for every site with a copy: with no interval to learn from it is the prior,
        # so a thin site's p grows with the age of its copy and it is crawled in its turn.
        has_rate = np.isfinite(mle_rate) if method != Method.POSTERIOR else True
        estimates[site_id] = Estimate(
            site_id=site_id,
            level=level,
            method=method,
            window_start=start,
            window_end=end,
            rate=float(readings.rate[i]) if has_rate else None,
            tau=from_days(float(mle.tau[i])),
            tau_days=_finite(mle.tau[i]),
            observations=int(mle.observations[i]),
            updates=int(mle.updates[i]),
            last_copy=from_days(float(evidence.last[i])),
            last_copy_days=_finite(evidence.last[i]),
            span_days=_finite(evidence.last[i] - evidence.first[i]),
            posterior_shape=_finite(readings.alpha[i]) if has_rate else None,
            posterior_rate=_finite(readings.beta[i]) if has_rate else None,
            interval_low=_finite(readings.low[i]) if has_rate else None,
            interval_high=_finite(readings.high[i]) if has_rate else None,
            interval_open=bool(readings.is_open[i]) and bool(has_rate),
            prior_share=_finite(readings.share[i]) if has_rate else None,
        )
    return estimates


def _finite(value: float) -> float | None:
    return float(value) if np.isfinite(value) else None


def prior_for(*, level: str, start: datetime | None, end: datetime | None) -> LevelPrior:
    """The stored prior of ``level``, or one fitted now on every site (and stored)."""
    stored = RatePrior.objects.filter(level=level).first()
    if stored is not None:
        return LevelPrior(
            GammaPrior(stored.shape, stored.rate),
            stored.links_per_update,
            stored.dispersion,
            stored.reset_rate,
        )
    return prior_fit(level=level, start=start, end=end)


def prior_fit(*, level: str, start: datetime | None, end: datetime | None) -> LevelPrior:
    """Fit the level's prior on every site's history in the window, and store it."""
    found = observations_load(level=level, start=start, end=end)
    timelines = _timelines(found)
    prior = _prior_of(level, found, timelines)
    RatePrior.objects.update_or_create(
        level=level,
        defaults={
            "shape": prior.gamma.shape,
            "rate": prior.gamma.rate,
            "links_per_update": prior.links_per_update,
            "dispersion": prior.dispersion,
            "reset_rate": prior.reset_rate,
            "sites": len(timelines.site_ids),
        },
    )
    return prior


def _prior_of(level: str, found: Observations, timelines: Timelines) -> LevelPrior:
    """The prior fitted on these observations: on sites' interval likelihoods (homepage), on
    pages' new links (website)."""
    if level == Level.WEBSITE:
        site_index = np.searchsorted(timelines.site_ids, found.site_pk)
        gamma, kappa, dispersion = fit_page_prior(
            page_links(site_index, found.page, found.time, found.new_links)
        )
        return LevelPrior(gamma, kappa, dispersion)
    # The fit of hacs.ranking.default_posterior: the prior, then the reset rate on top of it.
    evidence = interval_evidence(timelines.times, timelines.updated, timelines.offsets)
    gamma = fit_interval_prior(evidence)
    reset_rate = fit_reset_rate(gamma, evidence)
    alpha, beta = interval_posterior(gamma, evidence, reset_rate)
    dispersion = change_dispersion(
        timelines.times, timelines.updated, timelines.offsets, alpha / beta
    )
    return LevelPrior(gamma, dispersion=dispersion, reset_rate=reset_rate)


ESTIMATE_FIELDS = [
    "window_start",
    "window_end",
    "rate",
    "tau",
    "tau_days",
    "observations",
    "updates",
    "last_copy",
    "last_copy_days",
    "span_days",
    "posterior_shape",
    "posterior_rate",
    "interval_low",
    "interval_high",
    "interval_open",
    "prior_share",
    "computed_at",
]


def estimates_recompute(
    *,
    levels: Iterable[str] = tuple(Level.values),
    methods: Iterable[str] = tuple(Method.values),
    start: datetime | None = None,
    end: datetime | None = None,
    site_ids: Sequence[int] | None = None,
) -> int:
    """Compute and store estimates for the sites (all when None); returns rows written.

    Sites without observations in the window get an estimate with an unknown rate, so that the
    dashboard can say "insufficient history" rather than show a stale value. A recompute of
    every site refits and stores each level's prior first.
    """
    targets = (
        list(Site.objects.values_list("pk", flat=True)) if site_ids is None else list(site_ids)
    )
    written = 0
    for level in levels:
        prior = None
        if site_ids is None and Method.POSTERIOR in methods:
            prior = prior_fit(level=level, start=start, end=end)
        for method in methods:
            found = estimates_for_window(
                level=level, method=method, start=start, end=end, site_ids=site_ids, prior=prior
            )
            rows = [
                found.get(site_id) or _no_history(site_id, level, method, start=start, end=end)
                for site_id in targets
            ]
            _estimates_store(rows)
            written += len(rows)
    if site_ids is None:
        # The nightly recompute keeps every seed's health current too (imports update the
        # sites they finish; this reaches sites imported before health was kept).
        sites_health_update()
    return written


def _no_history(
    site_id: int, level: str, method: str, *, start: datetime | None, end: datetime | None
) -> Estimate:
    """The estimate of a site without observations in the window: an unknown rate."""
    return Estimate(
        site_id=site_id,
        level=level,
        method=method,
        window_start=start,
        window_end=end,
        rate=None,
        tau=None,
        tau_days=None,
        observations=0,
        updates=0,
    )


def _estimates_store(rows: list[Estimate]) -> None:
    """Store the rows, each replacing the site's stored estimate of its level and method."""
    with transaction.atomic():
        Estimate.objects.bulk_create(
            rows,
            batch_size=2000,
            update_conflicts=True,
            unique_fields=["site", "level", "method"],
            update_fields=ESTIMATE_FIELDS,
        )


@dataclass(frozen=True)
class RecomputeOptions:
    """The ``recompute_estimates`` command's options, as a job receives them (JSON-safe)."""

    levels: tuple[str, ...] = tuple(Level.values)
    methods: tuple[str, ...] = tuple(Method.values)
    start: date | None = None
    end: date | None = None

    def as_kwargs(self) -> dict[str, Any]:
        """Keyword arguments of :func:`estimates_recompute`: whole days, first to last."""
        return {
            "levels": self.levels,
            "methods": self.methods,
            "start": day_start(self.start),
            "end": day_end(self.end),
        }

    def to_json(self) -> dict[str, Any]:
        return {
            "levels": list(self.levels),
            "methods": list(self.methods),
            "start": self.start.isoformat() if self.start else None,
            "end": self.end.isoformat() if self.end else None,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> RecomputeOptions:
        start, end = data.get("start"), data.get("end")
        return cls(
            levels=tuple(data.get("levels") or Level.values),
            methods=tuple(data.get("methods") or Method.values),
            start=date.fromisoformat(start) if start else None,
            end=date.fromisoformat(end) if end else None,
        )

    def describe(self) -> str:
        """How the Jobs page names the recompute."""
        what = "all sites"
        if len(self.levels) == 1 or len(self.methods) == 1:
            what += f", {' + '.join(self.levels)} / {' + '.join(self.methods)}"
        if self.start or self.end:
            what += f", {self.start or 'the first capture'} to {self.end or 'the last'}"
        return what


def exposure_expression(
    *, method: str, t_days: float, e_days: float, prefix: str = ""
) -> ExpressionWrapper:
    """The exposure x of a stored estimate in SQL, with p = 1 − exp(−x).

    The paper's methods: ``hacs.estimators.change_exposure``, λ (t + e − τ). The posterior:
    ``hacs.bayes.posterior_exposure``, α ln(1 + (t + e − last copy) / β). Pages that sort or
    filter thousands of sites by their probability of change do it in the database on x, which
    p preserves; ``prefix`` reaches the estimate through a relation (``"est__"``).
    """
    if method == Method.POSTERIOR:
        # A copy after t + e (a clock skew) leaves no time for a change: x = 0, as in the core.
        elapsed = Greatest(Value(0.0), Value(t_days + e_days) - F(f"{prefix}last_copy_days"))
        return ExpressionWrapper(
            F(f"{prefix}posterior_shape") * Ln(Value(1.0) + elapsed / F(f"{prefix}posterior_rate")),
            output_field=FloatField(),
        )
    return ExpressionWrapper(
        F(f"{prefix}rate") * (Value(t_days + e_days) - F(f"{prefix}tau_days")),
        output_field=FloatField(),
    )
