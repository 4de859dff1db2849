"""Handing a stored crawl list to a crawler, with a job record of each hand-off.

``hand_off_run`` is what the daily job, the ``hand_off`` command and the Crawl list page call:
it sends the list's URLs (at the hand-off's level; with a tag, only the sites carrying it; in
rank order) the hand-off's way, as a ``JobRecord`` of kind ``hand_off`` (its status, counts and
error, shown on the Jobs page), and keeps what was sent as a ``HandOffRun`` (the sites, the
steps done and the crawler's answer, shown beside the list), made as the job ends. It never
raises for a failed hand-off, so one failing crawler never stops another.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import date
from typing import Any

from django.db.models import OuterRef, Subquery

from hacs.progress import Progress
from handoff.browsertrix import browsertrix_deliver
from handoff.crawl_yield import list_yield_start
from handoff.delivery import Delivery, HandOffFailed
from handoff.heritrix import heritrix_deliver
from handoff.models import FollowedCrawl, HandOff, HandOffRun
from jobs.models import JobRecord
from jobs.runner import JobRun
from scheduling.crawl_lists import crawl_list_seed_urls
from scheduling.daily import daily_key
from scheduling.models import CrawlList

logger = logging.getLogger(__name__)


def hand_off_urls(*, hand_off: HandOff, crawl_list: CrawlList) -> list[str]:
    """The list's seed URLs in rank order; with the hand-off's tag, only the sites carrying it."""
    return list(crawl_list_seed_urls(crawl_list, tag_id=hand_off.tag_id))


def hand_off_list_for_day(*, hand_off: HandOff, day: date) -> CrawlList | None:
    """``day``'s daily list when it is at the hand-off's level (experiments are handed off
    only by hand, from the Crawl list page)."""
    return CrawlList.objects.daily().filter(date=day, level=hand_off.level).first()


def hand_off_check(*, hand_off: HandOff, crawl_list: CrawlList) -> str:
    """Empty when the hand-off may take the list, else the sentence saying why not."""
    if crawl_list.level != hand_off.level:
        return (
            f'Hand-off "{hand_off.name}" takes {hand_off.get_level_display().lower()}-level '
            f"lists; list {crawl_list.pk} ({crawl_list.date}) is at "
            f"{crawl_list.get_level_display().lower()} level."
        )
    return ""


def hand_off_deliver(
    *, hand_off: HandOff, crawl_list: CrawlList, urls: list[str], dry_run: bool = False
) -> Delivery:
    """Send ``urls`` the hand-off's way (or say what would be sent); raises ``HandOffFailed``."""
    problem = hand_off_check(hand_off=hand_off, crawl_list=crawl_list)
    if problem:
        raise HandOffFailed(problem)
    if hand_off.kind in HandOff.HERITRIX:
        tag = f', tag "{hand_off.tag}"' if hand_off.tag_id else ""
        header = [
            f"HACS crawl list {crawl_list.pk} for {crawl_list.date} "
            f"({crawl_list.level}, {crawl_list.method}{tag}): {len(urls)} sites in rank order",
            f'hand-off "{hand_off.name}"',
        ]
        return heritrix_deliver(
            hand_off=hand_off, day=crawl_list.date, urls=urls, header=header, dry_run=dry_run
        )
    return browsertrix_deliver(hand_off=hand_off, day=crawl_list.date, urls=urls, dry_run=dry_run)


