"""What the Overview page shows: counts, the distribution of update intervals, sites due today."""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import date
from typing import Any

from django.db.models import ExpressionWrapper, F, FloatField, QuerySet
from django.utils import timezone

from archive.models import Site
from scheduling.crawl_lists import reference_instant
from scheduling.models import Estimate, Level, Method
from scheduling.services import to_days


@dataclass(frozen=True)
class DueSite:
    site: Site
    probability: float
    interval_days: float | None


def due_estimates(*, day: date, e_days: float) -> QuerySet[Estimate]:
    """Homepage estimates ordered by probability of change by ``day`` + e (highest first).

    p = 1 − exp(−λ (t + e − τ)) grows with λ (t + e − τ), so the ordering and any threshold
    are done in SQL on that product.
    """
    horizon = to_days(reference_instant(day)) + e_days
    return (
        Estimate.objects.filter(level=Level.HOMEPAGE, method=Method.OBSERVED, rate__isnull=False)
        .annotate(exposure=ExpressionWrapper(F("rate") * (horizon - F("tau_days")), FloatField()))
        .order_by("-exposure", "tau_days")
    )


def sites_due(
    *, day: date, theta: float, e_days: float, limit: int = 10
) -> tuple[int, list[DueSite]]:
    """How many sites reach p ≥ θ for ``day``, and the first ``limit`` of them."""
    rows = due_estimates(day=day, e_days=e_days)
    if theta > 0:
        rows = rows.filter(exposure__gte=-math.log1p(-min(theta, 1 - 1e-12)))
    total = rows.count()
    shown = [
        DueSite(
            site=e.site,
            probability=-math.expm1(-max(e.exposure, 0.0)),
            interval_days=e.interval_days,
        )
        for e in rows.select_related("site")[:limit]
    ]
    return total, shown


def interval_lists() -> dict[str, list[float]]:
    """Estimated mean intervals 1/λ (days) per level, for the Figure 4 histogram."""
    found: dict[str, list[float]] = {"Homepage": [], "Website": []}
    rows = Estimate.objects.filter(method=Method.OBSERVED, rate__gt=0).values_list("level", "rate")
    for level, rate in rows.iterator(chunk_size=10_000):
        found["Homepage" if level == Level.HOMEPAGE else "Website"].append(1.0 / rate)
    return found


def overview_counts() -> dict[str, Any]:
    return {
        "sites": Site.objects.count(),
        "imported": Site.objects.filter(import_status=Site.ImportStatus.DONE).count(),
        "failed": Site.objects.filter(import_status=Site.ImportStatus.FAILED).count(),
        "estimated": Estimate.objects.filter(
            level=Level.HOMEPAGE, method=Method.OBSERVED, rate__isnull=False
        ).count(),
        "today": timezone.now().date(),
    }
