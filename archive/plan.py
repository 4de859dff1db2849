"""The CDX queries that bring sites up to date from an archive, and what the last answers taught.

* :func:`refresh_plan` — the queries (``hacs.formats.queries.plan_queries``): a site with no
  capture from this archive reads its whole history alone; the others are asked by host or
  common path prefix, split where the last answer was too big, one seed at a time on hosts where
  the recall audit found the archive's group answers missing captures.
* :func:`refresh_seeds` — each site's ``from`` (``hacs.formats.queries.refresh_from``): the
  newest capture the answer of its last check held (:class:`archive.models.ArchiveCheck`) less
  the archive's longest indexing lag (``HACS_CDX_INDEX_LAG_DAYS``), or, for a group asked from
  that lag within the last :data:`WIDE_MAX_AGE`, less the lag the archive really shows on the
  host (:func:`host_lags`, ``hacs.index_lag``): a nightly host query then reads days, not a
  month, of its host's rows.
* :func:`late_captures_record` — the margins the captures a refresh found late needed, counted
  per host (:class:`archive.models.QueryMemory`, ``late_days``).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import datetime, timedelta

from django.db.models import Max
from django.utils import timezone

from archive.models import ArchiveCheck, Capture, QueryMemory, Site
from hacs.formats.canon import SeedScope
from hacs.formats.queries import SHARED_HOSTS, CdxQuery, RefreshSeed, plan_queries, refresh_from
from hacs.index_lag import add_margins, host_lag, index_lag

__all__ = [
    "SIZE_MAX_AGE",
    "WIDE_MAX_AGE",
    "host_lags",
    "late_captures_record",
    "refresh_plan",
    "refresh_seeds",
]

SIZE_MAX_AGE = timedelta(days=30)  # a group's size is asked again after this
# A group is asked from the longest lag at least this often, so that a capture the archive
# indexed later than the measured lag is still found (and its margin counted).
WIDE_MAX_AGE = timedelta(days=30)


def refresh_plan(
    site_ids: Sequence[int], source: str, lag_days: float, *, full: bool = False
) -> list[CdxQuery]:
    """The CDX queries that bring ``site_ids`` up to date from the archive ``source``."""
    seeds = refresh_seeds(site_ids, source, lag_days, full=full)
    memory = QueryMemory.objects.filter(source=source)
    groups = memory.filter(kind=QueryMemory.Kind.GROUP)
    too_big = set(groups.filter(too_big=True).values_list("key", flat=True))
    recent = timezone.now() - WIDE_MAX_AGE
    narrow = set(groups.filter(wide_at__gte=recent).values_list("key", flat=True))
    alone = set(
        memory.filter(kind=QueryMemory.Kind.HOST, per_seed=True).values_list("key", flat=True)
    )
    return plan_queries(seeds, too_big=too_big, shared_hosts=SHARED_HOSTS | alone, narrow=narrow)


def refresh_seeds(
    site_ids: Sequence[int], source: str, lag_days: float, *, full: bool = False
) -> list[RefreshSeed]:
    """Each site with the ``from`` to ask from (the module docstring); None for a site holding
    no capture from this archive, or for every site with ``full``."""
    ids = list(site_ids)
    urls = dict(Site.objects.filter(pk__in=ids).values_list("pk", "seed_url"))
    anchors: dict[int, datetime] = {}
    if not full:
        newest = (
            Capture.objects.filter(site_id__in=ids, source=source)
            .values("site_id")
            .annotate(newest=Max("timestamp"))
            .values_list("site_id", "newest")
        )
        anchors = dict(newest)
        checks = ArchiveCheck.objects.filter(
            site_id__in=anchors, source=source, newest_seen__isnull=False
        )
        for site_id, seen in checks.values_list("site_id", "newest_seen"):
            if seen is not None:
                anchors[site_id] = max(seen, anchors[site_id])
    lags, pooled = host_lags(source, lag_days) if anchors else ({}, lag_days)
    seeds = []
    for site_id in ids:
        if site_id not in urls:
            continue
        anchor = anchors.get(site_id)
        if anchor is None:
            seeds.append(RefreshSeed(site_id, urls[site_id], None))
            continue
        since = refresh_from(anchor, margin_days=lag_days)
        margin = lags.get(_host_key(urls[site_id]), pooled)
        narrow = refresh_from(anchor, margin_days=min(margin, lag_days))
        seeds.append(RefreshSeed(site_id, urls[site_id], since, narrow))
    return seeds


def _host_key(url: str) -> str:
    """A seed's host key ("" for a URL that is not one: ``plan_queries`` names it)."""
    try:
        return SeedScope.from_url(url).host_key
    except ValueError:
        return ""


def host_lags(source: str, cap_days: float) -> tuple[dict[str, float], float]:
    """The indexing lag (days) a host's queries allow for: from the late captures counted on
    the host when they are enough, else on every host together (the second value, for the hosts
    not listed), else ``cap_days`` (``hacs.index_lag.host_lag``)."""
    if cap_days <= 0:
        return {}, cap_days
    rows = QueryMemory.objects.filter(source=source, kind=QueryMemory.Kind.HOST)
    counts = {key: list(days) for key, days in rows.values_list("key", "late_days") if days}
    width = max((len(days) for days in counts.values()), default=0)
    pooled = [sum(days[i] for days in counts.values() if i < len(days)) for i in range(width)]
    lags = {key: host_lag(days, pooled, cap=cap_days) for key, days in counts.items()}
    found = index_lag(pooled, cap=cap_days)
    return lags, cap_days if found is None else found


def late_captures_record(source: str, host: str, margins: Iterable[float], cap_days: float) -> None:
    """Count, for ``host``, the margins (days) the captures a refresh found late needed
    (``hacs.index_lag.late_margins``), one bucket a day up to ``cap_days``."""
    margins = list(margins)
    if not margins or cap_days <= 0:
        return
    memory, _created = QueryMemory.objects.get_or_create(
        source=source, kind=QueryMemory.Kind.HOST, key=host
    )
    memory.late_days = add_margins(memory.late_days or [], margins, days=int(cap_days) + 1)
    memory.save(update_fields=["late_days", "updated_at"])
