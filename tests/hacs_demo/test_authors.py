"""The demo's authors own their URLs: ``https://www.cs.example.edu/~jsmith2/`` belongs to a J.
Smith, in the world, in seeds.csv and on the homepage itself, whatever the seed."""

from __future__ import annotations

import csv
import gzip
import re
from pathlib import Path

import numpy as np
import pytest

from hacs_demo import build_demo_archive
from hacs_demo.authors import Author, draw_author, user_name
from hacs_demo.vocabulary import ascii_fold

SEEDS = range(200)
SITES = 40


def authors(seed: int, sites: int = SITES) -> list[Author]:
    """The authors of a ``sites``-site world, drawn as ``hacs_demo.site.Site`` draws them."""
    used: set[tuple[str, str]] = set()
    found: list[Author] = []
    for index in range(sites):
        rng = np.random.default_rng([seed, index])
        found.append(draw_author(rng, index, found[-1] if found else None, used))
    return found


def owner(user: str) -> str:
    """The user name without the number a department adds for a namesake."""
    return re.sub(r"\d+$", "", user)


def name_parts(written: str) -> tuple[str, str]:
    """(first, last) of a name as the seed list writes it: "First Last" or "Last, First"."""
    if ", " in written:
        last, first = written.split(", ", 1)
    else:
        first, last = written.split(" ", 1)
    return first, last


def test_user_names_are_the_first_initial_and_the_surname() -> None:
    assert user_name("Jürgen", "Peters") == "jpeters"
    assert user_name("Zoë", "Gómez") == "zgomez"


@pytest.mark.parametrize("seed", SEEDS)
def test_every_author_is_named_by_their_user_directory(seed: int) -> None:
    drawn = authors(seed)
    for author in drawn:
        assert owner(author.user) == user_name(author.first, author.last), author
        assert author.first in author.name and author.last in author.name
        assert ascii_fold(author.first[0]).lower() == author.user[0]


def test_namesakes_still_share_a_host_with_a_user_name_that_extends_another() -> None:
    # DESIGN.md's "~barx is not under ~bar": the trap survives the names matching.
    for seed in range(20):
        drawn = authors(seed)
        for author in drawn[9::10]:
            before = drawn[author.index - 1]
            assert author.host == before.host
            assert author.user != before.user and author.user.startswith(before.user)
            assert author.last == before.last and author.first[0] == before.first[0]


def test_the_names_drawn_do_not_depend_on_how_many_sites_follow() -> None:
    assert authors(3, 25) == authors(3, 60)[:25]


@pytest.mark.parametrize("seed", [0, 7])
def test_seed_list_rows_and_homepages_name_the_author_of_their_url(
    tmp_path: Path, seed: int
) -> None:
    demo = build_demo_archive(tmp_path, sites=30, seed=seed)
    with open(demo.seeds_path, encoding="utf-8", newline="") as stream:
        rows = [row for row in csv.DictReader(stream) if row["url"]]
    assert len(rows) == 30 + 2  # the sites, the duplicate and the ftp mirror
    for row in rows:
        user = re.search(r"/~([^/]+)", row["url"])[1]  # type: ignore[index]
        first, last = name_parts(row["author"])
        assert owner(user.lower()) == user_name(first, last), row
    # Every homepage the archive captured is titled with the name of one of these authors.
    named = {" ".join(name_parts(row["author"])) for row in rows}
    titles = set(
        re.findall(
            rb"<title>(.*?) - Home Page</title>", gzip.decompress(demo.warc_path.read_bytes()), re.I
        )
    )
    assert titles and {_decoded(title) for title in titles} <= named


def _decoded(text: bytes) -> str:
    """A title as its page wrote it: UTF-8, or ISO-8859-1 for a quarter of the sites."""
    try:
        return text.decode("utf-8")
    except UnicodeDecodeError:
        return text.decode("latin-1")
