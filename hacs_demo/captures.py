"""When the archive captured each site, and under which URL.

Archives do not visit a homepage at a steady rate: captures come in bursts -- on/off periods
(on about 150 days, off about 80, on average), sessions within on-periods, and clusters of
captures hours apart inside a session -- and now and then a deep crawl follows the links to
every page. Sparse sites (one in ten) are visited ten times less. HACS has to estimate rates
from exactly such uneven samples.

A capture is not always a clean 200 of the page's usual URL: the homepage is sometimes fetched
as ``index.html``, under the other host form or scheme; a directory URL sometimes comes after a
301/302 redirect from its slashless, other-scheme or ``www.`` form; servers answer 503 now and
then; a page that has gone answers 404. None of these is an observation (DESIGN.md rule 1).
"""

from __future__ import annotations

import numpy as np

from hacs_demo.hashing import urlkey
from hacs_demo.model import Capture, Page
from hacs_demo.site import Site
from hacs_demo.span import DAY


def plan_captures(site: Site) -> None:
    """Fill ``site.captures`` with bursty captures of its pages, in time order."""
    rng = site.rng
    total = site.span.total_sec
    visits = _visits(site, _session_days(rng, site.span.total_days, site.sparse))
    planner = _Planner(site)
    for sec, page in visits:
        url = site.urls.main_url(page, sec)
        r = rng.random()
        if page.role == "home" and r < 0.2:
            url = variant_url(rng, url)
        if page.role == "gone":
            planner.add(sec, page, url, 404, "error")
            continue
        if rng.random() < 0.02:
            planner.add(sec, page, url, 503, "error")
            continue
        if url.endswith("/"):
            if rng.random() < 0.07:
                src, status = redirect_source(rng, url)
                sec = planner.add(sec, page, src, status, "redirect", location=url)
                sec += int(rng.integers(1, 5))
        kind = "observation" if page.is_html else "non_html"
        planner.add(sec, page, url, 200, kind)
    site.captures = [c for c in site.captures if c.sec < total]


def _session_days(rng: np.random.Generator, total_days: float, sparse: bool) -> list[float]:
    """Crawl sessions (days since the start): a Poisson process switched on and off."""
    rate_on = float(np.exp(rng.normal(np.log(1 / 20), 0.5)))
    if sparse:
        rate_on /= 10
    sessions: list[float] = []
    t = float(rng.exponential(60))
    while t < total_days:
        end_on = min(t + float(rng.exponential(150)), total_days)
        count = int(rng.poisson(rate_on * (end_on - t)))
        sessions += rng.uniform(t, end_on, size=count).tolist()
        t = end_on + float(rng.exponential(80))
    sessions.sort()
    return sessions


def _visits(site: Site, sessions: list[float]) -> list[tuple[int, Page]]:
    """(second, page) of every fetch: the homepage, clustered, in each session; every page in
    a deep crawl after a quarter of them; other pages also on their own, rarely."""
    rng = site.rng
    total = site.span.total_sec
    home = site.pages[0]
    plans: list[tuple[int, Page]] = []
    for s in sessions:
        sec = int(s * DAY)
        for k in range(int(rng.geometric(0.55))):
            if k:
                sec += int(rng.exponential(7200)) + 60
            plans.append((sec, home))
        if rng.random() < 0.25:  # a deep crawl follows the links to every page
            at = int(s * DAY)
            for page in site.pages[1:]:
                at += int(rng.exponential(40)) + 1
                plans.append((at, page))
    for page in site.pages[1:]:
        count = int(rng.poisson(site.span.total_days / (250 if not site.sparse else 2500)))
        plans += [(int(x), page) for x in rng.integers(0, total, size=count)]
    plans = [(sec, page) for sec, page in plans if 0 <= sec < total - 10]
    plans.sort(key=lambda pair: pair[0])
    return plans


class _Planner:
    """Adds captures to a site, one second later when a urlkey already has one at ``sec``."""

    def __init__(self, site: Site) -> None:
        self.site = site
        self.used: set[tuple[str, int]] = set()

    def add(
        self, sec: int, page: Page, url: str, status: int, kind: str, location: str = ""
    ) -> int:
        """Plan a capture; returns the second it got."""
        key = urlkey(url)
        while (key, sec) in self.used:
            sec += 1
        self.used.add((key, sec))
        self.site.captures.append(
            Capture(self.site.index, page, sec, url, status, kind, location=location, urlkey=key)
        )
        return sec


def variant_url(rng: np.random.Generator, url: str) -> str:
    """The homepage written another way: the other host form or scheme, or index.html."""
    choice = int(rng.integers(3))
    if choice == 0:
        return url + "index.html"
    if choice == 1:
        return (
            url.replace("://www.", "://", 1)
            if "://www." in url
            else url.replace("://", "://www.", 1)
        )
    return (
        url.replace("http://", "https://", 1)
        if url.startswith("http://")
        else url.replace("https://", "http://", 1)
    )


def redirect_source(rng: np.random.Generator, url: str) -> tuple[str, int]:
    """A URL that redirects to ``url`` (a directory URL): no slash, other scheme, or www."""
    if url.endswith("/") and rng.random() < 0.5:
        return url.rstrip("/"), 301
    if url.startswith("https://"):
        return url.replace("https://", "http://", 1), int(rng.choice([301, 302]))
    if "://www." in url:
        return url.replace("://www.", "://", 1), 301
    return url.rstrip("/") if url.endswith("/") else url + "/", 302
