"""The import pipeline's pieces: scope, captures, snapshots, and marking sites done or failed.

``archive.captures``, ``archive.snapshots`` and ``archive.pipeline`` tested directly, with CDX and
WARC files written here and an archive client that answers from a dict: no network. The same
pipeline against real servers is ``test_import.py``.
"""

from __future__ import annotations

import base64
import hashlib
import io
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from django.utils import timezone
from warcio.statusandheaders import StatusAndHeaders
from warcio.warcwriter import WARCWriter

from archive.captures import MAX_DEPTH, ScopeIndex, captures_store
from archive.models import Capture, Site
from archive.pipeline import FetchRetry, FromCdxFiles, FromWarcFiles, sites_finish, sites_import
from archive.snapshots import snapshots_missing
from archive.wayback import ArchiveError, Memento
from hacs.formats.canon import canonical_url
from hacs.formats.cdx import CdxRecord, format_timestamp
from operations.refresh import sites_with_failed_fetches
from tests.factories import make_capture, make_site, make_snapshot

pytestmark = pytest.mark.django_db

T0 = datetime(2017, 1, 2, 3, 4, 5, tzinfo=UTC)
SEED = "http://a.edu/~bar/"


def at(days: float) -> datetime:
    return T0 + timedelta(days=days)


def row(
    url: str,
    moment: datetime,
    *,
    mimetype: str = "text/html",
    status: int | None = 200,
    digest: str = "H1",
) -> CdxRecord:
    return CdxRecord(canonical_url(url), moment, url, mimetype, status, digest, 1000)


def revisit(url: str, moment: datetime, digest: str, status: int | None = None) -> CdxRecord:
    return row(url, moment, mimetype="warc/revisit", status=status, digest=digest)


def bar_site() -> Site:
    return make_site(seed_url=SEED, canonical_key="edu,a)/~bar", author="Bar")


def kinds(site: Site) -> dict[tuple[str, datetime], tuple[str, bool]]:
    return {
        (c.url, c.timestamp): (c.kind, c.is_observation) for c in Capture.objects.filter(site=site)
    }


# --- ScopeIndex.match ---------------------------------------------------------------------------


def test_the_longest_seed_prefix_on_the_same_host_wins() -> None:
    index = ScopeIndex(
        [
            (1, "http://a.edu/~bar/"),
            (2, "http://a.edu/~bar/lab/"),
            (3, "http://b.edu/"),
            (4, "https://www.a.edu/~carl/home.html"),
        ]
    )
    assert index.match("edu,a)/~bar") == (1, 0)
    assert index.match("edu,a)/~bar/pubs.html") == (1, 1)
    assert index.match("edu,a)/~bar/lab") == (2, 0)
    assert index.match("edu,a)/~bar/lab/people/ada.html") == (2, 2)
    assert index.match("edu,b)/x/y") == (3, 2)  # a bare host covers the whole host
    assert index.match("edu,a)/~carl/home.html") == (4, 0)  # a seed naming a file …
    assert index.match("edu,a)/~carl/cv.html") == (4, 1)  # … covers its directory
    assert index.match("edu,c)/~bar") is None  # another host
    assert index.match("edu,a,cs)/~bar") is None  # another subdomain is another host


def test_barx_is_not_under_bar() -> None:
    alone = ScopeIndex([(1, "http://a.edu/~bar/")])
    assert alone.match("edu,a)/~barx") is None
    assert alone.match("edu,a)/~barx/pubs.html") is None
    both = ScopeIndex([(1, "http://a.edu/~bar/"), (2, "http://a.edu/~barx/")])
    assert both.match("edu,a)/~barx/pubs.html") == (2, 1)
    assert both.match("edu,a)/~bar/pubs.html") == (1, 1)


def test_depth_counts_path_segments_below_the_seed_not_the_query() -> None:
    index = ScopeIndex([(1, "http://a.edu/~bar/")])
    assert index.match("edu,a)/~bar/index.html") == (1, 0)  # the directory's own page
    assert index.match("edu,a)/~bar/pubs?year=2017") == (1, 1)
    assert index.match("edu,a)/~bar/a/b.html") == (1, 2)
    assert index.match("edu,a)/~bar/a/b/c.html") == (1, 3)  # found, but deeper than MAX_DEPTH
    assert MAX_DEPTH == 2


