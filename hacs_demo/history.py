"""A page's history: what its author did to it, and the versions that came of it.

Every HTML page adds links in editing sessions (``hacs_demo.sessions``), and sometimes removes a
link, re-adds an earlier one, edits text, or (site-wide, once) moves to https -- none of which
is an update by DESIGN.md rule 3, and all of which stay homogeneous Poisson processes (removals
and re-adds at a quarter and 0.15 of the page's adding rate, text edits yearly). They are there
so that HACS's rule 3 is tested against pages whose bytes change without a new link. The CV is
revised every 300 days on average; the photo never changes.
"""

from __future__ import annotations

import bisect

import numpy as np

from hacs_demo.content import ItemWriter
from hacs_demo.model import Event, Page, Version
from hacs_demo.sessions import EditingHabits, session_times
from hacs_demo.span import DAY, Span

REMOVE_SHARE = 0.25  # removals per link-adding event, in the long run
READD_SHARE = 0.15  # re-adds of a removed link per link-adding event
TEXT_EDIT_RATE = 1 / 365  # per day, HTML pages
CV_REVISION_RATE = 1 / 300  # per day
SELECTED_PUBLICATIONS = 8  # the homepage lists this many; the oldest drops off

Draw = tuple[int, str, int]  # (second, kind, session of an add or -1)


def build_history(
    page: Page,
    *,
    rng: np.random.Generator,
    items: ItemWriter,
    span: Span,
    habits: EditingHabits,
    migrate_sec: int | None,
) -> None:
    """Give ``page`` its initial items, its events and the versions they produce."""
    if page.is_html:
        items.initial_items(page, span.start.year)
    draws = _draw_events(page, rng, span, habits, migrate_sec)
    _apply_events(page, draws, rng, items, span)


def _draw_events(
    page: Page, rng: np.random.Generator, span: Span, habits: EditingHabits, migrate_sec: int | None
) -> list[Draw]:
    """When each event happens, in order: at most one a second, none at the start's second 0."""
    total, total_days = span.total_sec, span.total_days
    cosmetic_rate = (
        TEXT_EDIT_RATE if page.is_html else (CV_REVISION_RATE if page.role == "cv" else 0.0)
    )
    draws: list[Draw] = []
    if page.rate > 0:
        terms = span.term_days if span.bursts and page.role in ("teaching", "course") else None
        days, sessions = session_times(
            rng,
            rate=page.rate,
            branching=habits.branching,
            follow_up_days=habits.follow_up_days,
            total_days=total_days,
            term_days=terms,
        )
        draws += [
            (max(1, int(d * DAY)), "add", int(k))
            for d, k in zip(days.tolist(), sessions.tolist(), strict=True)
        ]
    for kind, rate in (
        ("remove", REMOVE_SHARE * page.rate),
        ("readd", READD_SHARE * page.rate),
        ("cosmetic", cosmetic_rate),
    ):
        count = int(rng.poisson(rate * total_days)) if rate > 0 else 0
        draws += [(int(s), kind, -1) for s in rng.integers(1, total, size=count)]
    if migrate_sec is not None and page.is_html:
        draws.append((migrate_sec, "restyle", -1))
    draws.sort()
    last = 0
    for i, (sec, kind, session) in enumerate(draws):
        last = max(sec, last + 1)
        draws[i] = (last, kind, session)
    return [draw for draw in draws if draw[0] < total]


def _apply_events(
    page: Page, draws: list[Draw], rng: np.random.Generator, items: ItemWriter, span: Span
) -> None:
    """Play the events on the page's items; an event that finds nothing to do is dropped."""
    present = sorted(page.items)
    removed: list[int] = []
    cosmetic = 0
    epoch = 0
    page.versions = [Version(0, tuple(present), 0, 0)]
    for sec, kind, session in draws:
        event = Event(sec, kind, session=session)
        if kind == "add":
            _add(page, event, items, span.at(sec).year, present, removed)
        elif kind == "remove":
            if not _remove(page, event, rng, present, removed):
                continue
        elif kind == "readd":
            if not _readd(event, rng, present, removed):
                continue
        elif kind == "cosmetic":
            cosmetic += 1
        else:
            epoch = 1
        page.events.append(event)
        page.versions.append(Version(sec, tuple(present), cosmetic, epoch))
    page.version_secs = [v.sec for v in page.versions]


def _add(
    page: Page, event: Event, items: ItemWriter, year: int, present: list[int], removed: list[int]
) -> None:
    item = items.make_item(page, year)
    page.items[item.id] = item
    present.append(item.id)
    event.added = (item.id,)
    pubs = [i for i in present if page.items[i].is_publication]
    if page.role == "home" and len(pubs) > SELECTED_PUBLICATIONS:
        # "Selected publications": the oldest drops off when a new one arrives.
        present.remove(pubs[0])
        removed.append(pubs[0])
        event.removed = (pubs[0],)


def _remove(
    page: Page, event: Event, rng: np.random.Generator, present: list[int], removed: list[int]
) -> bool:
    """Take one item off the page, never the last one; False if there is nothing to take."""
    choices = [i for i in present if page.items[i].removable]
    if len(choices) < 2:
        return False
    victim = choices[int(rng.integers(len(choices)))]
    present.remove(victim)
    removed.append(victim)
    event.removed = (victim,)
    return True


def _readd(event: Event, rng: np.random.Generator, present: list[int], removed: list[int]) -> bool:
    """Put a removed item back where it was; False if nothing has been removed."""
    if not removed:
        return False
    back = removed.pop(int(rng.integers(len(removed))))
    bisect.insort(present, back)
    event.added = (back,)
    return True
