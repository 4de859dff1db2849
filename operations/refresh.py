"""Bringing sites up to date: the import pipeline followed by the sites' estimates.

The archive app imports (``archive.pipeline``) and the scheduling app estimates
(``scheduling.estimates``); neither knows the other. This module, above both, joins them: every
command, job and page that imports calls :func:`sites_refresh`, so a site is marked imported
only once its estimates come from its new data.
"""

from __future__ import annotations

import dataclasses
from collections import defaultdict
from collections.abc import Mapping
from datetime import datetime, timedelta

import django_rq
from django.conf import settings
from django.db.models import Exists, OuterRef
from django.utils import timezone

from archive.models import ArchiveCheck, Capture, LinkSnapshot, QueryMemory, Site
from archive.pipeline import ImportReport, Source, sites_import
from archive.plan import SIZE_MAX_AGE, refresh_plan
from archive.wayback import ArchiveClient, ArchiveConfig
from hacs.clock import from_days, to_days
from hacs.formats.queries import CdxQuery
from hacs.progress import Report, report_nothing
from hacs.refresh_budget import (
    RATE_WINDOW_DAYS,
    RefreshChoice,
    RefreshPolicy,
    SiteState,
    audited_groups,
    choose_queries,
    deadline,
    default_budget,
    site_state,
)
from hacs_site.clock import today
from scheduling.crawl_lists import CrawlListOptions, crawl_list_rank
from scheduling.estimates import estimates_recompute
from scheduling.learning import NoLearnedScorer


def archive_client() -> ArchiveClient:
    """A client for the configured archive, sharing its rate limit with every worker."""
    return ArchiveClient(ArchiveConfig.from_settings(), django_rq.get_connection("import"))


def sites_refresh(
    source: Source, *, client: ArchiveClient | None = None, report: Report = report_nothing
) -> ImportReport:
    """Import from ``source`` and recompute the estimates of every site brought up to date;
    ``report`` is told of the progress (``archive.pipeline.sites_import``)."""
    return sites_import(
        source,
        client=client,
        report=report,
        after=lambda site_ids: estimates_recompute(site_ids=site_ids),
    )


def sites_from_archive(config: ArchiveConfig | None = None) -> list[int]:
    """The nightly refresh's work: the sites holding a capture read from the configured
    archive's CDX server, and the seeds it was asked about (their first import) without having
    captured them, which are asked again on a back-off. Sites known only from WARC or CDX files
    are left as they are."""
    source = (config or ArchiveConfig.from_settings()).source
    # EXISTS per site stops at its first such capture, where a join would read them all.
    held = Capture.objects.filter(site=OuterRef("pk"), source=source)
    asked = ArchiveCheck.objects.filter(site=OuterRef("pk"), source=source)
    sites = Site.objects.filter(Exists(held) | Exists(asked))
    return list(sites.order_by("pk").values_list("pk", flat=True))


def sites_with_older_history() -> list[int]:
    """Sites whose last import from the archive left the contents of copies older than their
    window for the history pass (``Site.older_pending``), and that are not importing now."""
    waiting = Site.objects.filter(import_status=Site.ImportStatus.DONE, older_pending__gt=0)
    return list(waiting.order_by("pk").values_list("pk", flat=True))


def sites_with_failed_fetches() -> list[int]:
    """Sites holding an observation whose memento could not be fetched: the retry pass's work."""
    rows = Site.objects.filter(captures__snapshot__status=LinkSnapshot.Status.FAILED)
    return list(rows.distinct().order_by("pk").values_list("pk", flat=True))


def refresh_policy() -> RefreshPolicy:
    """The nightly refresh's rule with the configured max age and due share."""
    return RefreshPolicy(
        max_age_days=settings.HACS_REFRESH_MAX_AGE_DAYS, due_share=settings.HACS_REFRESH_DUE_SHARE
    )


def refresh_choice(
    site_ids: list[int],
    config: ArchiveConfig,
    *,
    budget: int,
    policy: RefreshPolicy,
    stakes: Mapping[int, float] | None = None,
    now: datetime | None = None,
) -> RefreshChoice:
    """Which of ``site_ids`` tonight's refresh checks within ``budget`` CDX requests: the
    queries the import would send (``refresh_plan``), each site's state as the benches build it
    (``hacs.refresh_budget.site_state``: its captures from this archive over the last year, its
    last and first checks, whether it holds any capture, and its probability on tonight's
    provisional list, ``stakes``), each query's cost, all handed to
    ``hacs.refresh_budget.choose_queries`` under ``policy``."""
    now = now or timezone.now()
    queries = refresh_plan(site_ids, config.source, config.index_lag_days)
    today_days = to_days(now)
    states = _site_states(site_ids, config.source, now, stakes or {})
    return choose_queries(
        queries,
        states,
        now=today_days,
        budget=budget,
        policy=policy,
        cost=query_costs(queries, config, now),
    )


