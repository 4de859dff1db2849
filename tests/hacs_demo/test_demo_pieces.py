"""The synthetic archive's pieces (``hacs_demo``), one at a time, on a small world drawn
directly without writing files: the editing-session model, page histories, link writing,
rendering, capture planning, and the builder's file names."""

from __future__ import annotations

from datetime import date
from pathlib import Path
from typing import Any
from urllib.parse import urljoin

import numpy as np
import pytest
from numpy.typing import NDArray

from hacs_demo import CDX_HEADER, build_demo_archive, canonical_link
from hacs_demo.captures import plan_captures, redirect_source, variant_url
from hacs_demo.cdx import write_cdx
from hacs_demo.hashing import payload_digest
from hacs_demo.hrefs import HrefWriter
from hacs_demo.model import Capture, Page, Target, external, internal
from hacs_demo.pages import draw_pages
from hacs_demo.render import render
from hacs_demo.sessions import (
    BRANCHING_RATIO_RANGE,
    TERM_JITTER_DAYS,
    TERM_SHARE,
    EditingHabits,
    session_times,
    term_start_days,
)
from hacs_demo.span import Span
from hacs_demo.urls import SiteUrls
from hacs_demo.world import World
from tests.hacs_demo._helpers import parse_links, sha1_b32

START, END = date(2015, 6, 1), date(2018, 6, 1)


@pytest.fixture(scope="module")
def world() -> World:
    world = World(seed=0, start=START, end=END)
    for index in range(12):
        world.add_site(index)
    return world


def test_term_starts_are_counted_from_the_start_and_cover_the_burn_in() -> None:
    # 10 January 2015 is 142 days before 1 June 2015; 25 August 2014 (-280) is before the
    # 180-day burn-in and 25 August 2018 after the end.
    assert term_start_days(START, END).tolist() == [-142, 85, 223, 451, 589, 816, 954]
    assert Span(START, END).term_days.tolist() == [-142, 85, 223, 451, 589, 816, 954]


def draw_sessions(seed: int, **kwargs: Any) -> tuple[NDArray[np.float64], NDArray[np.int64]]:
    args = {
        "rate": 0.05,
        "branching": 0.5,
        "follow_up_days": 4.0,
        "total_days": 1000.0,
        "term_days": None,
    } | kwargs
    return session_times(np.random.default_rng(seed), **args)


def test_session_times_are_deterministic_for_a_seed() -> None:
    when, sessions = draw_sessions(5)
    again, again_sessions = draw_sessions(5)
    other, _ = draw_sessions(6)
    assert when.tolist() == again.tolist() and sessions.tolist() == again_sessions.tolist()
    assert when.tolist() != other.tolist()


def test_session_times_are_ordered_inside_the_span_and_sessions_numbered_in_order() -> None:
    for seed in range(50):
        when, sessions = draw_sessions(seed, total_days=300.0)
        assert when.tolist() == sorted(when.tolist())
        assert all(0 < t < 300 for t in when.tolist())
        assert sessions.shape == when.shape
        # 0, 1, 2, ... in the order of each session's first addition inside the span.
        firsts = list(dict.fromkeys(sessions.tolist()))
        assert firsts == list(range(len(firsts)))


def test_session_times_keep_the_long_run_rate_and_the_session_size() -> None:
    """λ additions a day in the long run, 1 / (1 - n) of them per session on average."""
    additions = sessions = 0
    for seed in range(200):
        when, owner = draw_sessions(seed, rate=0.05, branching=0.5)
        additions += when.size
        sessions += len(set(owner.tolist()))
    expected = 200 * 0.05 * 1000
    assert 0.9 < additions / expected < 1.1, additions
    assert 1.8 < additions / sessions < 2.2  # 1 / (1 - 0.5) = 2, a little less at the edges


def test_without_follow_ups_every_session_is_a_single_addition() -> None:
    when, owner = draw_sessions(1, branching=0.0, rate=0.1)
    assert when.size > 50
    assert owner.tolist() == list(range(when.size))


def test_term_sessions_open_near_a_term_start() -> None:
    terms = term_start_days(START, END)
    near = total = 0
    for seed in range(100):
        when, owner = draw_sessions(seed, rate=0.02, total_days=1096.0, term_days=terms)
        first_of_session = [when[owner == k].min() for k in set(owner.tolist())]
        near += sum(
            float(np.abs(terms - t).min()) <= 2 * TERM_JITTER_DAYS + 7 for t in first_of_session
        )
        total += len(first_of_session)
    # TERM_SHARE open around a term; of the others, about a quarter land near one by chance.
    assert 0.9 * TERM_SHARE < near / total < TERM_SHARE + 0.15, (near, total)


