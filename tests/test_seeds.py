"""Seed lists: every bad line explained, good lines kept, duplicates merged, nothing lost."""

from __future__ import annotations

import pytest

from archive.importers import seeds_import
from archive.models import Site, Tag
from hacs.formats.seeds import SeedFileError, parse_seed_list
from tests.conftest import make_site

CSV = (
    "url,author,tags\n"
    "http://www.cs.uni.edu/~ada/,Ada Lovelace,ml;theory\n"
    "https://cs.uni.edu/~ada/index.html,Ada L.,\n"
    "ftp://cs.uni.edu/~bob/,Bob,\n"
    ",Nobody,\n"
    "http://cs.uni.edu/~carl,Carl Gauss,math\n"
    "http://localhost/~x,Local,\n"
)


def test_csv_lines_are_checked_one_by_one() -> None:
    result = parse_seed_list(CSV.encode())
    assert result.format == "csv"
    assert [(r.line, r.author) for r in result.rows] == [(2, "Ada Lovelace"), (6, "Carl Gauss")]
    assert result.rows[0].tags == ("ml", "theory")
    assert [(m.line, m.into_line) for m in result.merged] == [(3, 2)]
    reasons = {r.line: r.reason for r in result.rejected}
    assert set(reasons) == {4, 5, 7}
    assert "only http and https" in reasons[4]
    assert "empty" in reasons[5]
    assert "no domain" in reasons[7]


def test_a_plain_list_takes_one_url_per_line_and_skips_comments() -> None:
    text = "# my seeds\nhttp://a.edu/~x/\n\n  b.edu/~y  \nnot a url at all\n"
    result = parse_seed_list(text.encode())
    assert result.format == "text"
    assert [(r.line, r.key) for r in result.rows] == [(2, "edu,a)/~x"), (4, "edu,b)/~y")]
    assert [r.line for r in result.rejected] == [5]


def test_user_directory_filter_follows_the_paper() -> None:
    result = parse_seed_list(
        b"http://a.edu/~x/\nhttp://a.edu/people/y/\n", user_directories_only=True
    )
    assert [r.key for r in result.rows] == ["edu,a)/~x"]
    assert "user-directory" in result.rejected[0].reason


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b"", "empty"),
        (b"  \n\n", "empty"),
        (b"url,author\n\xff\xfebad\n", "not UTF-8 text (byte 0xff on line 2)"),
        (b"name,author\nx,y\n", "has no 'url' column"),
        (b"a\x00b", "NUL bytes"),
    ],
)
def test_unreadable_files_get_a_clear_message(data: bytes, message: str) -> None:
    with pytest.raises(SeedFileError, match=message.replace("(", r"\(").replace(")", r"\)")):
        parse_seed_list(data)


def test_size_and_line_limits_are_explained() -> None:
    with pytest.raises(SeedFileError, match="the limit is 100"):
        parse_seed_list(b"http://a.edu/~x\n" * 20, max_bytes=100)
    with pytest.raises(SeedFileError, match="limit is 5 seeds"):
        parse_seed_list(b"http://a.edu/~x\n" * 10, max_lines=5)


def test_a_utf8_bom_from_a_spreadsheet_is_accepted() -> None:
    result = parse_seed_list("\ufeffurl,author\nhttp://a.edu/~é/,Émile\n".encode())
    assert result.rows[0].author == "Émile"


@pytest.mark.django_db
def test_import_adds_new_sites_and_keeps_stored_ones() -> None:
    stored = make_site(seed_url="http://cs.uni.edu/~carl/", canonical_key="edu,uni,cs)/~carl",
                       author="C. F. Gauss")  # fmt: skip
    report = seeds_import(data=CSV.encode())
    assert [s.author for s in report.added] == ["Ada Lovelace"]
    assert [(line, site_id) for line, _, site_id in report.already_stored] == [(6, stored.pk)]
    assert Site.objects.count() == 2
    stored.refresh_from_db()
    assert stored.author == "C. F. Gauss"  # nothing stored is overwritten
    assert set(stored.tags.values_list("name", flat=True)) == {"math"}
    assert set(Tag.objects.values_list("name", flat=True)) == {"ml", "theory", "math"}
    assert "1 added, 1 already stored, 1 merged duplicate lines, 3 rejected" == report.summary()


@pytest.mark.django_db
def test_importing_the_same_list_twice_adds_nothing() -> None:
    seeds_import(data=CSV.encode())
    again = seeds_import(data=CSV.encode())
    assert again.added == []
    assert Site.objects.count() == 2


@pytest.mark.django_db
def test_a_bad_file_changes_nothing_stored() -> None:
    make_site()
    with pytest.raises(SeedFileError):
        seeds_import(data=b"\xff\xfe")
    assert Site.objects.count() == 1
