"""Today's crawl list (DESIGN "Method", rule 8): glue between stored captures and the estimators.

For a date D the reference instant t is the end of D (00:00 UTC of the next day): the estimate
uses the observations in [t − w, t), and p = g(λ, τ, t, e) is the probability that the site has
changed by the time a crawl made within e days of D looks at it. Sites whose rate is unknown
(fewer than two observations in the window) get p = 0, as in the evaluation, so they only appear
when θ is 0 or the budget reaches past every site with a known rate.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta
from typing import Any

import numpy as np
from django.db import transaction

from archive.models import Site
from hacs.estimators import change_probability
from scheduling.models import CrawlList, CrawlListEntry, Level, Method
from scheduling.services import estimates_for_window, to_days

CSV_COLUMNS = ["rank", "url", "author", "probability", "rate_per_day", "interval_days", "tau"]


def reference_instant(day: date) -> datetime:
    return datetime.combine(day + timedelta(days=1), time.min, tzinfo=UTC)


@dataclass(frozen=True)
class RankedSite:
    site_id: int
    probability: float
    rate: float | None
    tau: datetime | None
    seed_url: str


def crawl_list_rank(
    *,
    day: date,
    level: str = Level.HOMEPAGE,
    method: str = Method.OBSERVED,
    theta: float | None = None,
    budget: int | None = None,
    history_days: int = 3 * 365,
    e_days: float = 7.0,
) -> tuple[list[RankedSite], int]:
    """The ranked sites of a crawl list and the number of eligible sites (≥ 1 observation)."""
    t = reference_instant(day)
    start = t - timedelta(days=history_days)
    found = estimates_for_window(
        level=level, method=method, start=start, end=t - timedelta(microseconds=1)
    )
    if not found:
        return [], 0
    ids = list(found)
    rates = np.array([np.nan if found[i].rate is None else found[i].rate for i in ids])
    taus = np.array([np.nan if found[i].tau_days is None else found[i].tau_days for i in ids])
    known = np.isfinite(rates)
    p = np.zeros(len(ids))
    p[known] = change_probability(rates[known], taus[known], to_days(t), e_days)
    urls = dict(Site.objects.filter(pk__in=ids).values_list("pk", "seed_url"))
    ranked = [
        RankedSite(
            site_id=site_id,
            probability=float(p[i]),
            rate=found[site_id].rate,
            tau=found[site_id].tau,
            seed_url=urls.get(site_id, ""),
        )
        for i, site_id in enumerate(ids)
    ]
    # Highest probability first; ties: the longest-unchanged site (older τ) first, then URL.
    ranked.sort(key=lambda r: (-r.probability, r.tau or t, r.seed_url))
    if theta is not None:
        ranked = [r for r in ranked if r.probability >= theta]
    if budget is not None:
        ranked = ranked[:budget]
    return ranked, len(ids)


def crawl_list_build(
    *,
    day: date,
    level: str = Level.HOMEPAGE,
    method: str = Method.OBSERVED,
    theta: float | None = None,
    budget: int | None = None,
    history_days: int = 3 * 365,
    e_days: float = 7.0,
    user: Any = None,
) -> CrawlList:
    """Rank the sites for ``day`` and store the list with its parameters."""
    ranked, eligible = crawl_list_rank(
        day=day, level=level, method=method, theta=theta, budget=budget,
        history_days=history_days, e_days=e_days,
    )  # fmt: skip
    with transaction.atomic():
        crawl_list = CrawlList.objects.create(
            date=day, level=level, method=method, theta=theta, budget=budget,
            history_days=history_days, e_days=e_days, eligible_sites=eligible,
            created_by=user if getattr(user, "is_authenticated", False) else None,
        )  # fmt: skip
        CrawlListEntry.objects.bulk_create(
            [
                CrawlListEntry(
                    crawl_list=crawl_list, rank=rank, site_id=r.site_id,
                    probability=r.probability, rate=r.rate, tau=r.tau,
                )
                for rank, r in enumerate(ranked, start=1)
            ],
            batch_size=2000,
        )  # fmt: skip
    return crawl_list


def neutralise(value: object) -> str:
    """A CSV cell that a spreadsheet will not run as a formula."""
    text = "" if value is None else str(value)
    return "'" + text if text[:1] in ("=", "+", "-", "@", "\t", "\r") else text


def crawl_list_rows(crawl_list: CrawlList) -> Iterator[list[str]]:
    """The list's CSV rows (header first), in rank order, one query."""
    yield CSV_COLUMNS
    rows = crawl_list.entries.order_by("rank").values_list(
        "rank", "site__seed_url", "site__author", "probability", "rate", "tau"
    )
    for rank, url, author, probability, rate, tau in rows.iterator(chunk_size=5000):
        yield [
            str(rank),
            neutralise(url),
            neutralise(author),
            f"{probability:.6f}",
            "" if rate is None else f"{rate:.6g}",
            "" if not rate else f"{1 / rate:.2f}",
            "" if tau is None else tau.isoformat(),
        ]


def crawl_list_csv(crawl_list: CrawlList) -> Iterator[str]:
    """The CSV text, streamed a few hundred rows at a time."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    for n, row in enumerate(crawl_list_rows(crawl_list)):
        writer.writerow(row)
        if n % 500 == 0:
            yield buffer.getvalue()
            buffer.seek(0)
            buffer.truncate()
    yield buffer.getvalue()


def crawl_list_urls(crawl_list: CrawlList) -> Iterable[str]:
    """One seed URL a line, in rank order: what Heritrix, Browsertrix and Archive-It take."""
    urls = crawl_list.entries.order_by("rank").values_list("site__seed_url", flat=True)
    for url in urls.iterator(chunk_size=5000):
        yield url + "\n"
