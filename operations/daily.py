"""The morning's work, run by the cron scheduler (``operations.cron``): build today's crawl list,
then hand it to every enabled hand-off at its level (``handoff``).

Each hand-off ends with its own job record; one that fails (a crawler down, a directory gone)
leaves the stored list and the other hand-offs as they are.
"""

from __future__ import annotations

from handoff.services import hand_offs_run_for_list
from scheduling.jobs import daily_crawl_list
from scheduling.models import CrawlList


def daily_crawl_list_and_hand_offs() -> int:
    """Build today's list with the configured defaults and hand it off; returns the list's id."""
    list_id = daily_crawl_list()
    crawl_list = CrawlList.objects.get(pk=list_id)
    hand_offs_run_for_list(crawl_list=crawl_list, queue="daily")
    return list_id