def test_editing_habits_respect_their_documented_ranges() -> None:
    rng = np.random.default_rng(7)
    habits = [EditingHabits.draw(rng) for _ in range(2000)]
    again = [EditingHabits.draw(np.random.default_rng(7)) for _ in range(1)]
    assert again[0] == habits[0]
    low, high = BRANCHING_RATIO_RANGE
    assert all(low <= h.branching <= high for h in habits)
    delays = sorted(h.follow_up_days for h in habits)
    # Log-normal, median 4 days, sigma 0.4: nine in ten between about 2 and 9 days.
    assert 3.7 < delays[1000] < 4.3
    assert 2 < delays[100] and delays[1900] < 9


def test_pages_have_their_documented_shape_and_rates() -> None:
    assert [p.path for p in draw_pages(np.random.default_rng(3))] == [
        p.path for p in draw_pages(np.random.default_rng(3))
    ]
    homepage_intervals = []
    for seed in range(300):
        pages = draw_pages(np.random.default_rng(seed))
        assert (pages[0].path, pages[0].role, pages[0].depth) == ("", "home", 0)
        homepage_intervals.append(1 / pages[0].rate)
        for page in pages:
            assert page.depth == page.path.rstrip("/").count("/") + (page.path != "")
            if page.is_html:
                assert 1 / 5000 <= page.rate <= 1 / 3
            else:
                assert page.rate == 0.0
    homepage_intervals.sort()
    assert 90 < homepage_intervals[150] < 130  # median 110 days


def test_every_add_event_brings_a_link_no_earlier_version_had(world: World) -> None:
    """What makes an add event an update by DESIGN.md rule 3, whichever capture sees it."""
    checked = 0
    for site in world.sites:
        for page in site.pages:
            if not page.is_html:
                continue
            earlier: set[str] = set()
            for vi, version in enumerate(page.versions):
                links = render(site, page, vi).links
                event = page.events[vi - 1] if vi else None
                if event is not None and event.kind == "add":
                    assert not links <= earlier, (site.index, page.path, vi)
                    checked += 1
                elif event is not None and event.kind == "restyle":
                    assert links == render(site, page, vi - 1).links  # https, same links
                earlier |= links
                assert version.sec == page.version_secs[vi]
    assert checked > 100


def test_rendering_a_version_yields_exactly_the_links_its_html_holds(world: World) -> None:
    """The link set render() returns (the truth's link_sets) is what a plain parse finds."""
    checked = 0
    for site in world.sites:
        for page in site.pages:
            if not page.is_html:
                continue
            for vi in range(0, len(page.versions), 3):
                body, digest, links = render(site, page, vi)
                assert digest == sha1_b32(body)
                url = site.urls.main_url(page, page.versions[vi].sec)
                assert parse_links(body, url) == links, (site.index, page.path, vi)
                checked += 1
    assert checked > 100


def test_rendering_is_remembered_and_files_have_no_links(world: World) -> None:
    site = world.sites[0]
    page = site.pages[0]
    assert render(site, page, 0) is render(site, page, 0)
    checked: dict[str, int] = {"cv": 0, "photo": 0}
    for site in world.sites:
        for page in site.pages:
            if page.role in checked:
                body, _, links = render(site, page, len(page.versions) - 1)
                assert links == frozenset()
                assert body.startswith(b"%PDF-" if page.role == "cv" else b"\xff\xd8")
                checked[page.role] += 1
    # Not vacuous: the world has files of both kinds.
    assert checked["cv"] > 0 and checked["photo"] > 0, checked


def href_cases() -> list[tuple[SiteUrls, Page, Target]]:
    url_styles = [
        SiteUrls("cs.odu.edu", "mln", www, https, None)
        for www in (False, True)
        for https in (False, True)
    ]
    pages = [
        Page("", "home", "text/html", 0, 0.0),
        Page("", "home", "text/html", 0, 0.0, base_href=True),
        Page("publications.html", "pubs", "text/html", 1, 0.0),
        Page("teaching/cs101/", "course", "text/html", 2, 0.0),
        Page("projects/crawler/data/", "subproject", "text/html", 3, 0.0, base_href=True),
    ]
    targets = [
        internal(""),
        internal("teaching/"),
        internal("publications.html"),
        internal("teaching/cs101/slides/lec001.pdf"),
        external("doi.org", "/10.1234/2016.5"),
        external("cs.mit.edu", "/~alice/", https=False, www=True),
        external("scholar.google.com", "/citations", query="user=00012345&hl=en"),
        external("github.com", "/mln", www=True),
    ]
    return [(urls, page, target) for urls in url_styles for page in pages for target in targets]


def test_every_written_href_resolves_to_its_canonical_link() -> None:
    for urls, page, target in href_cases():
        writer = HrefWriter(0, 1, urls)
        for slot in [f"item{i}" for i in range(25)] + ["nav", "body"]:
            for epoch in (0, 1):
                written, canon = writer.href(page, target, slot, epoch)
                assert written == written.strip() or written == f" {written.strip()}\n"
                base = f"http://{urls.host}{urls.root_path}" + ("" if page.base_href else page.path)
                assert canonical_link(urljoin(base, written.strip())) == canon, (written, base)


