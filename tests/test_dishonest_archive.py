"""A row is stored under a seed only when both its urlkey and its original URL lie in that
seed's scope: an archive (or a CDX file) whose urlkey says ``~ann`` while the original URL is
another person's page, on another host or through ``~ann/../~zed/``, cannot file it under Ann.
Such a row is a bad row, counted with its reason; honest rows beside it are stored as before."""

from __future__ import annotations

import io
from datetime import UTC, datetime
from pathlib import Path

import pytest
from django.core.management import call_command

from archive.captures import ScopeIndex, captures_store
from archive.models import Capture, Site
from hacs.formats import cdx
from hacs.formats.canon import SeedScope
from tests.factories import make_site

WHEN = datetime(2018, 3, 1, 12, tzinfo=UTC)


def record(urlkey: str, original: str, second: int = 0) -> cdx.CdxRecord:
    return cdx.CdxRecord(
        urlkey=urlkey,
        timestamp=WHEN.replace(second=second),
        original=original,
        mimetype="text/html",
        status=200,
        digest="AAAA",
        length=100,
    )


@pytest.fixture()
def ann_and_zed(db: None) -> tuple[Site, Site]:
    ann = make_site(seed_url="http://foo.edu/~ann/", canonical_key="edu,foo)/~ann")
    zed = make_site(seed_url="http://foo.edu/~zed/", canonical_key="edu,foo)/~zed")
    return ann, zed


@pytest.mark.parametrize(
    ("urlkey", "original", "reason"),
    [
        # The urlkey says Ann's page; the page captured is on another host.
        (
            "edu,foo)/~ann/papers.html",
            "http://evil.example/~ann/papers.html",
            "invalid original (outside its urlkey's seed)",
        ),
        # ... or Zed's page, reached through a dot segment that the urlkey hides.
        (
            "edu,foo)/~ann/x",
            "http://foo.edu/~ann/../~zed/x",
            "invalid original (outside its urlkey's seed)",
        ),
        (
            "edu,foo)/~ann/x",
            "http://foo.edu/~ann/%2e%2e/~zed/x",
            "invalid original (outside its urlkey's seed)",
        ),
        ("edu,foo)/~ann/", "not a url at all", "invalid original (outside its urlkey's seed)"),
        ("edu,foo)/~ann/", "ftp://foo.edu/~ann/", "invalid original (not a URL)"),
        # A urlkey that still holds a dot segment is not canonical: no seed's page.
        ("edu,foo)/~ann/../~zed/x", "http://foo.edu/~ann/../~zed/x", "outside every seed"),
    ],
)
def test_a_row_whose_original_is_not_the_urlkeys_seed_is_a_bad_row(
    ann_and_zed: tuple[Site, Site], urlkey: str, original: str, reason: str
) -> None:
    ann, _zed = ann_and_zed
    honest = record("edu,foo)/~ann", "http://foo.edu/~ann/", second=1)
    counts = captures_store(
        records=[record(urlkey, original), honest], source="test", index=ScopeIndex.for_sites()
    )
    assert counts.skipped[reason] == 1
    assert counts.added == 1
    assert list(Capture.objects.values_list("site_id", "url")) == [(ann.pk, "http://foo.edu/~ann/")]


def test_the_same_page_written_another_way_is_still_the_seeds(
    ann_and_zed: tuple[Site, Site],
) -> None:
    ann, _zed = ann_and_zed
    rows = [
        record("edu,foo)/~ann", "https://www.foo.edu:443/~ann/index.html", 1),
        record("edu,foo)/~ann/a/b", "http://FOO.edu/~ann/a/./c/../b", 2),
    ]
    counts = captures_store(records=rows, source="test", index=ScopeIndex.for_sites())
    assert counts.added == 2 and not counts.skipped
    assert set(Capture.objects.values_list("site_id", flat=True)) == {ann.pk}


def test_a_urlkey_holding_a_dot_segment_is_outside_every_scope() -> None:
    scope = SeedScope.from_url("http://foo.edu/~ann/")
    assert scope.contains("edu,foo)/~ann/notes.html")
    assert not scope.contains("edu,foo)/~ann/../~zed")
    assert not scope.contains("edu,foo)/~ann/./x")
    assert not scope.contains("edu,foo)/~ann/%2E%2e/x")
    assert scope.contains("edu,foo)/~ann/v1..2/notes")  # dots inside a segment are a name


def test_import_cdx_counts_the_misfiled_row_and_stores_the_rest(
    ann_and_zed: tuple[Site, Site], tmp_path: Path
) -> None:
    ann, zed = ann_and_zed
    lines = [
        "edu,foo)/~ann 20180301120000 http://foo.edu/~ann/ text/html 200 AAAA 100",
        "edu,foo)/~ann/cv 20180301120001 http://foo.edu/~ann/../~zed/cv text/html 200 BBBB 100",
        "edu,foo)/~ann/x 20180301120002 http://elsewhere.example/x text/html 200 CCCC 100",
    ]
    path = tmp_path / "dishonest.cdx"
    path.write_text(" CDX N b a m s k r\n" + "\n".join(lines) + "\n")
    out = io.StringIO()
    call_command("import_cdx", str(path), "--no-fetch", stdout=out, stderr=io.StringIO())
    said = out.getvalue()
    assert "1 captures added" in said
    assert "2 invalid original (outside its urlkey's seed)" in said
    assert list(Capture.objects.values_list("site_id", "url")) == [(ann.pk, "http://foo.edu/~ann/")]
    assert not Capture.objects.filter(site=zed).exists()
