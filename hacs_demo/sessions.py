"""When an author adds links to a page: self-exciting editing sessions.

Real authors do not add links as a memoryless process: a new paper goes up, then its slides,
code, arXiv or DOI link a few days later; a term start brings a burst of teaching links; then
months of quiet. The HACS paper sees this in its data -- updates are "near-Poisson ... with
spikes that may represent non-stochastic activities" (Section I; Fig. 6 in Section II-D) -- and
its evaluation finds the *shortest* history window (one week) best, which only pays when a
recent update predicts another one soon. So each HTML page of the demo adds links as a
self-exciting (Hawkes) process with an exponential kernel, in clusters:

* a page has a long-run mean rate λ (drawn in ``hacs_demo.pages``); ``rate_per_day`` in the
  truth is this long-run mean;
* editing sessions open as a Poisson process of rate λ(1 − n); every link added brings
  Poisson(n) follow-up additions to the same page, each an Exponential delay (mean d days)
  later, and follow-ups bring their own, so a session holds 1/(1 − n) additions on average and
  the long-run rate stays λ;
* the author's habits set n and d for all their pages: the branching ratio n is uniform in
  [0.4, 0.7] (sessions of 1.7-3.3 links on average; most single, some of four or more) and d is
  log-normal with median 4 days (σ = 0.4: about 2-9 days), so sessions last days to a few weeks;
* teaching and course pages open 60% of their sessions around a term start (10 January,
  25 August; normal, σ = 7 days) -- a community-wide rhythm, the kind of correlated activity the
  paper suspects behind its spikes;
* sessions open from 180 days before ``start`` on, so the process is stationary over the span.

The intervals between a page's additions are then exponential between sessions with a spike of
short ones inside them: their coefficient of variation is about 1.5-2 (1 for Poisson), and more
than half are shorter than a week where Poisson processes of the same rates would give under one
in ten. About 60% of sessions are a single link, 13% hold four or more. Half of the teaching
links arrive within two weeks of a term start (15% would by chance). Sessions are per page and
independent across pages and sites, apart from the terms. Each add event in the truth names its
``session``; each site its ``update_model`` (n and d).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date

import numpy as np
from numpy.typing import NDArray

BRANCHING_RATIO_RANGE = (0.4, 0.7)  # per author, uniform: 1.7-3.3 links per session on average
FOLLOW_UP_MEDIAN_DAYS = 4.0  # per author, log-normal (sigma 0.4): mean delays of about 2-9 days
FOLLOW_UP_SIGMA = 0.4
TERM_STARTS = ((1, 10), (8, 25))  # (month, day): spring and fall semesters
TERM_SHARE = 0.6  # share of teaching and course sessions that open around a term start
TERM_JITTER_DAYS = 7.0  # standard deviation of a term session's start around the term start
BURN_IN_DAYS = 180.0  # sessions that start this long before ``start`` still spill into it


@dataclass(frozen=True)
class EditingHabits:
    """One author's habits, shared by all their pages: how many follow-up links an addition
    brings on average (``branching``) and how many days later they come (``follow_up_days``)."""

    branching: float
    follow_up_days: float

    @classmethod
    def draw(cls, rng: np.random.Generator) -> EditingHabits:
        branching = float(rng.uniform(*BRANCHING_RATIO_RANGE))
        follow_up_days = float(np.exp(rng.normal(np.log(FOLLOW_UP_MEDIAN_DAYS), FOLLOW_UP_SIGMA)))
        return cls(branching, follow_up_days)


def term_start_days(start: date, end: date) -> NDArray[np.float64]:
    """Term starts as days since ``start``, from ``BURN_IN_DAYS`` before it to ``end``."""
    low, high = -BURN_IN_DAYS, float((end - start).days)
    found = []
    for year in range(start.year - 1, end.year + 1):
        for month, day in TERM_STARTS:
            offset = (date(year, month, day) - start).days
            if low <= offset < high:
                found.append(float(offset))
    return np.asarray(found, dtype=np.float64)


def session_times(
    rng: np.random.Generator,
    *,
    rate: float,
    branching: float,
    follow_up_days: float,
    total_days: float,
    term_days: NDArray[np.float64] | None,
) -> tuple[NDArray[np.float64], NDArray[np.int64]]:
    """One page's link-adding instants in (0, total_days) days, in order, and their sessions.

    A self-exciting (Hawkes) process with an exponential kernel, drawn as its cluster
    representation: sessions open as a Poisson process of rate ``rate * (1 - branching)``;
    every addition brings Poisson(``branching``) follow-ups, each an Exponential(mean
    ``follow_up_days``) delay after it, which bring their own. The long-run mean rate is
    ``rate`` (a session holds 1 / (1 - branching) additions on average). Sessions open from
    ``BURN_IN_DAYS`` before the start on, so the process is stationary over the span; with
    ``term_days``, ``TERM_SHARE`` of them open around a term start instead of uniformly.
    Sessions are numbered 0, 1, ... in the order of their first addition inside the span.
    """
    roots = _session_openings(rng, rate * (1 - branching), total_days, term_days)
    times, sessions = [roots], [np.arange(roots.size)]
    parents, owners = roots, sessions[0]
    while parents.size:
        children = rng.poisson(branching, size=parents.size)
        parents = np.repeat(parents, children) + rng.exponential(
            follow_up_days, size=int(children.sum())
        )
        owners = np.repeat(owners, children)
        times.append(parents)
        sessions.append(owners)
    when, owner = np.concatenate(times), np.concatenate(sessions)
    keep = (when > 0) & (when < total_days)
    order = np.argsort(when[keep], kind="stable")
    when, owner = when[keep][order], owner[keep][order]
    return when, _number_in_order(owner)


def _session_openings(
    rng: np.random.Generator,
    session_rate: float,
    total_days: float,
    term_days: NDArray[np.float64] | None,
) -> NDArray[np.float64]:
    """The instants sessions open, uniform from the burn-in on or, for a share, near terms."""
    span = total_days + BURN_IN_DAYS
    count = int(rng.poisson(session_rate * span))
    roots = rng.uniform(-BURN_IN_DAYS, total_days, size=count)
    if term_days is not None and term_days.size and count:
        aligned = rng.random(count) < TERM_SHARE
        k = int(aligned.sum())
        picks = term_days[rng.integers(term_days.size, size=k)]
        roots[aligned] = picks + rng.normal(0.0, TERM_JITTER_DAYS, size=k)
    return roots


def _number_in_order(owner: NDArray[np.int64]) -> NDArray[np.int64]:
    """Renumber session ids 0, 1, ... in the order of their first appearance in ``owner``."""
    _, first, inverse = np.unique(owner, return_index=True, return_inverse=True)
    number = np.empty(first.size, dtype=np.int64)
    number[np.argsort(first, kind="stable")] = np.arange(first.size)
    return number[inverse.reshape(-1)]
