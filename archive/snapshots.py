"""Link snapshots and update data: what each distinct content links to, and which observations
are updates.

* :func:`snapshots_missing` — the distinct (urlkey, digest) contents of a site with no usable
  snapshot yet (a failed fetch is wanted again, so a later pass retries it);
* :func:`snapshots_fetch` — fetches and parses each of them once;
* :func:`updates_compute` — numbers each page's observations and stores the one integer per
  observation of DESIGN's hint for speed (``hacs.updates.link_floors``).
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.db import transaction
from django.db.models import OuterRef, Subquery
from django.utils import timezone

from archive.models import Capture, LinkSnapshot
from archive.wayback import ArchiveError
from hacs.formats.cdx import format_timestamp
from hacs.formats.links import decode_html, extract_links
from hacs.updates import link_floors, new_link_counts

BATCH = 2000
LOOKUP_BATCH = 500  # urlkeys looked up in one query
_SNAPSHOT_CONTENT = ["status", "links", "link_count", "error"]  # what a new attempt replaces
FLUSH = 500  # changed observations held (each with its page's link set) before they are written


@dataclass(frozen=True)
class SnapshotWanted:
    """A content to fetch: its page, its digest, and the URL and time of its first capture."""

    urlkey: str
    digest: str
    url: str
    moment: datetime  # aware, UTC, as the capture stores it

    @property
    def timestamp(self) -> str:
        """The 14-digit Wayback timestamp that addresses the capture's memento."""
        return format_timestamp(self.moment)


def snapshots_missing(*, site_ids: Iterable[int]) -> list[SnapshotWanted]:
    """Distinct (urlkey, digest) of the sites' 200 HTML captures with no usable snapshot yet.

    Revisits carry the digest of an earlier 200 capture of the same URL, so they never need a
    fetch of their own. A snapshot whose fetch failed is wanted again (retried in a later pass).
    Each content is fetched at its first capture; the newest contents come first, so that an
    import cut short has the recent history, which decides today's crawl list.
    """
    done = set(
        LinkSnapshot.objects.filter(
            status__in=[LinkSnapshot.Status.OK, LinkSnapshot.Status.TOO_LARGE],
            urlkey__in=Subquery(
                Capture.objects.filter(site_id__in=list(site_ids)).values("urlkey")
            ),
        ).values_list("urlkey", "digest")
    )
    wanted: dict[tuple[str, str], SnapshotWanted] = {}
    rows = (
        Capture.objects.filter(site_id__in=list(site_ids), kind=Capture.Kind.OBSERVATION)
        .order_by("timestamp")
        .values_list("urlkey", "digest", "url", "timestamp")
    )
    for urlkey, digest, url, moment in rows:
        key = (urlkey, digest)
        if key in done or key in wanted:
            continue
        wanted[key] = SnapshotWanted(urlkey, digest, url, moment)
    return sorted(wanted.values(), key=lambda w: w.moment, reverse=True)


def snapshot_from_body(
    *,
    urlkey: str,
    digest: str,
    url: str,
    body: bytes,
    content_type: str | None,
    truncated: bool = False,
) -> LinkSnapshot:
    """A parsed snapshot (not saved) from a page's raw bytes."""
    if truncated:
        return LinkSnapshot(
            urlkey=urlkey,
            digest=digest,
            status=LinkSnapshot.Status.TOO_LARGE,
            error="The archived page is larger than HACS_MAX_MEMENTO_BYTES.",
        )
    links = sorted(extract_links(decode_html(body, content_type), url))
    return LinkSnapshot(
        urlkey=urlkey,
        digest=digest,
        status=LinkSnapshot.Status.OK,
        links="\n".join(links),
        link_count=len(links),
    )


def snapshots_save(snapshots: Sequence[LinkSnapshot]) -> int:
    """Save snapshots, replacing earlier failed attempts at the same content.

    A failed attempt is overwritten in place, a batch in a few statements, where deleting it
    cost two statements a content (and setting its captures' link to null): a short write, on
    SQLite, which lets one connection write at a time."""
    if not snapshots:
        return 0
    good = {(s.urlkey, s.digest): s for s in snapshots if s.status != LinkSnapshot.Status.FAILED}
    urlkeys = sorted({urlkey for urlkey, _digest in good})
    with transaction.atomic():
        replaced = []
        for start in range(0, len(urlkeys), LOOKUP_BATCH):
            earlier = LinkSnapshot.objects.filter(
                status=LinkSnapshot.Status.FAILED, urlkey__in=urlkeys[start : start + LOOKUP_BATCH]
            ).only("pk", "urlkey", "digest")
            for row in earlier:
                new = good.get((row.urlkey, row.digest))
                if new is not None:
                    for name in _SNAPSHOT_CONTENT:
                        setattr(row, name, getattr(new, name))
                    row.fetched_at = timezone.now()
                    replaced.append(row)
        LinkSnapshot.objects.bulk_update(
            replaced, [*_SNAPSHOT_CONTENT, "fetched_at"], batch_size=BATCH
        )
        LinkSnapshot.objects.bulk_create(snapshots, batch_size=BATCH, ignore_conflicts=True)
    return len(snapshots)


