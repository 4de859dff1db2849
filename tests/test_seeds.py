"""archive.seeds: importing a seed list adds new sites, keeps stored ones, loses nothing.

Parsing the list itself (``hacs.formats.seeds``) is tested without a database in
``tests/hacs/formats/test_seeds.py``.
"""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

from archive.models import Site, Tag
from archive.seeds import seeds_import
from hacs.formats.seeds import SeedFileError
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


@pytest.mark.django_db
def test_import_adds_new_sites_and_keeps_stored_ones() -> None:
    stored = make_site(
        seed_url="http://cs.uni.edu/~carl/", canonical_key="edu,uni,cs)/~carl", author="C. F. Gauss"
    )
    report = seeds_import(data=CSV.encode())
    assert [s.author for s in report.added] == ["Ada Lovelace"]
    assert [(line, site_id) for line, _, site_id in report.already_stored] == [(6, stored.pk)]
    assert Site.objects.count() == 2
    stored.refresh_from_db()
    assert stored.author == "C. F. Gauss"  # nothing stored is overwritten
    assert set(stored.tags.values_list("name", flat=True)) == {"math"}
    assert set(Tag.objects.values_list("name", flat=True)) == {"ml", "theory", "math"}
    assert report.tags_added == {stored.pk: ["math"]}  # the line's tag reaches the stored site
    assert report.summary() == (
        "1 added, 1 already stored (1 of them gain tags), 1 merged duplicate lines, 3 rejected"
    )


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


def test_the_parsers_cuts_match_the_columns() -> None:
    from hacs.formats.seeds import MAX_AUTHOR_LENGTH, MAX_TAG_LENGTH

    assert Site._meta.get_field("author").max_length == MAX_AUTHOR_LENGTH
    assert Tag._meta.get_field("name").max_length == MAX_TAG_LENGTH


@pytest.mark.django_db
def test_the_command_explains_a_tag_too_long_and_stores_nothing(tmp_path: Path) -> None:
    path = tmp_path / "seeds.txt"
    path.write_text("http://a.edu/~x/\n")
    with pytest.raises(CommandError, match="a tag holds at most 100"):
        call_command("import_seeds", str(path), "--tag", "t" * 101, stdout=io.StringIO())
    assert Site.objects.count() == 0


@pytest.mark.django_db
def test_sites_stored_under_the_old_keys_are_found_again_after_the_key_refresh() -> None:
    import importlib

    from django.apps import apps

    alice = make_site(seed_url="http://foo.edu/~Alice/", canonical_key="edu,foo)/~alice")
    home = make_site(
        seed_url="http://foo.edu/~dmitri/home.html", canonical_key="edu,foo)/~dmitri/home.html"
    )
    twin = make_site(seed_url="http://foo.edu/~dmitri/", canonical_key="edu,foo)/~dmitri")
    migration = importlib.import_module("archive.migrations.0003_seed_keys_keep_path_case")
    migration.refresh_seed_keys(apps, None)
    keys = dict(Site.objects.values_list("pk", "canonical_key"))
    assert keys == {
        alice.pk: "edu,foo)/~Alice",
        home.pk: "edu,foo)/~dmitri/home.html",  # two stored sites are never merged
        twin.pk: "edu,foo)/~dmitri",
    }
    report = seeds_import(
        data=b"http://foo.edu/~Alice/\nhttp://foo.edu/~alice/\nhttp://foo.edu/~dmitri/home.html\n"
    )
    assert [(line, pk) for line, _url, pk in report.already_stored] == [(1, alice.pk), (3, twin.pk)]
    assert [s.seed_url for s in report.added] == ["http://foo.edu/~alice/"]