def _site_states(
    site_ids: list[int], source: str, now: datetime, stakes: Mapping[int, float]
) -> dict[int, SiteState]:
    """Each site's ``site_state`` from what HACS holds: its captures from ``source`` over the
    last year, whether it holds any (and any older), its last and first checks (a site never
    checked counts from its import), and its stake."""
    since = now - timedelta(days=RATE_WINDOW_DAYS)
    times = _capture_days(site_ids, source, since)
    held = Capture.objects.filter(site=OuterRef("pk"), source=source)
    sites = Site.objects.filter(pk__in=site_ids).annotate(
        captured=Exists(held), older=Exists(held.filter(timestamp__lt=since))
    )
    known = {
        pk: (imported, captured, older)
        for pk, imported, captured, older in sites.values_list(
            "pk", "imported_at", "captured", "older"
        )
    }
    checks = ArchiveCheck.objects.filter(site_id__in=site_ids, source=source)
    checked = {
        pk: (at, first)
        for pk, at, first in checks.values_list("site_id", "checked_at", "first_checked_at")
    }
    today_days = to_days(now)
    states = {}
    for site_id in site_ids:
        imported, captured, older = known.get(site_id, (None, False, False))
        last, first = checked.get(site_id, (imported, None))
        states[site_id] = site_state(
            site_id,
            times[site_id],
            now=today_days,
            checked=None if last is None else to_days(last),
            first_checked=None if first is None else to_days(first),
            stake=stakes.get(site_id, 0.0),
            captured=captured,
            older=older,
        )
    return states


def _capture_days(site_ids: list[int], source: str, since: datetime) -> dict[int, list[float]]:
    """The distinct capture times (days) from ``source`` of each site since ``since``."""
    times: dict[int, list[float]] = defaultdict(list)
    rows = Capture.objects.filter(site_id__in=site_ids, source=source, timestamp__gte=since)
    for site_id, moment in rows.values_list("site_id", "timestamp").distinct():
        times[site_id].append(to_days(moment))
    return times


def site_next_check(site_id: int, config: ArchiveConfig) -> tuple[bool, datetime | None]:
    """Whether HACS holds a capture of the site from the configured archive, and when the
    nightly refresh must ask about it next (``hacs.refresh_budget.deadline``: for a seed the
    archive had not captured, its back-off; None when the archive was never asked)."""
    check = ArchiveCheck.objects.filter(site_id=site_id, source=config.source).first()
    captured = Capture.objects.filter(site_id=site_id, source=config.source).exists()
    if check is None:
        return captured, None
    first = check.first_checked_at
    state = SiteState(
        site_id,
        0.0,
        to_days(check.checked_at),
        None if first is None else to_days(first),
        captured=captured,
    )
    return captured, from_days(deadline(state, refresh_policy()))


def query_costs(queries: list[CdxQuery], config: ArchiveConfig, now: datetime) -> dict[str, int]:
    """The requests each query is expected to take: a group its pages of last time, one
    request more when its size is to be asked (never sized, or sized more than 30 days ago),
    and one more when tonight's recall audit samples it (``hacs.refresh_budget.audited_groups``:
    its exact query comes out of the same budget)."""
    memory = QueryMemory.objects.filter(source=config.source, kind=QueryMemory.Kind.GROUP)
    cost = {key: max(1, n) for key, n in memory.values_list("key", "pages")}
    if config.dialect == "ia" and settings.HACS_REFRESH_GROUP_MAX_BLOCKS:
        fresh = now - SIZE_MAX_AGE
        sized = set(memory.filter(sized_at__gte=fresh).values_list("key", flat=True))
        for query in queries:
            if query.is_group and query.key not in sized:
                cost[query.key] = cost.get(query.key, 1) + 1
    for key in audited_groups(queries, now.date(), settings.HACS_REFRESH_AUDIT_SHARE):
        cost[key] = cost.get(key, 1) + 1
    return cost


def provisional_list() -> dict[int, float]:
    """The sites tonight's refresh should know best, with their probability of change: the
    list the daily defaults would build now (``scheduling.crawl_lists.crawl_list_rank``), at
    twice its budget when it has one. A learned method with no learned scheduler falls back to
    no list (empty)."""
    options = CrawlListOptions.from_settings()
    if options.budget:
        options = dataclasses.replace(options, budget=2 * options.budget)
    try:
        ranked = crawl_list_rank(day=today(), options=options)
    except NoLearnedScorer:
        return {}
    return {site.site_id: min(1.0, max(0.0, site.probability)) for site in ranked.sites}


def nightly_budget(config: ArchiveConfig) -> int:
    """``HACS_REFRESH_CDX_BUDGET``, or by default the requests 40 minutes hold at the CDX rate."""
    return settings.HACS_REFRESH_CDX_BUDGET or default_budget(config.cdx_per_minute)
