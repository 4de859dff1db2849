"""Reading a demo archive back (hacs_demo.archive): the capture nearest a moment, its stored
response (a revisit's from the response it repeats), links pointed back into the replay, and
the WARC file's own name for the archive HACS keeps."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from hacs_demo import LOCAL_WARC_NAME, DemoArchive, build_demo_archive
from hacs_demo.archive import (
    DemoArchiveError,
    DemoArchiveReader,
    OrphanRevisit,
    insert_banner,
    rewrite_links,
)
from hacs_demo.hashing import payload_digest


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> DemoArchive:
    return build_demo_archive(
        tmp_path_factory.mktemp("replay"), sites=6, seed=4, warc_name=LOCAL_WARC_NAME
    )


@pytest.fixture(scope="module")
def reader(demo: DemoArchive) -> DemoArchiveReader:
    return DemoArchiveReader(demo.outdir)


def test_every_clean_cdx_line_is_read_and_the_dirt_is_passed_over(
    demo: DemoArchive, reader: DemoArchiveReader
) -> None:
    assert reader.captures == demo.captures
    assert demo.cdx_lines - demo.captures == demo.dirty_lines > 0


def test_every_capture_replays_the_payload_its_digest_names(
    demo: DemoArchive, reader: DemoArchiveReader
) -> None:
    # A response's payload is its own; a revisit's is the response's it repeats; a revisit
    # whose response the archive never held (the truth's orphan revisits) has none.
    revisits, orphans = 0, 0
    for captures in reader._by_key.values():
        for capture in captures:
            try:
                memento = reader.memento(capture)
            except OrphanRevisit as error:
                assert capture.status is None and capture.url in str(error)
                orphans += 1
                continue
            assert payload_digest(memento.body) == capture.digest, capture
            revisits += capture.status is None
    truth = json.loads(demo.truth_path.read_text(encoding="utf-8"))
    kinds = [entry.get("kind") for site in truth["sites"] for entry in site["captures"]]
    assert revisits > 0
    assert orphans == kinds.count("orphan_revisit") > 0


def test_the_nearest_capture_is_chosen_as_a_wayback_machine_does(reader: DemoArchiveReader) -> None:
    captures = next(found for found in reader._by_key.values() if len(found) >= 3)
    first, second = captures[0], captures[1]
    url = first.url
    assert reader.nearest(url, first.timestamp) == first
    assert reader.nearest(url, "19990101000000") == first
    assert reader.nearest(url, "29990101000000") == captures[-1]
    assert reader.nearest(url, second.timestamp) == second
    # Another way of writing the URL names the same page (the urlkey).
    other = url.replace("http://", "https://", 1).replace("://", "://www.", 1)
    assert reader.nearest(other, first.timestamp) == first
    assert reader.nearest("http://nowhere.example.org/~nobody/", first.timestamp) is None
    with pytest.raises(ValueError, match="14 digits"):
        reader.nearest(url, "2017")


def test_a_missing_archive_is_reported_with_its_file(tmp_path: Path) -> None:
    with pytest.raises(DemoArchiveError, match=r"demo\.cdx cannot be read"):
        DemoArchiveReader(tmp_path)


def test_the_local_archive_names_its_warc_file_everywhere(demo: DemoArchive) -> None:
    assert demo.warc_path.name == LOCAL_WARC_NAME and demo.warc_path.exists()
    lines = demo.cdx_path.read_text(encoding="utf-8").splitlines()[1:]
    assert {line.split(" ")[10] for line in lines if len(line.split(" ")) == 11} == {
        LOCAL_WARC_NAME
    }
    truth = json.loads(demo.truth_path.read_text(encoding="utf-8"))
    assert truth["files"]["warc"] == LOCAL_WARC_NAME
    head = gzip.GzipFile(demo.warc_path).read(2000)
    assert f"WARC-Filename: {LOCAL_WARC_NAME}".encode() in head


def test_the_local_name_changes_nothing_but_the_name(tmp_path: Path) -> None:
    plain = build_demo_archive(tmp_path / "plain", sites=3, seed=2)
    named = build_demo_archive(tmp_path / "named", sites=3, seed=2, warc_name=LOCAL_WARC_NAME)
    again = build_demo_archive(tmp_path / "again", sites=3, seed=2, warc_name=LOCAL_WARC_NAME)
    assert named.warc_path.read_bytes() == again.warc_path.read_bytes()

    # The same captures, each a few bytes further on (the warcinfo record names the file).
    def lines(path: Path) -> list[list[str]]:
        fields = [line.split(" ") for line in path.read_text().splitlines()[1:]]
        return [f[:9] for f in fields if len(f) == 11]  # the truncated line is cut shorter

    assert lines(plain.cdx_path) == lines(named.cdx_path)
    assert plain.seeds_path.read_bytes() == named.seeds_path.read_bytes()


@pytest.mark.parametrize("name", ["demo.warc", "../x.warc.gz", ".warc.gz", "a/b.warc.gz"])
def test_a_warc_name_that_is_not_a_plain_file_name_is_refused(tmp_path: Path, name: str) -> None:
    with pytest.raises(ValueError, match="warc_name"):
        build_demo_archive(tmp_path, sites=1, warc_name=name)


def replay(url: str) -> str:
    return f"/demo-archive/20170101000000/{url}"


def test_links_are_pointed_back_into_the_replay() -> None:
    page = (
        b'<HTML><HEAD><BASE HREF="http://cs.u.edu/~ana/"><LINK REL=stylesheet HREF="s.css">'
        b"</HEAD><BODY><A HREF=papers.html>p</A> <a href='/~bob/#top'>b</a> "
        b'<area href="https://x.org/a?b=1&amp;c=2"> <a href="mailto:ana@u.edu">m</a> '
        b'<a href="#sec">s</a> <img src="me.jpg"></BODY></HTML>'
    )
    out = rewrite_links(page, "http://cs.u.edu/~ana/index.html", replay)
    assert b'<BASE HREF="/demo-archive/20170101000000/http://cs.u.edu/~ana/">' in out
    assert b'<A HREF="/demo-archive/20170101000000/http://cs.u.edu/~ana/papers.html">' in out
    assert b'href="/demo-archive/20170101000000/http://cs.u.edu/~bob/#top"' in out
    assert b'href="/demo-archive/20170101000000/https://x.org/a?b=1&amp;c=2"' in out
    # Not web links, a fragment of this page, and what the page loads stay as written.
    for kept in (b'href="mailto:ana@u.edu"', b'href="#sec"', b'HREF="s.css"', b'src="me.jpg"'):
        assert kept in out


def test_the_banner_goes_first_in_the_body() -> None:
    assert insert_banner(b"<html><BODY class=x><p>hi", b"<div>B</div>") == (
        b"<html><BODY class=x><div>B</div><p>hi"
    )
    assert insert_banner(b"<p>no body", b"<div>B</div>") == b"<div>B</div><p>no body"
