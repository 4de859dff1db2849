"""``truth.json``: what really happened, so HACS's answers can be checked against it.

Schema 1::

    {"schema": 1,
     "generator": {"seed", "sites", "start", "end"},     # dates as YYYY-MM-DD
     "update_model": {"kind", "bursts": true, "branching_ratio_range",
                      "follow_up_median_days", "term_starts": ["MM-DD"..], "term_share",
                      "term_jitter_days", "burn_in_days"},  # see hacs_demo.sessions
                     # without bursts: {"kind", "bursts": false}
     "files": {"warc", "cdx", "seeds"},
     "canonical_form": "<how links are written>",
     "counts": {"captures", "cdx_lines", "dirty_lines", "observations", "update_events"},
     "seeds": [{"line", "url", "author", "tags", "status": ok|bad|duplicate,
                "reason", "site"}],
     "cdx_dirt": [{"line", "kind": duplicate|bad_line, "reason", "text", "site",
                   "of_line"}],
     "sites": [{
        "index", "seed_url", "author", "tags": [..], "host", "user",
        "homepage": canonical homepage, "charset",
        "rate_per_day": {"homepage": λ, "website": λ},   # website = Σ pages depth ≤ 2
        "update_model": {"branching_ratio": n, "follow_up_mean_days": d},  # the author's
        "update_times": {"homepage": [day..], "website": [day..]},  # add events
        "pages": [{"url", "path", "depth", "mime", "rate_per_day",
                   "session_rate_per_day", "term_sessions", "base_href"}],
        "events": [{"page", "timestamp", "day", "kind", "added": [..], "removed": [..],
                    "session"}],
        "link_sets": {digest: [canonical links, sorted]},  # HTML 200 contents
        "captures": [{"cdx_line", "url", "urlkey", "page", "depth", "timestamp",
                      "status", "mime", "digest", "kind", "observation", "update",
                      "in_warc", "refers_to", "location", "reason"}]}]}

``day`` is days since ``start`` 00:00 UTC. ``rate_per_day`` is the long-run mean rate of
link-adding events; ``session_rate_per_day`` = λ(1 − n) the rate at which editing sessions
open, ``term_sessions`` whether they favour term starts. An add event's ``session`` numbers its
editing session on its page (0, 1, ... in time order of the sessions' first additions; ``null``
for other kinds). A capture's links are ``link_sets[digest]`` when it is an observation.
``update`` is rule 3 over the whole history (``null`` unless an observation); other windows are
for the reader. Capture kinds: observation (200 HTML), revisit (of a 200 HTML capture of the
same urlkey), orphan_revisit (its original is not in the archive), redirect, error, non_html
(including revisits of non-HTML), duplicate and bad_line (CDX dirt, not in the WARC).
``observation`` is DESIGN.md rule 1 regardless of depth; depth-3 pages are outside every site's
website level.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from hacs_demo.cdx import CdxDirt
from hacs_demo.files import CDX_NAME, SEEDS_NAME, TRUTH_SCHEMA, WARC_NAME
from hacs_demo.model import Capture, Page
from hacs_demo.seedlist import SeedLine
from hacs_demo.sessions import (
    BRANCHING_RATIO_RANGE,
    BURN_IN_DAYS,
    FOLLOW_UP_MEDIAN_DAYS,
    TERM_JITTER_DAYS,
    TERM_SHARE,
    TERM_STARTS,
)
from hacs_demo.site import Site
from hacs_demo.span import DAY
from hacs_demo.world import World

CANONICAL_FORM = (
    "http://<host lower-case, no www., no default port><path, %7E as ~, no "
    "trailing slash>[?query]; no fragment; index.html kept"
)


def write_truth(
    path: Path,
    world: World,
    captures: list[Capture],
    dirt: list[CdxDirt],
    seed_rows: list[SeedLine],
    warc_name: str = WARC_NAME,
) -> None:
    doc = truth_document(world, captures, dirt, seed_rows, warc_name)
    # json.dumps, not json.dump: only the one-shot encoder is the fast C one.
    text = json.dumps(doc, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    path.write_text(text + "\n", encoding="utf-8")


def truth_document(
    world: World,
    captures: list[Capture],
    dirt: list[CdxDirt],
    seed_rows: list[SeedLine],
    warc_name: str = WARC_NAME,
) -> dict[str, Any]:
    """The truth as a JSON-ready dict (schema in the module docstring)."""
    per_site: list[list[dict[str, Any]]] = [[] for _ in world.sites]
    for cap in sorted(captures, key=lambda c: c.cdx_line):
        per_site[cap.site].append(_capture_entry(world, cap))
    for d in dirt:
        per_site[d.cap.site].append(_dirt_entry(world, d))
    for entries in per_site:
        entries.sort(key=lambda e: e["cdx_line"])
    span = world.span
    return {
        "schema": TRUTH_SCHEMA,
        "generator": {
            "seed": world.seed,
            "sites": len(world.sites),
            "start": span.start.isoformat(),
            "end": span.end.isoformat(),
        },
        "update_model": _update_model(span.bursts),
        "files": {"warc": warc_name, "cdx": CDX_NAME, "seeds": SEEDS_NAME},
        "canonical_form": CANONICAL_FORM,
        "counts": _counts(world, captures, dirt),
        "seeds": [_seed_entry(row) for row in seed_rows],
        "cdx_dirt": [_dirt_line(d) for d in sorted(dirt, key=lambda d: d.line)],
        "sites": [_site_truth(s, per_site[s.index]) for s in world.sites],
    }


def _counts(world: World, captures: list[Capture], dirt: list[CdxDirt]) -> dict[str, int]:
    return {
        "captures": len(captures),
        "cdx_lines": len(captures) + len(dirt),
        "dirty_lines": len(dirt),
        "observations": sum(1 for c in captures if c.observation),
        "update_events": world.update_events(),
    }


def _seed_entry(row: SeedLine) -> dict[str, Any]:
    return {
        "line": row.line,
        "url": row.url,
        "author": row.author,
        "tags": row.tags,
        "status": row.status,
        "reason": row.reason,
        "site": row.site,
    }


def _dirt_line(d: CdxDirt) -> dict[str, Any]:
    return {
        "line": d.line,
        "kind": d.kind,
        "reason": d.reason,
        "text": d.text,
        "site": d.cap.site,
        "of_line": d.of_line,
    }


def _update_model(bursts: bool) -> dict[str, Any]:
    if not bursts:
        return {"kind": "Poisson link additions (the demo without bursts)", "bursts": False}
    return {
        "bursts": True,
        "kind": "self-exciting (Hawkes) link additions, exponential follow-up delays",
        "branching_ratio_range": list(BRANCHING_RATIO_RANGE),
        "follow_up_median_days": FOLLOW_UP_MEDIAN_DAYS,
        "term_starts": [f"{month:02d}-{day:02d}" for month, day in TERM_STARTS],
        "term_share": TERM_SHARE,
        "term_jitter_days": TERM_JITTER_DAYS,
        "burn_in_days": BURN_IN_DAYS,
    }


def _capture_entry(world: World, cap: Capture) -> dict[str, Any]:
    return {
        "cdx_line": cap.cdx_line,
        "url": cap.url,
        "urlkey": cap.urlkey,
        "page": world.sites[cap.site].urls.page_url(cap.page),
        "depth": cap.page.depth,
        "timestamp": world.span.ts14(cap.sec),
        "status": None if cap.record_type == "revisit" else cap.status,
        "mime": cap.mime,
        "digest": cap.digest,
        "kind": cap.kind,
        "observation": cap.observation,
        "update": cap.update,
        "in_warc": True,
        "refers_to": cap.refers_to or None,
        "location": cap.location or None,
        "reason": None,
    }


def _dirt_entry(world: World, d: CdxDirt) -> dict[str, Any]:
    """A dirty CDX line as a capture entry: it names a capture but is none (not in the WARC)."""
    cap = d.cap
    return {
        "cdx_line": d.line,
        "url": cap.url,
        "urlkey": cap.urlkey,
        "page": world.sites[cap.site].urls.page_url(cap.page),
        "depth": cap.page.depth,
        "timestamp": d.text.split(" ")[1],
        "status": None,
        "mime": None,
        "digest": None,
        "kind": d.kind,
        "observation": False,
        "update": None,
        "in_warc": False,
        "refers_to": None,
        "location": None,
        "reason": d.reason,
    }


def _days(sec: int) -> float:
    return round(sec / DAY, 6)


def _site_truth(site: Site, captures: list[dict[str, Any]]) -> dict[str, Any]:
    website_pages = [p for p in site.pages if p.is_html and p.depth <= 2]
    home_times = [_days(e.sec) for e in site.pages[0].events if e.kind == "add"]
    web_times = sorted(_days(e.sec) for p in website_pages for e in p.events if e.kind == "add")
    author = site.author
    return {
        "index": site.index,
        "seed_url": site.seed_url,
        "author": author.name,
        "tags": list(author.tags),
        "host": author.host,
        "user": author.user,
        "homepage": site.homepage,
        "charset": site.style.charset,
        "rate_per_day": {
            "homepage": site.pages[0].rate,
            "website": sum(p.rate for p in website_pages),
        },
        "update_model": {
            "branching_ratio": site.habits.branching,
            "follow_up_mean_days": site.habits.follow_up_days,
        },
        "update_times": {"homepage": home_times, "website": web_times},
        "pages": [_page_truth(site, p) for p in site.pages],
        "events": _events(site),
        "link_sets": _link_sets(site),
        "captures": captures,
    }


def _page_truth(site: Site, page: Page) -> dict[str, Any]:
    return {
        "url": site.urls.page_url(page),
        "path": page.path,
        "depth": page.depth,
        "mime": page.mime,
        "rate_per_day": page.rate if page.is_html else 0.0,
        "session_rate_per_day": page.rate * (1 - site.habits.branching) if page.is_html else 0.0,
        "term_sessions": site.span.bursts and page.is_html and page.role in ("teaching", "course"),
        "base_href": page.base_href,
    }


def _link_sets(site: Site) -> dict[str, list[str]]:
    """The canonical links of every HTML version the archive holds, by payload digest."""
    link_sets: dict[str, list[str]] = {}
    for page in site.pages:
        if page.is_html:
            for rendered in page.rendered.values():
                link_sets[rendered.digest] = sorted(rendered.links)
    return link_sets


def _events(site: Site) -> list[dict[str, Any]]:
    """Every page's events with the canonical links they added or removed, in time order."""
    events = []
    for page in site.pages:
        for e in page.events:
            events.append(
                {
                    "page": site.urls.page_url(page),
                    "timestamp": site.span.ts14(e.sec),
                    "day": _days(e.sec),
                    "kind": e.kind,
                    "added": sorted(_item_links(site, page, e.added, e.sec)),
                    "removed": sorted(_item_links(site, page, e.removed, e.sec)),
                    "session": e.session if e.kind == "add" else None,
                }
            )
    events.sort(key=lambda e: (e["day"], e["page"]))
    return events


def _item_links(site: Site, page: Page, ids: tuple[int, ...], sec: int) -> set[str]:
    """Canonical links of the given items as the page writes them at ``sec``."""
    epoch = site.urls.epoch_at(sec)
    out = set()
    for item_id in ids:
        for seg in page.items[item_id].segments:
            if isinstance(seg, tuple):
                out.add(site.hrefs.href(page, seg[0], f"item{item_id}", epoch)[1])
    return out
