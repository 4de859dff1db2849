"""``bench.homepages`` reads a folder of homepage versions kept in git, on made-up folders in the
layout of the real histories (which live outside the checkout): when the live page gained a
link, the page's address, and a clear word for a folder it cannot read."""

from __future__ import annotations

import csv
import io
import tarfile
from pathlib import Path

import pytest

from bench.homepages import (
    COLLECTION,
    DAY_SECONDS,
    homepage_folders,
    homepage_url,
    load_homepage,
    load_homepages,
)

HOUR = 3600


def _folder(
    root: Path,
    name: str,
    versions: list[tuple[int, str]],
    *,
    ext: str = "html",
    drop: int | None = None,
    snapshot: str | None = None,
) -> Path:
    """A homepage folder: versions_index.csv, the versions' tarball (version ``drop`` listed but
    left out of it) and PROVENANCE.md."""
    folder = root / COLLECTION / name
    folder.mkdir(parents=True)
    files = [f"{epoch}_{i:010d}.{ext}" for i, (epoch, _) in enumerate(versions)]
    with open(folder / "versions_index.csv", "w", newline="", encoding="utf-8") as handle:
        out = csv.writer(handle)
        out.writerow(["commit_time_utc14", "commit_sha", "author_epoch", "commit_epoch", "file"])
        for (epoch, _), file in zip(versions, files, strict=True):
            out.writerow(["20200101000000", "0" * 40, epoch, epoch, file])
    with tarfile.open(folder / "index_html_versions.tar.xz", "w:xz") as archive:
        for i, ((_, body), file) in enumerate(zip(versions, files, strict=True)):
            if i == drop:
                continue
            data = body.encode()
            member = tarfile.TarInfo(f"versions/{file}")
            member.size = len(data)
            archive.addfile(member, io.BytesIO(data))
    stamp = f"snapshot HEAD {'a' * 40} ({snapshot})" if snapshot else "no snapshot named"
    (folder / "PROVENANCE.md").write_text(f"- Source repo: {name}, {stamp}.\n", encoding="utf-8")
    return folder


def _html(*links: str) -> str:
    return "<html><body>" + "".join(f'<a href="{u}">x</a>' for u in links) + "</body></html>"


T0 = 1_600_000_000


def test_a_change_is_an_edit_that_brings_a_link_no_earlier_live_version_held(
    tmp_path: Path,
) -> None:
    folder = _folder(
        tmp_path,
        "alice__alice.github.io",
        [
            (T0, _html("https://a.example/1")),
            # Two commits an hour apart go out as one edit: a link added and taken out again
            # within it was never live.
            (T0 + 10 * 86400, _html("https://a.example/1", "https://gone.example/")),
            (T0 + 10 * 86400 + HOUR, _html("https://a.example/1", "https://a.example/2")),
            (T0 + 20 * 86400, _html("https://a.example/2")),  # a link removed: no change
            (T0 + 30 * 86400, _html("https://a.example/2", "papers/new.pdf")),
        ],
        snapshot="2021-01-01T00:00:00+00:00",
    )
    page = load_homepage(folder)
    assert page.url == "https://alice.github.io/"
    assert page.versions == 5
    assert page.changes.tolist() == [
        (T0 + 10 * 86400 + HOUR) / DAY_SECONDS,
        (T0 + 30 * 86400) / DAY_SECONDS,
    ]
    assert page.first == T0 / DAY_SECONDS
    # Known until the repository's snapshot, not only its last version.
    assert page.known_until == pytest.approx(1_609_459_200 / DAY_SECONDS)
    # The relative link is resolved against the homepage, as a crawl of the live page reads it
    # (links are kept as SURT keys, DESIGN rule 2).
    assert page.edit_links[-1] == {"example,a)/2", "io,github,alice)/papers/new.pdf"}


