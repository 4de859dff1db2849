"""``{% hand_offs_for crawl_list as rows %}``: the hand-offs at a list's level, each with its
newest outcome, for the Crawl list page."""

from django import template

from handoff.services import HandOffRow, hand_offs_at_level
from scheduling.models import CrawlList

register = template.Library()


@register.simple_tag
def hand_offs_for(crawl_list: CrawlList | None) -> list[HandOffRow]:
    return [] if crawl_list is None else hand_offs_at_level(crawl_list.level)
