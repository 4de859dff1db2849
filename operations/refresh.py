"""Bringing sites up to date: the import pipeline followed by the sites' estimates.

The archive app imports (``archive.pipeline``) and the scheduling app estimates
(``scheduling.estimates``); neither knows the other. This module, above both, joins them: every
command, job and page that imports calls :func:`sites_refresh`, so a site is marked imported
only once its estimates come from its new data.
"""

from __future__ import annotations

import dataclasses
from collections import defaultdict
from collections.abc import Callable, Collection
from datetime import datetime, timedelta

import django_rq
from django.conf import settings
from django.db.models import Exists, OuterRef
from django.utils import timezone

from archive.archive_import import SIZE_MAX_AGE, refresh_plan
from archive.models import ArchiveCheck, Capture, LinkSnapshot, QueryMemory, Site
from archive.pipeline import ImportReport, Progress, Source, Step, sites_import
from archive.wayback import ArchiveClient, ArchiveConfig
from hacs.clock import to_days
from hacs.refresh_budget import (
    RefreshChoice,
    SiteState,
    capture_rate,
    choose_queries,
    default_budget,
    list_weights,
)
from hacs_site.clock import today
from scheduling.crawl_lists import CrawlListOptions, crawl_list_rank
from scheduling.estimates import estimates_recompute
from scheduling.learning import NoLearnedScorer

RATE_WINDOW_DAYS = 365.0  # the captures the archive's own rate of a site is estimated from


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


def sites_with_older_history() -> list[int]:
    """Sites whose last import from the archive left the contents of copies older than their
    window for the history pass (``Site.older_pending``), and that are not importing now."""
    waiting = Site.objects.filter(import_status=Site.ImportStatus.DONE, older_pending__gt=0)
    return list(waiting.order_by("pk").values_list("pk", flat=True))


def sites_with_failed_fetches() -> list[int]:
    """Sites holding an observation whose memento could not be fetched: the retry pass's work."""
    rows = Site.objects.filter(captures__snapshot__status=LinkSnapshot.Status.FAILED)
    return list(rows.distinct().order_by("pk").values_list("pk", flat=True))


def refresh_choice(
    site_ids: list[int], config: ArchiveConfig, *, budget: int, max_age_days: float,
    listed: Collection[int] | None = None, now: datetime | None = None,
) -> RefreshChoice:  # fmt: skip
    """Which of ``site_ids`` tonight's refresh checks within ``budget`` CDX requests
    (``hacs.refresh_budget.choose_queries``): the sites not checked for ``max_age_days`` first,
    then the queries whose sites most likely hold new captures per request — the archive's own
    capture rate of each site over the last year (``capture_rate``) times the time since it was
    last checked (or, never checked since checks were recorded, since its last import), the
    sites of ``listed`` (tonight's provisional list) weighing fully and the others 1 %
    (``list_weights``; None: all alike)."""
    now = now or timezone.now()
    source = config.source
    queries = refresh_plan(site_ids, source, config.index_lag_days)
    since = now - timedelta(days=RATE_WINDOW_DAYS)
    times: dict[int, list[float]] = defaultdict(list)
    rows = Capture.objects.filter(site_id__in=site_ids, source=source, timestamp__gte=since)
    for site_id, moment in rows.values_list("site_id", "timestamp").distinct():
        times[site_id].append(to_days(moment))
    checked = dict(Site.objects.filter(pk__in=site_ids).values_list("pk", "imported_at"))
    checks = ArchiveCheck.objects.filter(site_id__in=site_ids, source=source)
    checked.update(checks.values_list("site_id", "checked_at"))
    today = to_days(now)
    sites = {
        site_id: SiteState(
            site_id,
            capture_rate(sorted(times[site_id]), today, window_days=RATE_WINDOW_DAYS),
            min(to_days(stamp), today) if (stamp := checked.get(site_id)) is not None else None,
        )
        for site_id in site_ids
    }
    # A group costs its pages of last time, and one request more when its size is to be asked.
    memory = QueryMemory.objects.filter(source=source, kind=QueryMemory.Kind.GROUP)
    fresh = now - SIZE_MAX_AGE
    cost = {key: max(1, n) for key, n in memory.values_list("key", "pages")}
    if config.dialect == "ia" and settings.HACS_REFRESH_GROUP_MAX_BLOCKS:
        sized = set(memory.filter(sized_at__gte=fresh).values_list("key", flat=True))
        for query in queries:
            if query.is_group and query.key not in sized:
                cost[query.key] = cost.get(query.key, 1) + 1
    weight = None if listed is None else list_weights(listed, site_ids)
    return choose_queries(
        queries, sites, now=today, budget=budget, max_age_days=max_age_days, cost=cost,
        weight=weight,
    )  # fmt: skip


def provisional_list() -> set[int]:
    """The sites tonight's refresh should know best: the list the daily defaults would build
    now (``scheduling.crawl_lists.crawl_list_rank``), at twice its budget when it has one. A
    learned method with no learned scheduler falls back to every site alike (empty set)."""
    options = CrawlListOptions.from_settings()
    if options.budget:
        options = dataclasses.replace(options, budget=2 * options.budget)
    try:
        ranked = crawl_list_rank(day=today(), options=options)
    except NoLearnedScorer:
        return set()
    return {site.site_id for site in ranked.sites}


def nightly_budget(config: ArchiveConfig) -> int:
    """``HACS_REFRESH_CDX_BUDGET``, or by default the requests 40 minutes hold at the CDX rate."""
    return settings.HACS_REFRESH_CDX_BUDGET or default_budget(config.cdx_per_minute)
