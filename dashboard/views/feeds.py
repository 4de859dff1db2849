"""Atom feeds for feed readers, at each user's secret address, and the Feeds page showing it.

The feeds need no login (a feed reader has none): the address's token stands for the user, and
a wrong, reset or inactive user's token answers 404 like an address that never existed. A token
opens these three feeds and nothing else.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any
from urllib.parse import urlencode

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_not_required
from django.contrib.syndication.views import Feed
from django.http import Http404, HttpRequest, HttpResponse
from django.http.request import split_domain_port
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.utils.feedgenerator import Atom1Feed
from django.utils.html import escape, format_html, format_html_join
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_POST

from archive.models import Tag
from dashboard.feeds import (
    FEED_LIST_ENTRIES,
    FEED_UPDATES,
    SiteUpdate,
    crawl_list_entries,
    feed_token_of,
    feed_token_reset,
    feed_token_user,
    newest_crawl_list,
    recent_updates,
)
from scheduling.cells import day_text, due_text, interval_text, moment, when_text
from scheduling.models import CrawlListEntry, Level

# The date part of the feeds' tag URIs (RFC 4151) that no entry dates: the year HACS's feeds began.
FEED_TAG_YEAR = "2026"


class AtomWithContent(Atom1Feed):
    """Atom with each entry's ``<content type="html">`` beside its summary."""

    def add_item_elements(self, handler: Any, item: dict[str, Any]) -> None:
        super().add_item_elements(handler, item)
        if item.get("content"):
            handler.addQuickElement("content", item["content"], {"type": "html"})


@dataclass(frozen=True)
class Entry:
    """One feed entry; ``summary`` and ``content`` are HTML, everything in them escaped."""

    title: str
    link: str
    guid: str
    summary: str
    content: str
    updated: datetime


@dataclass(frozen=True)
class FeedContent:
    title: str
    link: str
    subtitle: str
    guid: str
    entries: list[Entry]


def _authority(request: HttpRequest) -> str:
    """The host this HACS answers at, without its port: the authority of its tag URIs."""
    domain, _port = split_domain_port(request.get_host())
    return domain or "hacs"


def _site_name(site: Any) -> str:
    return f"{site.author} ({site.seed_url})" if site.author else site.seed_url


