"""Seed health from the captures HACS holds (the rules are ``hacs.health``'s).

* :func:`sites_health_update` — reads the sites' homepage captures in batches (one query per
  500 sites) and stores each site's ``SiteHealth`` (moved or gone, the evidence, the newest
  good capture). ``archive.status.sites_finish`` calls it for every site an import finishes;
  a full recompute of the estimates calls it for all sites.
* :func:`site_move` — the librarian's "add the new address": the redirect's target becomes a
  seed through the seed list's own path (``archive.seeds.seeds_import``: validated,
  canonicalised, an existing seed found rather than duplicated), linked from the old site.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime

from django.conf import settings
from django.db import transaction

from archive.models import Capture, Site, SiteHealth
from archive.seeds import seeds_import
from hacs.clock import from_days, to_days
from hacs.health import CaptureHealth, capture_health

__all__ = ["MoveError", "MoveResult", "site_move", "sites_health_update"]

BATCH = 500
_FIELDS = ["problem", "since", "count", "target", "status", "last_good", "captured", "computed_at"]


def sites_health_update(*, site_ids: Sequence[int] | None = None, recent: int | None = None) -> int:
    """Compute and store the health of the sites (all when None); returns rows written.

    ``recent`` defaults to ``HACS_HEALTH_RECENT_CAPTURES``. A site whose stored seed URL is not
    an http(s) URL gets an empty health row rather than failing the others.
    """
    recent = recent if recent is not None else settings.HACS_HEALTH_RECENT_CAPTURES
    ids = (
        sorted(Site.objects.values_list("pk", flat=True)) if site_ids is None else sorted(site_ids)
    )
    written = 0
    for start in range(0, len(ids), BATCH):
        chunk = ids[start : start + BATCH]
        seeds = dict(Site.objects.filter(pk__in=chunk).values_list("pk", "seed_url"))
        rows = [
            _row(site_id, seeds[site_id], captures, recent)
            for site_id, captures in _homepage_captures(chunk, seeds)
        ]
        with transaction.atomic():
            SiteHealth.objects.bulk_create(
                rows, update_conflicts=True, unique_fields=["site"], update_fields=_FIELDS
            )
        written += len(rows)
    return written


_Capture = tuple[datetime, bool, int | None, str | None, str]


def _homepage_captures(
    chunk: Sequence[int], seeds: dict[int, str]
) -> Iterator[tuple[int, list[_Capture]]]:
    """Each site of the chunk with its homepage captures in time order (one query)."""
    found: dict[int, list[_Capture]] = {site_id: [] for site_id in seeds}
    rows = (
        Capture.objects.filter(site_id__in=list(chunk), depth=0)
        .order_by("site_id", "timestamp", "urlkey")
        .values_list("site_id", "timestamp", "is_observation", "status", "location", "url")
    )
    for site_id, *capture in rows.iterator(chunk_size=5000):
        found[site_id].append(tuple(capture))  # type: ignore[arg-type]
    yield from found.items()


def _row(site_id: int, seed_url: str, captures: list[_Capture], recent: int) -> SiteHealth:
    try:
        health = capture_health(
            seed_url=seed_url,
            times=[to_days(c[0]) for c in captures],
            good=[c[1] for c in captures],
            statuses=[c[2] for c in captures],
            locations=[c[3] for c in captures],
            urls=[c[4] for c in captures],
            recent=recent,
        )
    except ValueError:
        health = CaptureHealth(captured=bool(captures))
    return SiteHealth(
        site_id=site_id,
        problem=health.problem,
        since=from_days(health.since) if health.since is not None else None,
        count=health.count,
        target=health.target,
        status=health.status,
        last_good=from_days(health.last_good) if health.last_good is not None else None,
        captured=health.captured,
    )


@dataclass(frozen=True)
class MoveResult:
    """The seed a moved site now points to, and whether it was added just now."""

    target: Site
    added: bool


class MoveError(ValueError):
    """The move cannot be recorded; the message says why."""


def site_move(*, site: Site) -> MoveResult:
    """Add the target of the site's redirects as a seed (or find it among the seeds) and link
    the old site to it. The new seed takes the old one's author and tags; the old site keeps
    its history. Raises ``MoveError`` when no target is known or the target is no usable seed.
    """
    health = SiteHealth.objects.filter(site=site).first()
    if health is None or health.problem != SiteHealth.Problem.MOVED or not health.target:
        raise MoveError("HACS knows no address this seed redirects to.")
    text = io.StringIO()
    writer = csv.writer(text)
    writer.writerow(["url", "author"])
    writer.writerow([health.target, site.author])
    report = seeds_import(
        data=text.getvalue(), extra_tags=list(site.tags.values_list("name", flat=True))
    )
    if report.parsed.rejected:
        reason = report.parsed.rejected[0].reason
        raise MoveError(f"{health.target} cannot be a seed: {reason}.")
    if report.added:
        target, added = report.added[0], True
    else:
        target, added = Site.objects.get(pk=report.already_stored[0][2]), False
    if target.pk == site.pk:
        raise MoveError(f"{health.target} is this seed itself.")
    Site.objects.filter(pk=site.pk).update(moved_to=target)
    site.moved_to = target
    return MoveResult(target=target, added=added)