def test_an_index_over_the_database_holds_every_site() -> None:
    bar = bar_site()
    other = make_site(seed_url="http://a.edu/~barx/", canonical_key="edu,a)/~barx")
    index = ScopeIndex.for_sites()
    assert index.match("edu,a)/~bar/x.html") == (bar.pk, 1)
    assert index.match("edu,a)/~barx/x.html") == (other.pk, 1)
    assert ScopeIndex.for_sites([bar.pk]).match("edu,a)/~barx/x.html") is None


# --- captures_store -----------------------------------------------------------------------------


def test_each_capture_gets_its_kind_and_skipped_rows_are_counted_by_reason() -> None:
    site = bar_site()
    counts = captures_store(
        records=[
            row(SEED, at(0), digest="H1"),
            revisit(SEED, at(1), "H1"),  # the same content again
            revisit(SEED, at(2), "H1", status=200),  # pywb prints the revisit's HTTP status
            revisit(SEED + "pubs.html", at(2), "P1"),  # its original has not arrived yet
            row(SEED + "old.html", at(3), status=301, mimetype="text/html"),
            row(SEED + "gone.html", at(3), status=404),
            row(SEED + "paper.pdf", at(3), mimetype="application/pdf", digest="F"),
            row(SEED, at(0), digest="H2"),  # the same (url, timestamp) twice in one call
            row(SEED + "a/b/c.html", at(3)),
            row("http://a.edu/~barx/", at(3)),
        ],
        source="test",
        index=ScopeIndex.for_sites(),
    )
    assert (counts.read, counts.added, counts.sites) == (10, 7, {site.pk})
    assert counts.skipped == {
        "repeated (url, timestamp)": 1,
        f"deeper than {MAX_DEPTH}": 1,
        "outside every seed": 1,
    }
    assert kinds(site) == {
        (SEED, at(0)): ("observation", True),
        (SEED, at(1)): ("revisit", True),
        (SEED, at(2)): ("revisit", True),
        (SEED + "pubs.html", at(2)): ("revisit_orphan", False),
        (SEED + "old.html", at(3)): ("redirect", False),
        (SEED + "gone.html", at(3)): ("error", False),
        (SEED + "paper.pdf", at(3)): ("non_html", False),
    }
    # Revisits are stored in one form whatever the source printed.
    assert set(
        Capture.objects.filter(kind="revisit").values_list("mimetype", "status", "digest")
    ) == {("warc/revisit", None, "H1")}
    assert Capture.objects.get(url=SEED, timestamp=at(0)).digest == "H1"  # the first row kept


def test_an_orphan_revisit_is_promoted_when_its_original_arrives_later() -> None:
    site = bar_site()
    index = ScopeIndex.for_sites()
    captures_store(records=[revisit(SEED, at(5), "H1")], source="first", index=index)
    assert kinds(site) == {(SEED, at(5)): ("revisit_orphan", False)}

    counts = captures_store(
        records=[row(SEED, at(1), digest="H1"), revisit(SEED, at(5), "H1")],
        source="second",
        index=index,
    )
    assert counts.added == 1 and counts.skipped == {"already stored": 1}
    assert kinds(site) == {
        (SEED, at(1)): ("observation", True),
        (SEED, at(5)): ("revisit", True),  # promoted: it is an observation now
    }
    # An original that comes after the revisit does not make it one.
    captures_store(records=[revisit(SEED, at(7), "H9")], source="third", index=index)
    captures_store(records=[row(SEED, at(8), digest="H9")], source="fourth", index=index)
    assert kinds(site)[(SEED, at(7))] == ("revisit_orphan", False)


def test_storing_the_same_rows_again_adds_nothing() -> None:
    site = bar_site()
    records = [row(SEED, at(d), digest=f"H{d}") for d in range(5)]
    index = ScopeIndex.for_sites()
    first = captures_store(records=records, source="a", index=index)
    again = captures_store(records=records, source="b", index=index)
    assert first.added == 5 and again.added == 0
    assert again.skipped == {"already stored": 5}
    assert Capture.objects.filter(site=site).count() == 5


# --- snapshots_missing --------------------------------------------------------------------------


