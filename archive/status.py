"""The one place a site's import status changes: :func:`sites_import_status` writes it, for a
queued import (``operations.jobs``), an import begun (:func:`sites_start`) and an import ended
done or failed (:func:`sites_finish`). Every import path (``archive.pipeline``,
``archive.archive_import``) and every job goes through these."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from django.db.models import F
from django.utils import timezone

from archive.health import sites_health_update
from archive.models import Site

__all__ = ["sites_finish", "sites_import_status", "sites_start"]


def sites_import_status(site_ids: Sequence[int], status: str, **fields: Any) -> None:
    """Set the sites' import status (with the other import fields given): its one writer."""
    Site.objects.filter(pk__in=list(site_ids)).update(import_status=status, **fields)


def sites_start(site_ids: Sequence[int]) -> None:
    """Begin sites' imports: marked running, one more attempt counted."""
    sites_import_status(
        site_ids, Site.ImportStatus.RUNNING, import_attempts=F("import_attempts") + 1
    )


def sites_finish(*, done: Sequence[int] = (), failed: dict[int, str] | None = None) -> None:
    """End imports: sites done (stamped ``imported_at``, their health read from the captures
    now held: ``archive.health``) or failed with the reason."""
    if done:
        sites_import_status(
            done, Site.ImportStatus.DONE, import_error="", imported_at=timezone.now()
        )
        sites_health_update(site_ids=done)
    for site_id, reason in (failed or {}).items():
        sites_import_status([site_id], Site.ImportStatus.FAILED, import_error=reason[:5000])
