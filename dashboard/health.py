"""Seed health on the pages: the Overview's counts, the Sites table's filter and the Site page's
evidence. Moved and gone are stored (``archive.health``); "not captured lately" and "stopped
changing" are read here, in SQL, against today and the stored estimate, the twins of
``hacs.health.is_stale`` and ``hacs.health.stopped_changing``.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.db.models import (
    BooleanField,
    Count,
    Exists,
    ExpressionWrapper,
    F,
    FloatField,
    OuterRef,
    Q,
    QuerySet,
)

from archive.models import Site, SiteHealth
from hacs.clock import to_days
from hacs.health import is_stale, stopped_changing
from scheduling.models import DEFAULT_METHOD, Estimate, Level

#: The Sites table's Health filter, and the Overview's boxes, in this order.
HEALTH_FILTERS = {
    "moved": "Moved",
    "gone": "Gone (404/410)",
    "stale": "Not captured lately",
    "stopped": "Stopped changing",
    "any": "Any problem",
}


def stale_q(now: datetime, *, prefix: str = "health__") -> Q:
    """Sites (or, with ``prefix=""``, health rows) whose newest good homepage capture is
    missing or older than ``HACS_STALE_AFTER_DAYS`` days (``hacs.health.is_stale``)."""
    cutoff = now - timedelta(days=settings.HACS_STALE_AFTER_DAYS)
    return Q(**{f"{prefix}captured": True}) & (
        Q(**{f"{prefix}last_good__isnull": True}) | Q(**{f"{prefix}last_good__lt": cutoff})
    )


def stopped_estimates(level: str = Level.HOMEPAGE) -> QuerySet[Estimate]:
    """Estimates at ``level`` by the default method that say their site stopped changing
    (``hacs.health.stopped_changing``, in SQL)."""
    quiet = ExpressionWrapper(F("last_copy_days") - F("tau_days"), output_field=FloatField())
    return (
        Estimate.objects.filter(
            level=level,
            method=DEFAULT_METHOD,
            observations__gte=2,
            rate__isnull=False,
            tau_days__isnull=False,
            last_copy_days__isnull=False,
        )
        .annotate(
            quiet=quiet, quiet_rate=ExpressionWrapper(quiet * F("rate"), output_field=FloatField())
        )
        .filter(quiet__gte=settings.HACS_STOPPED_MIN_DAYS)
        .filter(Q(updates=0) | Q(rate=0) | Q(quiet_rate__gte=settings.HACS_STOPPED_FACTOR))
    )


def _stopped_q() -> Q:
    return Q(stopped_annotation())


def health_filter(rows: QuerySet[Site], kind: str, *, now: datetime) -> QuerySet[Site]:
    """``rows`` narrowed to the sites with the problem ``kind`` (a key of
    :data:`HEALTH_FILTERS`); any other value leaves them as they are."""
    moved = Q(health__problem=SiteHealth.Problem.MOVED)
    gone = Q(health__problem=SiteHealth.Problem.GONE)
    if kind == "moved":
        return rows.filter(moved)
    if kind == "gone":
        return rows.filter(gone)
    if kind == "stale":
        return rows.filter(stale_q(now))
    if kind == "stopped":
        return rows.filter(_stopped_q())
    if kind == "any":
        return rows.filter(moved | gone | stale_q(now) | _stopped_q())
    return rows


def health_counts(*, now: datetime) -> dict[str, int]:
    """How many sites have each problem, and any of them (three queries)."""
    counts = SiteHealth.objects.aggregate(
        moved=Count("pk", filter=Q(problem=SiteHealth.Problem.MOVED)),
        gone=Count("pk", filter=Q(problem=SiteHealth.Problem.GONE)),
        stale=Count("pk", filter=stale_q(now, prefix="")),
    )
    counts["stopped"] = Site.objects.filter(stopped_annotation()).count()
    counts["any"] = health_filter(Site.objects.all(), "any", now=now).count()
    return counts


def stopped_annotation() -> ExpressionWrapper:
    """Whether the site stopped changing, as a condition of a Site query (no query of its own:
    the Sites table shows it for a page of rows in the page's query). Both levels must say so:
    a homepage that never changes while the pages under it still do is a site that changes."""
    both = Q(Exists(stopped_estimates(Level.HOMEPAGE).filter(site=OuterRef("pk")))) & Q(
        Exists(stopped_estimates(Level.WEBSITE).filter(site=OuterRef("pk")))
    )
    return ExpressionWrapper(both, output_field=BooleanField())


def row_badges(site: Site, *, now: datetime) -> list[tuple[str, str]]:
    """The problems of one row of the Sites table as (filter key, label) pairs; the site's
    ``health`` and ``health_stopped`` come with the page's query."""
    badges: list[tuple[str, str]] = []
    health = getattr(site, "health", None)
    if health is not None:
        if health.problem:
            badges.append((health.problem, HEALTH_FILTERS[health.problem]))
        if is_stale(
            last_good=_days(health.last_good),
            captured=health.captured,
            now=to_days(now),
            stale_after_days=settings.HACS_STALE_AFTER_DAYS,
        ):
            badges.append(("stale", HEALTH_FILTERS["stale"]))
    if getattr(site, "health_stopped", False):
        badges.append(("stopped", HEALTH_FILTERS["stopped"]))
    return badges


def _days(moment: datetime | None) -> float | None:
    return None if moment is None else to_days(moment)


@dataclass(frozen=True)
class Evidence:
    """One problem of a site, with the sentence that shows why."""

    kind: str
    label: str
    text: str
    target: str = ""


def site_evidence(
    *, site: Site, estimate: Estimate | None, now: datetime, website: Estimate | None = None
) -> list[Evidence]:
    """The Site page's "Seed health": each problem the site has, said with its evidence.

    ``site.health`` is read as loaded (``select_related``: no query when it came with the
    site); ``estimate`` is the site's homepage estimate by the default method, if any.
    """
    health = getattr(site, "health", None)
    found = [] if health is None else _health_evidence(health, now)
    if (
        estimate is not None
        and _is_stopped(estimate)
        and website is not None
        and _is_stopped(website)
    ):
        found.append(_stopped_evidence(estimate))
    return found


def _health_evidence(health: SiteHealth, now: datetime) -> list[Evidence]:
    """What the site's stored health says: moved, gone, stale."""
    found: list[Evidence] = []
    since = f"{health.since:%-d %b %Y}" if health.since else ""
    plural = "s" if health.count != 1 else ""
    if health.problem == SiteHealth.Problem.MOVED:
        where = health.target or "an address the archive did not record"
        found.append(
            Evidence(
                "moved",
                HEALTH_FILTERS["moved"],
                f"Redirects to {where} since {since} ({health.count} capture{plural}).",
                target=health.target,
            )
        )
    elif health.problem == SiteHealth.Problem.GONE:
        found.append(
            Evidence(
                "gone",
                HEALTH_FILTERS["gone"],
                f"Answered {health.status} in the last {health.count} capture{plural} "
                f"since {since}.",
            )
        )
    if is_stale(
        last_good=_days(health.last_good),
        captured=health.captured,
        now=to_days(now),
        stale_after_days=settings.HACS_STALE_AFTER_DAYS,
    ):
        text = (
            f"Last good capture {health.last_good:%-d %b %Y}, more than "
            f"{settings.HACS_STALE_AFTER_DAYS:,} days ago."
            if health.last_good
            else "No good capture of the homepage at all."
        )
        found.append(Evidence("stale", HEALTH_FILTERS["stale"], text))
    return found


def _stopped_evidence(estimate: Estimate) -> Evidence:
    """A homepage (and the pages under it) that stopped gaining links, with how long for."""
    assert estimate.last_copy_days is not None and estimate.tau_days is not None
    quiet = estimate.last_copy_days - estimate.tau_days
    if estimate.updates and estimate.rate:
        times = f", {quiet * estimate.rate:.0f} × its mean interval"
    else:
        times = ", with no update in its history"
    return Evidence(
        "stopped",
        HEALTH_FILTERS["stopped"],
        f"No new link on the homepage for {quiet:,.0f} days{times} "
        f"(last copy {estimate.last_copy:%-d %b %Y}), nor on the pages under it.",
    )


def _is_stopped(estimate: Estimate) -> bool:
    def value(x: Any) -> float:
        return float("nan") if x is None else float(x)

    return bool(
        stopped_changing(
            rate=[value(estimate.rate)],
            tau=[value(estimate.tau_days)],
            last_copy=[value(estimate.last_copy_days)],
            observations=[estimate.observations],
            updates=[estimate.updates],
            factor=settings.HACS_STOPPED_FACTOR,
            min_days=settings.HACS_STOPPED_MIN_DAYS,
        )[0]
    )