def test_markdown_sources_and_project_sites_are_read_as_their_sites_build_them(
    tmp_path: Path,
) -> None:
    versions = [
        (T0, "# Bob\n[paper](https://b.example/1)\n"),
        (T0 + 86400, "# Bob\n[paper](https://b.example/1) and [code](https://b.example/2)\n"),
    ]
    for ext in ("md", "markdown"):
        page = load_homepage(_folder(tmp_path / ext, "bob__homepage", versions, ext=ext))
        assert page.changes.tolist() == [(T0 + 86400) / DAY_SECONDS], ext
        assert page.url == "https://bob.github.io/homepage/"
        assert page.known_until == page.changes[-1]  # no snapshot named: the last version
    assert homepage_url(Path("Carol__Carol.GitHub.io")) == "https://carol.github.io/"


def test_a_folder_that_cannot_be_read_is_named_and_the_others_are_still_read(
    tmp_path: Path,
) -> None:
    good = [(T0, _html("https://a.example/1")), (T0 + 86400, _html("https://a.example/2"))]
    _folder(tmp_path, "a__a.github.io", good)
    _folder(tmp_path, "b__b.github.io", good, drop=1)
    broken = _folder(tmp_path, "c__c.github.io", good)
    (broken / "versions_index.csv").write_text(
        "commit_epoch,file\nyesterday,x.html\n", encoding="utf-8"
    )
    _folder(tmp_path, "d__d.github.io", good, snapshot="last spring")
    empty = _folder(tmp_path, "e__e.github.io", good)
    (empty / "versions_index.csv").write_text("commit_epoch,file\n", encoding="utf-8")

    unread: list[tuple[str, str]] = []
    pages = load_homepages(tmp_path, unread)
    # A snapshot date that is not ISO leaves the truth known to the last version only.
    assert [p.name for p in pages] == ["a__a.github.io", "d__d.github.io"]
    assert pages[1].known_until == (T0 + 86400) / DAY_SECONDS
    reasons = dict(unread)
    assert list(reasons) == ["b__b.github.io", "c__c.github.io", "e__e.github.io"]
    assert "not in index_html_versions.tar.xz" in reasons["b__b.github.io"]
    assert f"{T0 + 86400}_0000000001.html" in reasons["b__b.github.io"]
    assert "integer commit_epoch" in reasons["c__c.github.io"]
    assert "lists no version" in reasons["e__e.github.io"]
    # Without a list to report to, the first unreadable folder stops the read, by name.
    with pytest.raises(ValueError, match="b__b.github.io"):
        load_homepages(tmp_path)


def test_the_real_loop_names_what_it_cannot_read_and_stops_when_no_homepage_qualifies(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from bench import real_loop

    young = [(T0, _html("https://a.example/1")), (T0 + 86400, _html("https://a.example/2"))]
    _folder(tmp_path, "a__a.github.io", young)
    _folder(tmp_path, "b__b.github.io", young, drop=0)
    monkeypatch.setattr("sys.argv", ["real_loop", "--realdata", str(tmp_path), "--seeds", "0"])
    assert real_loop.main() == 1
    out = capsys.readouterr().out
    assert "1 homepages read" in out
    assert "not read: b__b.github.io: 1 version(s) of versions_index.csv" in out
    assert "seed 0: start " in out and "none of the 1 homepages qualifies" in out
    assert "nothing to replay" in out


def test_a_collections_own_folder_can_be_named_and_single_homepages_beside_it_are_read(
    tmp_path: Path,
) -> None:
    good = [(T0, _html("https://a.example/1")), (T0 + 86400, _html("https://a.example/2"))]
    for name in ("b__b.github.io", "a__a.github.io"):
        _folder(tmp_path, name, good)
    # A homepage folder beside the collection (as the single homepages are), and one that is not.
    beside = _folder(tmp_path / "elsewhere", "c__c.github.io", good)
    beside.rename(tmp_path / beside.name)
    (tmp_path / "notes").mkdir()
    names = [p.name for p in homepage_folders(tmp_path)]
    assert names == ["a__a.github.io", "b__b.github.io", "c__c.github.io"]
    # The collection's own folder, given as the data's root, reads the same homepages.
    pages = load_homepages(tmp_path / COLLECTION)
    assert [p.name for p in pages] == ["a__a.github.io", "b__b.github.io"]
    assert homepage_folders(tmp_path / "absent") == []
