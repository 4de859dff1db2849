"""Bringing sites up to date: the import pipeline followed by the sites' estimates.

The archive app imports (``archive.pipeline``) and the scheduling app estimates
(``scheduling.estimates``); neither knows the other. This module, above both, joins them: every
command, job and page that imports calls :func:`sites_refresh`, so a site is marked imported
only once its estimates come from its new data.
"""

from __future__ import annotations

from collections.abc import Callable

import django_rq
from django.db.models import Exists, OuterRef

from archive.models import Capture, LinkSnapshot, Site
from archive.pipeline import ImportReport, Progress, Source, Step, sites_import
from archive.wayback import ArchiveClient, ArchiveConfig
from scheduling.estimates import estimates_recompute


def archive_client() -> ArchiveClient:
    """A client for the configured archive, sharing its rate limit with every worker."""
    return ArchiveClient(ArchiveConfig.from_settings(), django_rq.get_connection("import"))


def sites_refresh(
    source: Source,
    *,
    client: ArchiveClient | None = None,
    progress: Progress | None = None,
    step: Callable[[Step], None] | None = None,
) -> ImportReport:
    """Import from ``source`` and recompute the estimates of every site brought up to date."""
    return sites_import(
        source,
        client=client,
        progress=progress,
        step=step,
        after=lambda site_ids: estimates_recompute(site_ids=site_ids),
    )


def sites_from_archive(config: ArchiveConfig | None = None) -> list[int]:
    """Sites holding a capture read from the configured archive's CDX server: the nightly
    refresh's work. Sites known only from WARC or CDX files are left as they are."""
    source = (config or ArchiveConfig.from_settings()).source
    # EXISTS per site stops at its first such capture, where a join would read them all.
    held = Capture.objects.filter(site=OuterRef("pk"), source=source)
    return list(Site.objects.filter(Exists(held)).order_by("pk").values_list("pk", flat=True))


def sites_with_failed_fetches() -> list[int]:
    """Sites holding an observation whose memento could not be fetched: the retry pass's work."""
    rows = Site.objects.filter(captures__snapshot__status=LinkSnapshot.Status.FAILED)
    return list(rows.distinct().order_by("pk").values_list("pk", flat=True))