class SecretFeed(Feed, ABC):
    """A feed at a user's secret address; subclasses say what it holds (:meth:`content`)."""

    feed_type = AtomWithContent
    author_name = "HACS"
    item_guid_is_permalink = False

    def __call__(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        response = super().__call__(request, *args, **kwargs)
        # The address is a secret: no shared cache keeps the feed, no search engine lists it.
        response["Cache-Control"] = "private, no-cache"
        response["X-Robots-Tag"] = "noindex"
        response["Referrer-Policy"] = "no-referrer"
        return response

    def get_object(self, request: HttpRequest, token: str, **kwargs: Any) -> FeedContent:
        if feed_token_user(token=token) is None:
            raise Http404("No such feed.")
        return self.content(request, **kwargs)

    @abstractmethod
    def content(self, request: HttpRequest, **kwargs: Any) -> FeedContent:
        """What the feed holds, for the address's remaining arguments."""

    def title(self, obj: FeedContent) -> str:
        return obj.title

    def link(self, obj: FeedContent) -> str:
        return obj.link

    def subtitle(self, obj: FeedContent) -> str:
        return obj.subtitle

    def feed_guid(self, obj: FeedContent) -> str:
        return obj.guid

    def items(self, obj: FeedContent) -> list[Entry]:
        return obj.entries

    def item_title(self, item: Entry) -> str:
        return item.title

    def item_link(self, item: Entry) -> str:
        return item.link

    def item_guid(self, item: Entry) -> str:
        return item.guid

    def item_description(self, item: Entry) -> str:
        return item.summary

    def item_pubdate(self, item: Entry) -> datetime:
        return item.updated

    def item_updateddate(self, item: Entry) -> datetime:
        return item.updated

    def item_extra_kwargs(self, item: Entry) -> dict[str, Any]:
        return {"content": item.content}


# --- Detected updates --------------------------------------------------------------------------


def _level(request: HttpRequest) -> str:
    level = request.GET.get("level", Level.HOMEPAGE)
    if level not in Level.values:
        raise Http404("No such level.")
    return level


def _update_entry(found: SiteUpdate, authority: str) -> Entry:
    update = found.update
    at = update.capture.timestamp.astimezone(UTC)
    links = update.added_links
    count = f"{len(links)} link{'' if len(links) == 1 else 's'}"
    page = update.capture
    compared = ""
    if update.previous is not None:
        compared = format_html(
            ', compared with <a href="{}">the copy of {}</a>',
            # A library crawl's copy is in no archive: the page itself is linked instead.
            update.previous.replay_url or update.previous.url,
            when_text(update.previous.timestamp),
        )
    heading = format_html(
        '<p>{} added to <a href="{}">{}</a>{}.</p>',
        count,
        page.replay_url or page.url,
        page.url,
        compared,
    )
    if links:
        listed = format_html(
            "<ul>{}</ul>",
            format_html_join(
                "", '<li><a href="{}">{}</a></li>', ((link.replay_url, link.url) for link in links)
            ),
        )
    else:
        listed = format_html("<p>{}</p>", "The links are not available.")
    return Entry(
        title=f"{_site_name(found.site)} · updated {when_text(at)}",
        link=reverse("site-detail", args=[found.site.pk]),
        guid=f"tag:{authority},{at:%Y-%m-%d}:update/{found.capture_id}",
        summary=escape(f"{count} added to {page.url}"),
        content=heading + listed,
        updated=at,
    )


def _updates_content(request: HttpRequest, tag: Tag | None) -> FeedContent:
    level = _level(request)
    label = Level(level).label.split(" (")[0].lower()
    updates = recent_updates(level=level, tag=tag, wayback_url=settings.HACS_WAYBACK_URL)
    authority = _authority(request)
    link = reverse("site-list")
    of = "the collection"
    guid = f"tag:{authority},{FEED_TAG_YEAR}:feeds/updates/{level}"
    if tag is not None:
        link += "?" + urlencode({"tag": tag.name})
        of = f"the sites tagged “{tag.name}”"
        guid = f"tag:{authority},{FEED_TAG_YEAR}:feeds/tags/{tag.pk}/{level}"
    return FeedContent(
        title=f"HACS · updates of {of} ({label} level)",
        link=link,
        subtitle=(
            f"The newest {FEED_UPDATES} updates HACS detected in {of} at {label} level, "
            "newest first, each with the links it added: an update is a copy of a page that "
            "holds a link no earlier copy of the page held."
        ),
        guid=guid,
        entries=[_update_entry(found, authority) for found in updates],
    )


class UpdatesFeed(SecretFeed):
    def content(self, request: HttpRequest, **kwargs: Any) -> FeedContent:
        return _updates_content(request, None)


class TagUpdatesFeed(SecretFeed):
    def content(self, request: HttpRequest, **kwargs: Any) -> FeedContent:
        return _updates_content(request, get_object_or_404(Tag, pk=kwargs["tag_id"]))


# --- The day's crawl list ----------------------------------------------------------------------


def _list_entry(entry: CrawlListEntry, authority: str, built: datetime, day: str) -> Entry:
    site = entry.site
    tau = moment(entry.tau)
    facts = [
        ("Seed URL", site.seed_url),
        ("Author", site.author or "—"),
        ("Probability of change", f"{entry.probability:.3f}"),
        ("Estimated mean interval", interval_text(entry.rate) or "unknown"),
        ("Last update (τ)", tau.title if tau else "none seen"),
        ("Observations", str(entry.observations)),
    ]
    content = format_html("<dl>{}</dl>", format_html_join("", "<dt>{}</dt><dd>{}</dd>", facts))
    return Entry(
        title=f"#{entry.rank} {_site_name(site)} · p = {entry.probability:.3f}",
        link=reverse("site-detail", args=[site.pk]),
        guid=f"tag:{authority},{day}:crawl-list/{entry.crawl_list_id}/{entry.rank}",
        summary=escape(f"Rank {entry.rank}, probability of change {entry.probability:.3f}"),
        content=content,
        updated=built,
    )


class CrawlListFeed(SecretFeed):
    def content(self, request: HttpRequest, **kwargs: Any) -> FeedContent:
        authority = _authority(request)
        guid = f"tag:{authority},{FEED_TAG_YEAR}:feeds/crawl-list"
        crawl = newest_crawl_list()
        if crawl is None:
            return FeedContent(
                title="HACS · daily crawl list (none stored yet)",
                link=reverse("crawl-list"),
                subtitle="No daily list is stored yet; the daily job builds one every morning.",
                guid=guid,
                entries=[],
            )
        entries = crawl_list_entries(crawl)
        count = crawl.entries.count()
        shown = "" if count <= len(entries) else f" (the first {FEED_LIST_ENTRIES} of {count})"
        built = crawl.created_at.astimezone(UTC)
        return FeedContent(
            title=f"HACS · daily crawl list for {day_text(crawl.date)} "
            f"({crawl.get_level_display()}, "
            f"{count} site{'' if count == 1 else 's'})",
            link=f"{reverse('crawl-list')}?list={crawl.pk}",
            subtitle=(
                f"The newest daily list, built {crawl.built_by}: the sites to re-crawl "
                f"in rank order{shown}, each with its probability of change "
                f"{due_text(crawl.date, crawl.e_days)}."
            ),
            guid=guid,
            entries=[
                _list_entry(entry, authority, built, f"{crawl.date:%Y-%m-%d}") for entry in entries
            ],
        )


updates_feed = login_not_required(UpdatesFeed())
tag_feed = login_not_required(TagUpdatesFeed())
crawl_list_feed = login_not_required(CrawlListFeed())


# --- The Feeds page ----------------------------------------------------------------------------


@never_cache
def feed_page(request: HttpRequest) -> HttpResponse:
    token = feed_token_of(user=request.user)

    def address(name: str, *args: Any, query: str = "") -> str:
        return request.build_absolute_uri(reverse(name, args=[token, *args])) + query

    context = {
        "updates_homepage": address("feed-updates"),
        "updates_website": address("feed-updates", query="?level=website"),
        "crawl_list": address("feed-list"),
        "tags": [(tag.name, address("feed-tag", tag.pk)) for tag in Tag.objects.all()],
        "feed_updates": FEED_UPDATES,
        "feed_list_entries": FEED_LIST_ENTRIES,
    }
    return render(request, "dashboard/feeds.html", context)


@require_POST
def feed_reset(request: HttpRequest) -> HttpResponse:
    feed_token_reset(user=request.user)
    messages.success(
        request,
        "Your feed addresses are new; the old ones no longer work. Give your feed reader the "
        "addresses below.",
    )
    return redirect("feeds")