def snapshots_fetch(
    *,
    site_ids: Iterable[int],
    fetch: Callable[[str, str], Any],
    on_fetch: Callable[[], None] | None = None,
) -> Counter[str]:
    """Fetch and parse each missing snapshot once; ``fetch(timestamp, url)`` returns a memento."""
    counts: Counter[str] = Counter()
    pending: list[LinkSnapshot] = []
    for wanted in snapshots_missing(site_ids=site_ids):
        try:
            memento = fetch(wanted.timestamp, wanted.url)
            snapshot = snapshot_from_body(
                urlkey=wanted.urlkey,
                digest=wanted.digest,
                url=wanted.url,
                body=memento.body,
                content_type=memento.content_type,
                truncated=memento.truncated,
            )
            counts["fetched"] += 1
        except ArchiveError as error:
            snapshot = LinkSnapshot(
                urlkey=wanted.urlkey,
                digest=wanted.digest,
                status=LinkSnapshot.Status.FAILED,
                error=str(error)[:2000],
            )
            counts["fetch failed"] += 1
        pending.append(snapshot)
        if on_fetch is not None:
            on_fetch()
        if len(pending) >= 50:
            snapshots_save(pending)
            pending = []
    snapshots_save(pending)
    return counts


def updates_compute(*, site_ids: Iterable[int]) -> int:
    """Link each observation to its snapshot and recompute the per-page update data.

    Per page (``page_key``), observations with a parsed snapshot are numbered in time order
    (``page_index``); ``link_floor`` and ``new_links`` follow DESIGN's speed hint (see
    ``hacs.updates``). Observations whose content could not be read get no index and so
    take no part in estimates until a later pass fetches them.

    One transaction a site: on SQLite, which lets one connection write at a time, a login or an
    upload waits for one site's work at most, never for a whole import's batch.
    """
    changed = 0
    for site_id in site_ids:
        with transaction.atomic():
            changed += _site_updates_compute(site_id)
    return changed


def _site_updates_compute(site_id: int) -> int:
    """``updates_compute`` for one site, in the caller's transaction."""
    snapshot_id = Subquery(
        LinkSnapshot.objects.filter(urlkey=OuterRef("urlkey"), digest=OuterRef("digest")).values(
            "pk"
        )[:1]
    )
    observations = Capture.objects.filter(site_id=site_id, is_observation=True)
    observations.update(snapshot_id=snapshot_id)
    changed: list[Capture] = []
    written = 0
    by_page: dict[str, list[Capture]] = defaultdict(list)
    for capture in observations.select_related("snapshot").order_by(
        "page_key", "timestamp", "urlkey"
    ):
        snapshot = capture.snapshot
        if snapshot is not None and snapshot.status == LinkSnapshot.Status.OK:
            by_page[capture.page_key].append(capture)
        elif capture.page_index is not None or capture.link_floor is not None:
            capture.page_index = capture.link_floor = capture.new_links = None
            changed.append(capture)
    for page in by_page.values():
        link_sets = [c.snapshot.link_set() for c in page if c.snapshot is not None]
        floors = link_floors(link_sets)
        fresh = new_link_counts(link_sets)
        for i, capture in enumerate(page):
            values = (i, int(floors[i]), int(fresh[i]))
            if (capture.page_index, capture.link_floor, capture.new_links) != values:
                capture.page_index, capture.link_floor, capture.new_links = values
                changed.append(capture)
        if len(changed) >= FLUSH:
            # Written as they come: each changed row holds its page's link set, so keeping a
            # big site's until the end grew with its history.
            written += _updates_write(changed)
    return written + _updates_write(changed)


def _updates_write(changed: list[Capture]) -> int:
    """Write the update data of ``changed`` and forget them; returns how many were written."""
    Capture.objects.bulk_update(
        changed, ["page_index", "link_floor", "new_links"], batch_size=BATCH
    )
    count = len(changed)
    changed.clear()
    return count
