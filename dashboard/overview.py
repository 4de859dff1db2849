"""What the Overview page shows: counts, the distribution of update intervals, sites due today."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date
from typing import Any

from django.db.models import Q, QuerySet

from archive.models import Site
from hacs.clock import reference_instant, to_days
from hacs.estimators import exposure_threshold
from hacs_site.clock import today
from scheduling.cells import interval_text
from scheduling.crawl_lists import CrawlListOptions, crawl_list_window
from scheduling.estimates import exposure_expression
from scheduling.models import (
    DEFAULT_METHOD,
    CrawlList,
    Estimate,
    Level,
    Method,
    estimate_probabilities,
)


@dataclass(frozen=True)
class DueSite:
    site: Site
    probability: float
    interval_days: float | None
    prior_led: bool = False  # the p rests mostly on the collection's prior

    @property
    def interval(self) -> str:
        """The mean interval as every page writes it ("12.3 days")."""
        return "" if not self.interval_days else interval_text(1 / self.interval_days)


def due_estimates(
    *, day: date, e_days: float, method: str, history_days: int | None = None
) -> QuerySet[Estimate]:
    """Homepage estimates ordered by probability of change by ``day`` + e (highest first);
    with ``history_days``, only sites with a copy in the crawl list's window for ``day``.

    p = 1 − exp(−x) grows with the exposure x (``scheduling.estimates.exposure_expression``),
    so the ordering and any threshold are done in SQL on it.
    """
    t_days = to_days(reference_instant(day))
    rows = Estimate.objects.filter(
        level=Level.HOMEPAGE, method=method, rate__isnull=False, site__paused=False
    )
    if history_days is not None:
        start = window_start_days(day, history_days)
        rows = rows.filter(Q(last_copy_days__gte=start) | Q(last_copy_days__isnull=True))
    return rows.annotate(
        exposure=exposure_expression(method=method, t_days=t_days, e_days=e_days)
    ).order_by("-exposure", "tau_days")


def window_start_days(day: date, history_days: int) -> float:
    """The first instant (days) of the crawl list's history window for ``day``."""
    return to_days(crawl_list_window(day=day, history_days=history_days)[0])


@dataclass(frozen=True)
class DueToday:
    """What "due today" means on every page: the sites on today's daily list, which the daily
    job builds (``CrawlListOptions.from_settings``). ``built`` is that list when it is stored;
    before it is, the stored homepage estimates are read by the same rule (a copy in the list's
    history window, p ≥ θ, the top k). A site without a copy in the window is not due: Seed
    health counts it as not captured lately (``dashboard.health``)."""

    count: int
    first: list[DueSite]
    built: CrawlList | None
    options: CrawlListOptions


def due_today(*, day: date, limit: int = 10) -> DueToday:
    options = CrawlListOptions.from_settings()
    built = CrawlList.objects.daily_for(day)
    if built is not None:
        entries = built.entries.select_related("site").order_by("rank")
        first = [
            DueSite(e.site, e.probability, 1.0 / e.rate if e.rate else None, e.rests_on_prior)
            for e in entries[:limit]
        ]
        count = entries.count()
    else:
        count, first = sites_due(
            day=day,
            theta=options.theta,
            e_days=options.e_days,
            budget=options.budget,
            limit=limit,
            method=options.method,
            history_days=options.history_days,
        )
    return DueToday(count, first, built, options)


def sites_due(
    *,
    day: date,
    theta: float | None,
    e_days: float,
    budget: int | None = None,
    limit: int = 10,
    method: str = DEFAULT_METHOD,
    history_days: int | None = None,
) -> tuple[int, list[DueSite]]:
    """How many sites reach p ≥ θ for ``day`` (at most ``budget`` of them; with
    ``history_days`` only those with a copy in that window), and the first ``limit``."""
    rows = due_estimates(day=day, e_days=e_days, method=method, history_days=history_days)
    if theta is not None and theta > 0:
        rows = rows.filter(exposure__gte=exposure_threshold(theta))  # type: ignore[misc]  # annotated
    total = rows.count() if budget is None else min(budget, rows.count())
    limit = min(limit, total)
    t_days = to_days(reference_instant(day))
    first = list(rows.select_related("site")[:limit])
    probabilities = estimate_probabilities(first, t_days=t_days, e_days=e_days)
    shown = [
        DueSite(
            site=e.site,
            probability=float(p),
            interval_days=e.interval_days,
            prior_led=e.rests_on_prior,
        )
        for e, p in zip(first, probabilities, strict=True)
    ]
    return total, shown


def interval_lists() -> dict[str, list[float]]:
    """Estimated mean intervals 1/λ (days) per level, for the Figure 4 histogram."""
    found: dict[str, list[float]] = {"Homepage": [], "Website": []}
    rows = Estimate.objects.filter(method=Method.OBSERVED, rate__gt=0).values_list("level", "rate")
    for level, rate in rows.iterator(chunk_size=10_000):
        if rate is not None:  # rate__gt=0 leaves none out; the stubs cannot know
            found["Homepage" if level == Level.HOMEPAGE else "Website"].append(1.0 / rate)
    return found


def overview_counts() -> dict[str, Any]:
    return {
        "sites": Site.objects.count(),
        "imported": Site.objects.filter(import_status=Site.ImportStatus.DONE).count(),
        "failed": Site.objects.filter(import_status=Site.ImportStatus.FAILED).count(),
        "estimated": Estimate.objects.filter(
            level=Level.HOMEPAGE, method=DEFAULT_METHOD, rate__isnull=False
        ).count(),
        "today": today(),
    }
