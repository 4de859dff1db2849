"""The list's own yield: what the crawl of each handed-off list found.

A list handed off (its first hand-off sent) gets a ``ListYield``: how many sites it named and
the sum of their probabilities, what HACS expected the crawl to find. After each read-back
(``operations.readback``) the yields of the lists whose crawl window is recent are counted again
from the captures stored:

* the crawl's window runs from the list's first hand-off until the next list at its level was
  handed off, and at most ``HACS_CRAWL_WAIT_HOURS`` (a crawl still running past the next
  morning counts for the next list);
* a listed site is *reached* when a library crawl (any read-back source, ``archive.sources``)
  holds a capture of it in the window, at the list's level (the homepage, or any page to
  depth 2);
* it *changed* when one of those captures is an observation that is an update over the page's
  whole history (DESIGN rule 3 with the window at the page's first observation): it holds a link
  that no earlier copy of the page held, so it changed since HACS's newest copy before the
  crawl, whatever source that copy came from.

The round-robin expectation beside it is stored on the list when it is built
(``CrawlList.round_robin_expected``): what a list of the same size, oldest copy first, was
expected to find by the same posterior.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime, timedelta

from django.conf import settings
from django.db.models import Sum
from django.utils import timezone

from archive.models import Capture
from archive.sources import CRAWL_PREFIX
from handoff.models import ListYield
from scheduling.models import CrawlList, CrawlListEntry, Level

CHUNK = 500  # site ids per query


def list_yield_start(*, crawl_list: CrawlList, at: datetime) -> ListYield:
    """The list's yield row once it is handed off (the first hand-off's time is kept)."""
    found = ListYield.objects.filter(crawl_list=crawl_list).first()
    if found is not None:
        if at < found.handed_off_at:
            found.handed_off_at = at
            found.save(update_fields=["handed_off_at"])
        return found
    entries = crawl_list.entries.aggregate(total=Sum("probability"))
    return ListYield.objects.create(
        crawl_list=crawl_list,
        handed_off_at=at,
        listed=crawl_list.entries.count(),
        expected=float(entries["total"] or 0.0),
    )


def list_yields_update(*, now: datetime | None = None) -> int:
    """Count again the yields whose crawl window may still be filling (handed off within the
    last ``HACS_CRAWL_WAIT_HOURS`` and a day); returns how many were counted."""
    now = now or timezone.now()
    wait = timedelta(hours=settings.HACS_CRAWL_WAIT_HOURS)
    recent = ListYield.objects.filter(handed_off_at__gte=now - wait - timedelta(days=1))
    rows = list(recent.select_related("crawl_list").order_by("handed_off_at"))
    for row in rows:
        list_yield_count(row, now=now)
    return len(rows)


def list_yield_window(row: ListYield, *, now: datetime) -> tuple[datetime, datetime]:
    """The crawl's window of a handed-off list (see the module)."""
    level = row.crawl_list.level
    following = (
        ListYield.objects.filter(crawl_list__level=level, handed_off_at__gt=row.handed_off_at)
        .order_by("handed_off_at")
        .values_list("handed_off_at", flat=True)
        .first()
    )
    end = row.handed_off_at + timedelta(hours=settings.HACS_CRAWL_WAIT_HOURS)
    if following is not None:
        end = min(end, following)
    return row.handed_off_at, min(end, max(now, row.handed_off_at))


def list_yield_count(row: ListYield, *, now: datetime | None = None) -> ListYield:
    """Count the list's reached and changed sites from the captures stored (see the module)."""
    now = now or timezone.now()
    start, end = list_yield_window(row, now=now)
    site_ids = list(
        CrawlListEntry.objects.filter(crawl_list_id=row.crawl_list_id).values_list(
            "site_id", flat=True
        )
    )
    homepage = row.crawl_list.level == Level.HOMEPAGE
    reached: set[int] = set()
    changed: set[int] = set()
    for site_id, is_observation, page_index, floor in _crawl_captures(
        site_ids, start, end, homepage=homepage
    ):
        reached.add(site_id)
        if is_observation and page_index is not None and floor is not None:
            if page_index > 0 and floor < 0:
                changed.add(site_id)
    row.reached, row.changed, row.computed_at = len(reached), len(changed), now
    row.save(update_fields=["reached", "changed", "computed_at"])
    return row


def _crawl_captures(
    site_ids: list[int], start: datetime, end: datetime, *, homepage: bool
) -> Iterable[tuple[int, bool, int | None, int | None]]:
    """The library crawls' captures of the sites in [start, end): per site, through the
    (site, is_observation, depth, timestamp) index."""
    for at in range(0, len(site_ids), CHUNK):
        rows = Capture.objects.filter(
            site_id__in=site_ids[at : at + CHUNK],
            timestamp__gte=start,
            timestamp__lt=end,
            source__startswith=CRAWL_PREFIX,
        )
        if homepage:
            rows = rows.filter(depth=0)
        yield from rows.values_list("site_id", "is_observation", "page_index", "link_floor")


def list_yields_recent(*, weeks: int = 8, now: datetime | None = None) -> list[ListYield]:
    """The yields of the lists handed off in the last ``weeks`` weeks, oldest first, with
    their lists (one query)."""
    now = now or timezone.now()
    since = now - timedelta(weeks=weeks)
    rows = ListYield.objects.filter(handed_off_at__gte=since).select_related("crawl_list")
    return list(rows.order_by("handed_off_at"))