def test_each_distinct_content_is_wanted_once_and_failed_ones_again() -> None:
    site = bar_site()
    home, pubs = "edu,a)/~bar", "edu,a)/~bar/pubs.html"

    def capture(urlkey: str, moment: datetime, digest: str, **kw: Any) -> None:
        url = SEED if urlkey == home else SEED + urlkey.rpartition("/")[2]
        make_capture(site, url=url, urlkey=urlkey, timestamp=moment, digest=digest, **kw)

    capture(home, at(1), "A")
    capture(home, at(0), "A")  # the same content earlier: fetched once, at its first capture
    capture(home, at(2), "B")
    capture(pubs, at(0), "A")  # the same digest on another page is another content
    capture(home, at(3), "R", kind="revisit")  # a revisit carries an earlier capture's links
    capture(home, at(4), "X", kind="error", status=404, is_observation=False)
    for name, status in (("ok", "ok"), ("failed", "failed"), ("big", "too_large")):
        capture(f"edu,a)/~bar/{name}.html", at(0), name.upper())
        make_snapshot(urlkey=f"edu,a)/~bar/{name}.html", digest=name.upper(), status=status)
    other = make_site(seed_url="http://a.edu/~zed/", canonical_key="edu,a)/~zed")
    make_capture(other, url="http://a.edu/~zed/", urlkey="edu,a)/~zed", digest="Z")

    wanted = snapshots_missing(site_ids=[site.pk])
    assert sorted((w.urlkey, w.digest) for w in wanted) == [
        (home, "A"),
        (home, "B"),
        ("edu,a)/~bar/failed.html", "FAILED"),
        (pubs, "A"),
    ]
    first = next(w for w in wanted if (w.urlkey, w.digest) == (home, "A"))
    assert (first.url, first.timestamp) == (SEED, format_timestamp(at(0)))
    assert [w.digest for w in snapshots_missing(site_ids=[other.pk])] == ["Z"]


def test_the_newest_contents_are_fetched_first() -> None:
    site = bar_site()
    for day, digest in ((5, "E"), (1, "A"), (9, "N"), (3, "C"), (7, "A")):
        make_capture(site, url=SEED, urlkey="edu,a)/~bar", timestamp=at(day), digest=digest)
    wanted = snapshots_missing(site_ids=[site.pk])
    assert [w.digest for w in wanted] == ["N", "E", "C", "A"]  # "A" first seen on day 1


# --- sites_finish -------------------------------------------------------------------------------


def test_finishing_stamps_done_sites_and_records_why_others_failed() -> None:
    done = make_site(import_status="running", import_error="an earlier failure")
    failed = make_site(import_status="running")
    untouched = make_site(import_status="running")
    before = timezone.now()
    sites_finish(done=[done.pk], failed={failed.pk: "CDX server answered 503 five times"})
    for site in (done, failed, untouched):
        site.refresh_from_db()
    assert done.import_status == "done" and done.import_error == ""
    assert done.imported_at is not None and before <= done.imported_at <= timezone.now()
    assert failed.import_status == "failed"
    assert failed.import_error == "CDX server answered 503 five times"
    assert failed.imported_at is None
    assert untouched.import_status == "running" and untouched.imported_at is None


# --- Files: both mark their sites done with imported_at -----------------------------------------


def page(*links: str) -> bytes:
    anchors = "".join(f'<a href="{link}">{link}</a>' for link in links)
    return f"<html><body>{anchors}</body></html>".encode()


def sha1(body: bytes) -> str:
    return base64.b32encode(hashlib.sha1(body).digest()).decode()


def write_warc(path: Path, captures: Sequence[tuple[str, datetime, bytes, bool]]) -> Path:
    """A WARC file of (url, moment, payload, is_revisit) captures: responses and revisits."""
    with open(path, "wb") as stream:
        writer = WARCWriter(stream, gzip=True, warc_version="WARC/1.0")
        for url, moment, body, is_revisit in captures:
            http = StatusAndHeaders(
                "200 OK", [("Content-Type", "text/html; charset=utf-8")], protocol="HTTP/1.1"
            )
            headers = {"WARC-Date": moment.strftime("%Y-%m-%dT%H:%M:%SZ")}
            if is_revisit:
                record = writer.create_revisit_record(
                    url,
                    digest="sha1:" + sha1(body),
                    refers_to_uri=url,
                    refers_to_date="2017-01-01T00:00:00Z",
                    http_headers=http,
                    warc_headers_dict=headers,
                )
            else:
                headers["WARC-Payload-Digest"] = "sha1:" + sha1(body)
                record = writer.create_warc_record(
                    url,
                    "response",
                    payload=io.BytesIO(body),
                    length=len(body),
                    http_headers=http,
                    warc_headers_dict=headers,
                )
            writer.write_record(record)
    return path


