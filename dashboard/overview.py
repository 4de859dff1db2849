"""What the Overview page shows: counts, the distribution of update intervals, sites due today."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date
from typing import Any

from archive.models import Site
from hacs.clock import to_days
from hacs_site.clock import today
from scheduling.cells import interval_text
from scheduling.crawl_lists import CrawlListOptions, crawl_list_rank, crawl_list_window
from scheduling.models import DEFAULT_METHOD, CrawlList, Estimate, Level, Method


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


def window_start_days(day: date, history_days: int) -> float:
    """The first instant (days) of the crawl list's history window for ``day``."""
    return to_days(crawl_list_window(day=day, history_days=history_days)[0])


@dataclass(frozen=True)
class DueToday:
    """What "due today" means on every page: the sites on today's daily list, which the daily
    job builds (``CrawlListOptions.from_settings``). ``built`` is that list when it is stored;
    before it is, the list's own rule (``scheduling.crawl_lists.crawl_list_rank``) ranks the
    sites now, without storing them, so Overview and the list cannot disagree. A site without a
    copy in the window is not due: Seed health counts it as not captured lately
    (``dashboard.health``)."""

    count: int
    first: list[DueSite]
    built: CrawlList | None
    options: CrawlListOptions


def due_today(*, day: date, limit: int = 10) -> DueToday:
    options = CrawlListOptions.from_settings()
    built = CrawlList.objects.daily_for(day)
    if built is None:
        count, first = _ranked_now(day=day, options=options, limit=limit)
        return DueToday(count, first, None, options)
    entries = built.entries.select_related("site").order_by("rank")
    first = [
        DueSite(e.site, e.probability, 1.0 / e.rate if e.rate else None, e.rests_on_prior)
        for e in entries[:limit]
    ]
    return DueToday(entries.count(), first, built, options)


def _ranked_now(*, day: date, options: CrawlListOptions, limit: int) -> tuple[int, list[DueSite]]:
    """How many sites today's list would hold if built now, and the first ``limit``."""
    ranked = crawl_list_rank(day=day, options=options).sites
    sites = Site.objects.in_bulk([r.site_id for r in ranked[:limit]])
    first = [
        DueSite(
            site=sites[r.site_id],
            probability=r.probability,
            interval_days=1.0 / r.rate if r.rate else None,
            prior_led=r.evidence.rests_on_prior,
        )
        for r in ranked[:limit]
    ]
    return len(ranked), first


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
