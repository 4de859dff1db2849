"""Who each demo author is, where their site lives, and the habits of its HTML and server.

The traps a seed list and an archive hold for HACS are drawn here: authors written "Last,
First", two authors on one host whose user names extend each other (``~bar`` and ``~barx``),
seeds written several ways, sites served as ISO-8859-1, upper-case HTML 4 tags, unquoted
attributes, ``www.`` hosts and a move to https in the middle of the span.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from hacs_demo.hashing import stable_hash
from hacs_demo.vocabulary import (
    DEPARTMENTS,
    FIRST_NAMES,
    LAST_NAMES,
    SERVERS,
    TOPICS,
    UNIVERSITIES,
    ascii_fold,
)


@dataclass(frozen=True)
class Author:
    index: int  # the site's number in the archive
    first: str
    last: str
    name: str  # as the seed list writes it: "First Last", sometimes "Last, First"
    host: str  # the department host, canonical (no www.)
    user: str  # the ``~user`` directory
    uni: str
    tags: tuple[str, ...]  # research topics, sorted
    ip: str  # what WARC-IP-Address says the server was
    server: str  # the HTTP Server header


@dataclass(frozen=True)
class Style:
    """How the site's HTML and server are written; fixed for the site's whole life."""

    www: bool  # the site answers under www.<host>
    migrate_sec: int | None  # when it moves to https, if it does
    https_default: bool
    charset: str
    declare_charset: bool  # a <meta> charset (and usually a Content-Type charset)
    upper: bool  # HTML 4 in upper case, with unclosed <li> and <p>
    quote: str  # attribute quoting: ", ' or none where HTML allows it
    dated_footer: bool  # "Last modified: ..." changes with every version
    image_map: bool  # the homepage photo carries an <area> image map


def draw_author(
    rng: np.random.Generator, index: int, prev: Author | None, used: set[tuple[str, str]]
) -> Author:
    """Author ``index``; ``prev`` is the author before, ``used`` the (host, user) pairs taken."""
    first = FIRST_NAMES[int(rng.integers(len(FIRST_NAMES)))]
    last = LAST_NAMES[int(rng.integers(len(LAST_NAMES)))]
    uni = UNIVERSITIES[int(rng.integers(len(UNIVERSITIES)))]
    dept = DEPARTMENTS[int(rng.integers(len(DEPARTMENTS)))]
    comma = rng.random() < 0.06
    if prev is not None and index % 10 == 9:
        # A namesake in the previous author's department: same surname and initial, so the
        # department numbers the user name, which then extends theirs (~jsmith, ~jsmith2): a
        # prefix query for ~prev also returns this site (DESIGN.md: "~barx is not under ~bar").
        # The names drawn above and one more draw (a suffix letter, once) are spent all the
        # same, so that the rest of the site's world is drawn as before.
        rng.integers(4)
        first, last = _namesake(prev.first, first), prev.last
        host = prev.host
        base_user = prev.user
        user, n = f"{base_user}2", 2
    else:
        host = f"{dept}.{uni}.edu"
        base_user = user_name(first, last)
        user, n = base_user, 1
    name = f"{last}, {first}" if comma else f"{first} {last}"
    while (host, user) in used:
        n += 1
        user = f"{base_user}{n}"
    used.add((host, user))
    count = int(rng.integers(1, 4))
    tags = tuple(sorted({TOPICS[int(i)] for i in rng.choice(len(TOPICS), count, False)}))
    ip = f"128.{10 + stable_hash(host) % 200}.{index % 250}.{1 + index % 200}"
    server = SERVERS[int(rng.integers(len(SERVERS)))]
    return Author(index, first, last, name, host, user, uni, tags, ip, server)


def user_name(first: str, last: str) -> str:
    """The ``~user`` directory a department gives an author: first initial and surname, folded
    to ASCII and lower case (Jürgen Peters is ``~jpeters``); a namesake's gets a number."""
    return ascii_fold(first[0] + last).lower()


def _namesake(first: str, drawn: str) -> str:
    """A first name with the same initial as ``first``, chosen by ``drawn`` (the name the
    random stream gave); ``first`` itself when no other name shares its initial."""
    others = [n for n in FIRST_NAMES if n[0] == first[0] and n != first]
    return others[FIRST_NAMES.index(drawn) % len(others)] if others else first


def draw_style(rng: np.random.Generator, total_sec: int) -> Style:
    """The site's style; a third of sites move to https between 15% and 85% of the span."""
    www = bool(rng.random() < 0.6)
    migrate_sec = int(rng.uniform(0.15, 0.85) * total_sec) if rng.random() < 0.35 else None
    return Style(
        www=www,
        migrate_sec=migrate_sec,
        https_default=bool(rng.random() < 0.15),
        charset="iso-8859-1" if rng.random() < 0.25 else "utf-8",
        declare_charset=bool(rng.random() < 0.9),
        upper=bool(rng.random() < 0.2),
        quote=('"', '"', '"', "'", "")[int(rng.integers(5))],
        dated_footer=bool(rng.random() < 0.6),
        image_map=bool(rng.random() < 0.4),
    )


def draw_seed_url(rng: np.random.Generator, author: Author, style: Style) -> str:
    """The homepage as the librarian's seed list writes it: usually as the site does, but
    sometimes with another scheme or host form, ``index.html`` or no trailing slash."""
    seed_style = int(rng.choice(5, p=[0.45, 0.2, 0.15, 0.1, 0.1]))
    scheme = "https" if style.https_default else "http"
    www = "www." if style.www else ""
    host, user = author.host, author.user
    return [
        f"{scheme}://{www}{host}/~{user}/",
        f"https://{host}/~{user}/",
        f"http://{www}{host}/~{user}/index.html",
        f"http://{www}{host}/~{user}",
        f"http://{host}/~{user}/",
    ][seed_style]
