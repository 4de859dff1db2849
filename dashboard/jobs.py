"""Job functions of the dashboard app. Each takes its JobRecord id first."""

from __future__ import annotations

from django.db import connection

from archive.models import Site
from dashboard.services import JobProgress


def health_check(record_id: int) -> dict[str, object]:
    """Prove the round trip web → Redis → worker → database by writing to the job's record."""
    with JobProgress(record_id) as progress:
        progress.set_total(1)
        result = {"database": connection.vendor, "sites": Site.objects.count()}
        progress.advance(1, checks=1)
        progress.record.counts.update(result)
        progress.record.save(update_fields=["counts"])
    return result
