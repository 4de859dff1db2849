"""Feeds a librarian's feed reader follows: secret feed addresses, and what each feed lists.

* Feed addresses: :func:`feed_token_of`, :func:`feed_token_reset` and :func:`feed_token_user`.
  A user's address carries a token derived from a random nonce (``secrets.token_urlsafe(32)``)
  with the installation's ``SECRET_KEY``; the database keeps the nonce and the token's SHA-256,
  never the token, and a request's token is checked in constant time. A reset draws a new nonce,
  so the old address stops working at once; so does every address when ``SECRET_KEY`` changes.
* Detected updates, newest first: :func:`recent_updates`, the collection's or one tag's, at
  homepage or website level, each with the links it added, as the Site page lists them
  (``dashboard.site_detail.page_updates``).
* The day's crawl list: :func:`newest_crawl_list` and its entries in rank order.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import re
import secrets
from collections import defaultdict
from dataclasses import dataclass
from typing import Any

from django.db import transaction
from django.utils import timezone
from django.utils.crypto import salted_hmac

from archive.models import Capture, Site, Tag
from dashboard.models import FeedToken
from dashboard.site_detail import (
    CAPTURE_FIELDS,
    CaptureReader,
    PageObservation,
    UpdateRow,
    observed_pages,
    page_updates,
    snapshot_links,
)
from scheduling.models import CrawlList, CrawlListEntry, Level

#: Updates one feed lists: the newest, whatever their age.
FEED_UPDATES = 100
#: Sites the crawl-list feed lists, in rank order; the CSV download has the whole list.
FEED_LIST_ENTRIES = 500

# A token is 32 bytes of HMAC-SHA256 in URL-safe base64 without padding: 43 characters.
TOKEN_PATTERN = re.compile(r"[A-Za-z0-9_-]{43}")
_TOKEN_SALT = "dashboard.feeds.feed address"


# --- Feed addresses ----------------------------------------------------------------------------


def feed_address_token(nonce: str) -> str:
    """The token of the feed address made from ``nonce`` under this installation's key."""
    mac = salted_hmac(_TOKEN_SALT, nonce, algorithm="sha256").digest()
    return base64.urlsafe_b64encode(mac).rstrip(b"=").decode("ascii")


def _digest(token: str) -> str:
    return hashlib.sha256(token.encode("ascii")).hexdigest()


def feed_token_of(*, user: Any) -> str:
    """The token of the user's feed address, made on first use."""
    row = FeedToken.objects.filter(user=user).first()
    if row is None:
        return feed_token_reset(user=user)
    token = feed_address_token(row.nonce)
    if row.digest != _digest(token):
        # SECRET_KEY changed since the address was made: the address the page shows now is new.
        row.digest = _digest(token)
        row.save(update_fields=["digest"])
    return token


def feed_token_reset(*, user: Any) -> str:
    """Give the user a new feed address (the old one stops working) and return its token."""
    nonce = secrets.token_urlsafe(32)
    token = feed_address_token(nonce)
    with transaction.atomic():
        FeedToken.objects.update_or_create(
            user=user,
            defaults={"nonce": nonce, "digest": _digest(token), "created_at": timezone.now()},
        )
    return token


def feed_token_user(*, token: str) -> Any | None:
    """The active user whose current feed address carries ``token``, or None."""
    if not TOKEN_PATTERN.fullmatch(token):
        return None
    row = FeedToken.objects.select_related("user").filter(digest=_digest(token)).first()
    if row is None or not row.user.is_active:
        return None
    # The digest found the row; the token itself is compared in constant time, and it must be
    # the one the current SECRET_KEY derives.
    if not hmac.compare_digest(feed_address_token(row.nonce), token):
        return None
    return row.user


# --- Detected updates --------------------------------------------------------------------------


@dataclass(frozen=True)
class SiteUpdate:
    """One detected update of a site, with the links it added (``UpdateRow``)."""

    site: Site
    update: UpdateRow
    capture_id: int


def recent_updates(
    *, level: str, wayback_url: str, tag: Tag | None = None, limit: int = FEED_UPDATES
) -> list[SiteUpdate]:
    """The newest ``limit`` updates of the collection (or of the sites tagged ``tag``), newest
    first: at homepage level the homepages' updates, at website level those of every page.

    Four queries whatever the collection's size: the newest updates, every observation of
    their pages (an update's added links are those no earlier observation of its page held),
    those observations' link sets, and the updates' sites.
    """
    if level not in Level.values:
        raise ValueError(f"level must be one of {', '.join(Level.values)}, not {level!r}")
    # DESIGN rule 3 over a page's whole history, as the Site page reads it
    # (hacs.updates.is_window_update with the window starting at the page's first observation):
    # page_index > 0 and link_floor < 0. page_updates decides each one again from the same data.
    found = Capture.objects.filter(is_observation=True, page_index__gt=0, link_floor__lt=0)
    if level == Level.HOMEPAGE:
        found = found.filter(depth=0)
    if tag is not None:
        found = found.filter(site__tags=tag)
    newest = list(
        found.order_by("-timestamp", "-pk").values_list(
            "pk", "site_id", "page_key", "url", "timestamp"
        )[:limit]
    )
    if not newest:
        return []
    wanted = {(site_id, page_key) for _pk, site_id, page_key, *_rest in newest}
    by_site = _pages_observations(wanted, wayback_url=wayback_url)
    links = snapshot_links({o.snapshot_id for obs in by_site.values() for o in obs})
    found_updates = {
        (site_id, update.capture.url, update.capture.timestamp): update
        for site_id, observations in by_site.items()
        for update in page_updates(observed_pages(observations), links)
    }
    sites = Site.objects.in_bulk({site_id for _pk, site_id, *_rest in newest})
    result: list[SiteUpdate] = []
    for pk, site_id, _key, url, moment in newest:
        update = found_updates.get((site_id, url, moment))
        if update is not None:
            result.append(SiteUpdate(sites[site_id], update, pk))
    return result


def _pages_observations(
    wanted: set[tuple[int, str]], *, wayback_url: str
) -> dict[int, list[PageObservation]]:
    """Every observation of the ``wanted`` (site, page key) pages, by site, each page's in its
    own order (one query)."""
    rows = (
        Capture.objects.filter(
            site_id__in={site_id for site_id, _key in wanted},
            page_key__in={key for _site, key in wanted},
            is_observation=True,
            page_index__isnull=False,
            link_floor__isnull=False,
        )
        .order_by("site_id", "page_key", "page_index")
        .values_list("site_id", *CAPTURE_FIELDS)
    )
    reader = CaptureReader(wayback_url)
    by_site: dict[int, list[PageObservation]] = defaultdict(list)
    for site_id, *values in rows:
        _row, observation = reader.read(values)
        assert observation is not None  # filtered above
        if (site_id, observation.page_key) in wanted:  # not another site's page of that key
            by_site[site_id].append(observation)
    return by_site


# --- The day's crawl list ----------------------------------------------------------------------


def newest_crawl_list() -> CrawlList | None:
    """The newest daily list: the day's list the Crawl list page opens with (lists built by
    hand are experiments, never served as the day's list)."""
    return CrawlList.objects.newest_daily()


def crawl_list_entries(crawl: CrawlList, *, limit: int = FEED_LIST_ENTRIES) -> list[CrawlListEntry]:
    """The list's first ``limit`` entries in rank order, with their sites."""
    return list(crawl.entries.select_related("site").order_by("rank")[:limit])