def homepage_updates(site: Site) -> list[tuple[int | None, int | None]]:
    rows = Capture.objects.filter(site=site, depth=0, is_observation=True).order_by("timestamp")
    return list(rows.values_list("page_index", "link_floor"))


def test_sites_imported_from_a_warc_file_are_done_with_imported_at(tmp_path: Path) -> None:
    site = bar_site()
    never = make_site()  # not in the file: left alone
    first, second = page("http://x.org/1"), page("http://x.org/1", "http://x.org/2")
    path = write_warc(
        tmp_path / "bar.warc.gz",
        [
            (SEED, at(0), first, False),
            (SEED + "pubs.html", at(0), first, False),
            (SEED, at(10), second, False),
            (SEED, at(20), second, True),
        ],
    )
    statuses_when_after_ran: list[str] = []

    def after(site_ids: list[int]) -> None:
        assert site_ids == [site.pk]
        statuses_when_after_ran.append(Site.objects.get(pk=site.pk).import_status)

    report = sites_import(FromWarcFiles([path], max_body=1 << 20), after=after)

    site.refresh_from_db()
    never.refresh_from_db()
    assert report.done == [site.pk] and report.captures.added == 4 and report.snapshots == 3
    assert site.import_status == "done" and site.imported_at is not None
    assert statuses_when_after_ran == ["running"]  # estimates come before "done"
    assert never.import_status == "pending" and never.imported_at is None
    # Links parsed from the same pass: the second content adds a link, the revisit does not.
    assert homepage_updates(site) == [(0, -1), (1, -1), (2, 1)]


class DictArchive:
    """An archive client that answers memento fetches from a dict: (timestamp, url) → body."""

    def __init__(self, bodies: dict[tuple[str, str], bytes]) -> None:
        self.bodies = bodies
        self.asked: list[tuple[str, str]] = []
        self.unreachable = None  # an archive that can always be reached

    def fetch_memento(self, timestamp: str, url: str) -> Memento:
        self.asked.append((timestamp, url))
        body = self.bodies.get((timestamp, url))
        if body is None:
            raise ArchiveError(f"{url} at {timestamp}: HTTP 503, failed after 3 attempts")
        return Memento(url, timestamp, 200, "text/html", body, False)


def write_cdx(path: Path, records: Sequence[CdxRecord]) -> Path:
    lines = [
        f"{r.urlkey} {format_timestamp(r.timestamp)} {r.original} {r.mimetype} "
        f"{'-' if r.status is None else r.status} {r.digest} {r.length}"
        for r in records
    ]
    path.write_text("\n".join(lines) + "\n")
    return path


def test_sites_imported_from_a_cdx_file_are_done_with_imported_at(tmp_path: Path) -> None:
    site = bar_site()
    first, second = page("http://x.org/1"), page("http://x.org/1", "http://x.org/2")
    path = write_cdx(
        tmp_path / "bar.cdx",
        [
            row(SEED, at(0), digest="D1"),
            row(SEED, at(10), digest="D2"),
            revisit(SEED, at(20), "D2"),
            row(SEED, at(30), digest="D3"),
        ],
    )
    stamp = format_timestamp
    archive = DictArchive({(stamp(at(0)), SEED): first, (stamp(at(10)), SEED): second})

    report = sites_import(FromCdxFiles([path]), client=archive)  # type: ignore[arg-type]

    site.refresh_from_db()
    assert report.done == [site.pk] and report.captures.added == 4
    assert site.import_status == "done" and site.imported_at is not None
    # Each distinct content fetched once; the one the archive failed to serve is retried later.
    assert sorted(archive.asked) == [(stamp(at(d)), SEED) for d in (0, 10, 30)]
    assert report.fetches == {"fetched": 2, "fetch failed": 1}
    assert homepage_updates(site) == [(0, -1), (1, -1), (2, 1), (None, None)]
    assert sites_with_failed_fetches() == [site.pk]

    # The retry pass fetches what is still missing and computes the updates again.
    archive.bodies[(stamp(at(30)), SEED)] = page("http://x.org/1", "http://x.org/3")
    finished = site.imported_at
    retried = sites_import(FetchRetry([site.pk]), client=archive)  # type: ignore[arg-type]
    site.refresh_from_db()
    assert retried.done == [site.pk] and retried.fetches == {"fetched": 1}
    assert homepage_updates(site)[-1] == (3, -1)  # x.org/3 is new
    assert site.imported_at > finished
    assert sites_with_failed_fetches() == []