def test_a_link_is_written_the_same_way_in_every_version_of_a_style_epoch() -> None:
    urls = SiteUrls("cs.odu.edu", "mln", True, False, 1000)
    page = Page("", "home", "text/html", 0, 0.0)
    first = HrefWriter(4, 2, urls)
    second = HrefWriter(4, 2, urls)  # a fresh writer: nothing remembered, same answers
    slots = [f"item{i}" for i in range(40)]
    for slot in slots:
        for epoch in (0, 1):
            target = internal("teaching/")
            assert first.href(page, target, slot, epoch) == second.href(page, target, slot, epoch)
    # Across slots the writing varies (that is the point); the canonical form never does.
    writings = {first.href(page, internal("teaching/"), slot, 0) for slot in slots}
    assert len({written for written, _ in writings}) > 3
    # ``index.html`` is kept (rule 2 keeps it), but a given slot always writes it or never does.
    canons = {canon.removesuffix("/index.html") for _, canon in writings}
    assert canons == {"http://cs.odu.edu/~mln/teaching"}


def test_canonical_link_by_hand() -> None:
    assert canonical_link(" HTTPS://WWW.CS.ODU.EDU:443/%7Emln/teaching/#top\n") == (
        "http://cs.odu.edu/~mln/teaching"
    )
    assert canonical_link("http://cs.odu.edu:8080/~mln/?a=1") == "http://cs.odu.edu:8080/~mln?a=1"
    with pytest.raises(ValueError):
        canonical_link("mailto:mln@cs.odu.edu")


def test_url_variants_and_redirect_sources_name_the_same_page() -> None:
    rng = np.random.default_rng(9)
    for url in (
        "http://cs.odu.edu/~mln/",
        "https://www.cs.odu.edu/~mln/",
        "http://www.cs.odu.edu/~mln/teaching/",
    ):
        for _ in range(30):
            variant = variant_url(rng, url)
            assert variant != url
            assert canonical_link(variant).removesuffix("/index.html") == canonical_link(url)
            source, status = redirect_source(rng, url)
            assert source != url and status in (301, 302)
            assert canonical_link(source) == canonical_link(url)


def test_capture_plans_are_inside_the_span_and_redirects_come_just_before(world: World) -> None:
    site = world.sites[1]
    plan_captures(site)
    total = world.span.total_sec
    assert site.captures and all(0 <= c.sec < total for c in site.captures)
    assert len({(c.urlkey, c.sec) for c in site.captures}) == len(site.captures)
    for before, after in zip(site.captures, site.captures[1:], strict=False):
        if before.kind == "redirect":
            assert after.url == before.location and 1 <= after.sec - before.sec <= 5
    assert {c.status for c in site.captures if c.page.role == "gone"} <= {404}


def test_a_tiny_cdx_gets_no_dirt_and_a_larger_one_its_three_kinds(tmp_path: Path) -> None:
    span = Span(START, END)
    page = Page("", "home", "text/html", 0, 0.0)
    caps = [
        Capture(
            0, page, 86400 * i, f"http://a.edu/~u{i}/", 200, "observation", urlkey=f"edu,a)/~u{i}"
        )
        for i in range(40)
    ]
    count, dirt = write_cdx(tmp_path / "tiny.cdx", 0, span, caps[:3])
    assert (count, dirt) == (3, [])
    count, dirt = write_cdx(tmp_path / "dirty.cdx", 0, span, caps)
    assert count == 40 + 4
    assert sorted(d.reason.split(" (")[0] for d in dirt) == [
        "impossible timestamp",
        "repeated line",
        "repeated line",
        "truncated line",
    ]
    lines = (tmp_path / "dirty.cdx").read_text().splitlines()
    assert lines[0] == CDX_HEADER
    for d in dirt:
        assert lines[d.line - 1] == d.text
        assert (d.of_line is not None) == (d.kind == "duplicate")


def test_span_writes_instants_as_cdx_warc_and_http_do() -> None:
    span = Span(START, END)
    assert span.total_sec == 1096 * 86400
    assert span.ts14(86400 + 3661) == "20150602010101"
    assert span.iso(86400 + 3661) == "2015-06-02T01:01:01Z"
    assert span.http_date(0) == "Mon, 01 Jun 2015 00:00:00 GMT"
    assert payload_digest(b"") == "3I42H3S6NNFQ2MSVX7XZKYAYSCX5QBYJ"


def test_the_builder_names_each_file_as_its_writing_starts(tmp_path: Path) -> None:
    told: list[str] = []

    def writing(name: str) -> None:
        told.append(name)
        # Told before the file is written: nothing of this run's file exists yet.
        assert not (tmp_path / name).exists()

    build_demo_archive(tmp_path, sites=2, seed=0, writing=writing)
    assert told == ["demo.warc.gz", "demo.cdx", "seeds.csv", "truth.json"]