def hand_off_run(
    *,
    hand_off: HandOff,
    crawl_list: CrawlList,
    user: Any = None,
    queue: str = "terminal",
    parent: JobRecord | None = None,
) -> HandOffRun:
    """Hand the list off now and record the outcome; never raises for a failed hand-off.

    ``queue`` names where it ran on the Jobs page ("daily", "terminal", "web"); none is an RQ
    queue, because the hand-off runs in place rather than through one. ``parent`` is the job
    the hand-off is a step of (the daily run's). The
    record keeps its lease while the crawler is being reached, so that only a hand-off whose
    process stopped is marked interrupted.
    """
    urls = hand_off_urls(hand_off=hand_off, crawl_list=crawl_list)
    tag = f" (tag {hand_off.tag})" if hand_off.tag_id else ""
    label = f"{hand_off.name}{tag}: list {crawl_list.pk} for {crawl_list.date} to {hand_off.target}"
    # The lease is kept while the crawler is being reached (in a worker, a request or a terminal).
    with JobRun.start(
        kind=JobRecord.Kind.HAND_OFF, label=label, queue=queue, total=1, user=user, parent=parent
    ) as job:
        status, sent, steps, message, crawl_id = _hand_off_send(hand_off, crawl_list, urls)
        failed = status == HandOffRun.Status.FAILED
        job.report(Progress(done=0 if failed else 1, counts={"sites": sent, "steps": len(steps)}))
        # The outcome is recorded whole: a finished job has its run, the crawl it started is
        # followed, and the list's yield is counted from then on.
        with job.ending(error=message if failed else ""):
            run = HandOffRun.objects.create(
                hand_off=hand_off,
                crawl_list=crawl_list,
                job=job.record,
                sites=sent,
                steps=steps,
                message=message,
                created_by=user if getattr(user, "is_authenticated", False) else None,
            )
            if status == HandOffRun.Status.SENT:
                list_yield_start(crawl_list=crawl_list, at=run.created_at)
            if crawl_id:
                FollowedCrawl.objects.create(run=run, crawl_id=crawl_id, checked_at=None)
    return run


def _hand_off_send(
    hand_off: HandOff, crawl_list: CrawlList, urls: list[str]
) -> tuple[str, int, list[str], str, str]:
    """Send the URLs; returns the outcome (status, sites sent, steps, message, the crawl it
    started)."""
    status, sent, crawl_id = HandOffRun.Status.FAILED, 0, ""
    steps: list[str] = []
    if not urls:
        status = HandOffRun.Status.EMPTY
        message = (
            f'Hand-off "{hand_off.name}": list {crawl_list.pk} has no site'
            + (f" carrying the tag {hand_off.tag}" if hand_off.tag_id else "")
            + "; nothing was sent."
        )
    else:
        try:
            delivery = hand_off_deliver(hand_off=hand_off, crawl_list=crawl_list, urls=urls)
        except HandOffFailed as failure:
            message, steps = failure.message, failure.steps
        except Exception as error:  # a bug or an odd system error: still one record, not a crash
            # The error's text may quote what a crawler sent; it goes to the log, not the pages.
            logger.exception("Hand-off %s failed", hand_off.pk)
            message = (
                f'Hand-off "{hand_off.name}" failed with an unexpected error '
                f"({type(error).__name__}); the log of HACS's workers has the details."
            )
        else:
            status, sent, steps, message = (
                HandOffRun.Status.SENT,
                len(urls),
                delivery.steps,
                delivery.message,
            )
            crawl_id = delivery.crawl_id
    return status, sent, steps, message, crawl_id


def hand_offs_run_daily(
    *, crawl_list: CrawlList, parent: JobRecord | None = None
) -> list[HandOffRun]:
    """The daily run's hand-offs: every enabled hand-off at the list's level that has not yet
    taken a daily list of that date, one after the other; a failing one is recorded and the
    next one still runs. A daily run taken over after its worker stopped thus sends what the
    stopped one had not sent (a hand-off stopped while sending is sent again), and nothing twice.
    """
    done = HandOffRun.objects.filter(
        job__parent__key=daily_key(crawl_list.date), crawl_list__level=crawl_list.level
    ).values("hand_off")
    hand_offs = (
        HandOff.objects.filter(enabled=True, level=crawl_list.level)
        .exclude(pk__in=done)
        .select_related("tag")
    )
    return [
        hand_off_run(hand_off=h, crawl_list=crawl_list, queue="daily", parent=parent)
        for h in hand_offs
    ]


@dataclass(frozen=True)
class HandOffRow:
    """A hand-off as the Crawl list page shows it, with its newest outcome."""

    hand_off: HandOff
    last: HandOffRun | None


def hand_offs_at_level(level: str) -> list[HandOffRow]:
    """The hand-offs configured for lists at ``level``, each with its newest run (two queries)."""
    newest = HandOffRun.objects.filter(hand_off=OuterRef("pk")).order_by("-created_at", "-pk")
    hand_offs = list(
        HandOff.objects.filter(level=level)
        .select_related("tag")
        .annotate(last_run_id=Subquery(newest.values("pk")[:1]))
    )
    ids = [h.last_run_id for h in hand_offs if h.last_run_id is not None]  # type: ignore[attr-defined]
    runs = HandOffRun.objects.select_related("crawl_list", "job").in_bulk(ids)
    return [HandOffRow(h, runs.get(h.last_run_id)) for h in hand_offs]  # type: ignore[attr-defined]
