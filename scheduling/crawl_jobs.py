"""Background jobs for crawl lists."""

from __future__ import annotations

from django.conf import settings
from django.utils import timezone

from dashboard.models import JobRecord
from dashboard.services import JobProgress
from scheduling.crawl_lists import crawl_list_build


def build_crawl_list(record_id: int, parameters: dict[str, object]) -> int:
    """Build and store one crawl list; returns its id."""
    from datetime import date

    with JobProgress(record_id) as progress:
        progress.set_total(1)
        crawl_list = crawl_list_build(
            day=date.fromisoformat(str(parameters["day"])),
            level=str(parameters["level"]),
            method=str(parameters["method"]),
            theta=parameters.get("theta"),  # type: ignore[arg-type]
            budget=parameters.get("budget"),  # type: ignore[arg-type]
            history_days=int(parameters["history_days"]),  # type: ignore[call-overload]
            e_days=float(parameters["e_days"]),  # type: ignore[arg-type]
        )
        progress.advance(1, sites=crawl_list.entries.count())
    return crawl_list.pk


def daily_crawl_list() -> int:
    """Today's list with the configured defaults, run every morning by the RQ cron scheduler."""
    import uuid

    record = JobRecord.objects.create(
        rq_id=uuid.uuid4().hex,
        kind=JobRecord.Kind.CRAWL_LIST,
        label=f"Daily crawl list {timezone.now().date()}",
        queue="estimation",
    )
    return build_crawl_list(
        record.pk,
        {
            "day": timezone.now().date().isoformat(),
            "level": "homepage",
            "method": "observed",
            "theta": settings.HACS_THETA,
            "budget": None,
            "history_days": settings.HACS_HISTORY_DAYS,
            "e_days": settings.HACS_E_DAYS,
        },
    )
