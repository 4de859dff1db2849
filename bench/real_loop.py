"""Closed-loop replay on real scholarly homepages: does the daily list find more of the changes
real people make to their pages than the schedules crawl operators already run?

Run from the project root::

    .venv/bin/python -m bench.real_loop [--realdata ../shared/realdata] [--seeds 0,1,2,3,4,5]
                                        [--days 56] [--budgets 0.02,0.05] [--policies …]

The truth is the git history of every homepage under ``--realdata`` (``bench.homepages``: the
times each live page gained a link, commits less than four hours apart merged into one edit).
For each schedule seed:

* **A start date** S, drawn uniformly over 2023-01-01 … 2024-12-31 (printed). A homepage
  *qualifies* when its history began at least a year before S (so that a year of its true
  changes is known) and is known until S + ``--days`` at least; the bench prints those that do
  not, and why.
* **Seed sites.** Each qualifying homepage becomes :data:`SITES_PER_HOMEPAGE` seed sites, each
  with its own archive capture schedule from the homepage's first version up to S: Poisson
  captures (exponential gaps) whose mean gap is drawn log-uniformly in 15 … 180 days. Each
  capture is an observation, flagged as DESIGN rule 3 flags it on the truth (an update when the
  page gained a link since the capture before it; the first is the baseline).
* **The loop** (``hacs.replay``): every day from S for ``--days`` days each policy lists k
  sites, a share of the sites (``--budgets``), crawled at noon UTC with the page live then; each
  crawl finds a change when the page gained a link since the newest copy, and is imported back
  as one more observation. Every policy spends all its k crawls every day.

The policies: HACS's default, computed by the very function the ``crawl_list`` command and the
daily job call (``hacs.ranking.default_probabilities``, through ``hacs.replay``'s ``hacs``
policy: the three-year window before the list's reference instant, the end of its day; a test
holds the service's list and this function's ranking equal), round-robin, random, Nutch adaptive
and ``nutch_fresh`` (``hacs.baselines``), LambdaCrawl on HACS's rates, the *known-rate list*
(each site's true link-adding rate over the year before S, p = 1 − e^{−λ (now + e − copy)}) and
the *oracle*, which knows whether each page changed since its newest copy. ``known_at_copy`` is
the known-rate list as of each site's newest archive copy (its true rate over the year before
that copy): the most a reading of the copies could know exactly, printed as a reference; the
known-rate list's year runs on to S and so counts changes no copy has seen.
``hacs_stationary`` is HACS's list read with rates that never reset (ρ = 0, the default before
rates that reset; ``hacs.ranking.default_probabilities(reset=False)``), the candidate the
default was weighed against (docs/readings.md, "Real scholarly homepages"); ``hacs_sessions``
is the list read with sessions, a hazard that rises after each detected change
(``hacs.sessions``), a candidate measured and not kept; ``hacs_links`` reads how many new links
each copy held (``hacs.link_counts``), a candidate measured and not kept.

It prints, per budget: changes found, yield (changes found per crawl) and mean delay (days from
a change made in the loop to the crawl that caught it) for the 6 seeds pooled, for the second
half of the loop alone (days 28 … 55 of the default 56; days 56 … 111 of ``--days 112``), and
changes found seed by seed, each policy's against HACS's; last, HACS ÷ each peer pooled, whole
loop and second half, each with its 90 % percentile bootstrap interval over the seeds
(:func:`seed_interval`): whether a difference of a few per cent stands out from the spread
between start dates. Same seeds, same figures. A folder under ``--realdata`` that cannot be
read is named with the reason and left out.

Days 28 … 55 of a loop follow from what each list caught in days 0 … 27: a list that caught up
sooner has fewer stale changes left to find. ``--handover-day 28`` weighs the second month on the
same work: every peer takes over on day 28 from HACS's list of days 0 … 27 (the same crawls, the
same timelines), and the tables read days 28 … 55.

A loop longer than 56 days (``--days 112``) also prints each policy's changes found in every
four-week window, pooled, with HACS ÷ the peer there: whether a list's lead or deficit in one
month lasts into the next ones. Only the last window ends the loop: a change a list has not
found by then is lost to it, while one left in an earlier window can still be found in the next.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import date
from pathlib import Path

import numpy as np

from bench.common import argument_parser
from bench.homepages import REALDATA, Homepage, read_homepages
from hacs.clock import day_start, to_days
from hacs.defaults import E_DAYS
from hacs.link_counts import link_count_probabilities
from hacs.ranking import default_probabilities
from hacs.replay import (
    POLICIES,
    Policy,
    PolicyResult,
    ReplayState,
    known_rate_probabilities,
    replay,
)
from hacs.sessions import session_probabilities

FloatArray = np.ndarray

SITES_PER_HOMEPAGE = 4
#: The archive's mean gap between captures of a seed, drawn log-uniformly in this range (days).
CAPTURE_GAP_DAYS = (15.0, 180.0)
#: Start dates are drawn from these years.
FIRST_START, LAST_START = date(2023, 1, 1), date(2024, 12, 31)
#: A homepage qualifies with this much history before the start (days): a year of its truth.
HISTORY_BEFORE = 365.0
#: The policies, in the order printed: HACS's default first, the known-rate list and the oracle
#: last.
BASELINES = ("round_robin", "random", "nutch_adaptive", "nutch_fresh", "lambdacrawl")
KNOWN_RATE, ORACLE = "true_rates", "oracle"
#: The known-rate list as of each site's newest copy (a reference, not a peer to beat).
KNOWN_AT_COPY = "known_at_copy"
#: The candidate the default was weighed against: the same list with rates that never reset.
STATIONARY = "hacs_stationary"
#: The candidate with sessions: a hazard that rises after each detected change (hacs.sessions).
SESSIONS = "hacs_sessions"
#: The candidate that reads how many new links each copy held (hacs.link_counts).
LINKS = "hacs_links"
LABELS = {
    KNOWN_RATE: "known rate",
    KNOWN_AT_COPY: "known at copy",
    ORACLE: "oracle",
    "hacs": "HACS",
    STATIONARY: "HACS ρ=0",
    SESSIONS: "HACS sessions",
    LINKS: "HACS new links",
}


@dataclass(frozen=True)
class RealWorld:
    """One schedule seed's loop: its start day (days since 1970, 00:00 UTC), the qualifying
    homepages, every seed site's history before the start (times, flags, offsets), its true
    change times, its true rate over the year before the start and over the year before its
    newest copy before the start."""

    start: float
    homepages: list[Homepage]
    skipped: list[tuple[str, str]]
    history: tuple[np.ndarray, np.ndarray, np.ndarray]
    changes: list[FloatArray]
    last_year_rate: FloatArray
    capture_gap: FloatArray
    copy_year_rate: FloatArray

    @property
    def n_sites(self) -> int:
        return len(self.changes)


def start_day(seed: int) -> float:
    """The seed's start date, uniform over FIRST_START … LAST_START, in days since 1970."""
    rng = np.random.default_rng([seed, 0])
    span = (LAST_START - FIRST_START).days
    return to_days_of(FIRST_START) + float(rng.integers(0, span + 1))


def to_days_of(day: date) -> float:
    """00:00 UTC of ``day`` in days since 1970."""
    return to_days(day_start(day))  # type: ignore[arg-type]


def real_world(homepages: list[Homepage], seed: int, days: int) -> RealWorld:
    """The seed's world (the module docstring): start date, qualifying homepages, four seed
    sites each with their own capture schedule before the start."""
    start = start_day(seed)
    rng = np.random.default_rng([seed, 1])
    kept, skipped = [], []
    for page in homepages:
        if page.first > start - HISTORY_BEFORE:
            skipped.append((page.name, "history begins less than a year before the start"))
        elif page.known_until < start + days:
            skipped.append((page.name, "history known only until before the loop ends"))
        else:
            kept.append(page)
    times_l, flags_l, offsets, changes, rates, gaps, copy_rates = [], [], [0], [], [], [], []
    low, high = np.log(CAPTURE_GAP_DAYS)
    for page in kept:
        for _ in range(SITES_PER_HOMEPAGE):
            gap = float(np.exp(rng.uniform(low, high)))
            count = int((start - page.first) / gap * 3) + 10
            captures = page.first + np.cumsum(rng.exponential(gap, count))
            captures = captures[captures < start]
            seen = np.searchsorted(page.changes, captures, side="right")
            flags = np.r_[False, np.diff(seen) > 0][: captures.size]
            times_l.append(captures)
            flags_l.append(flags)
            offsets.append(offsets[-1] + captures.size)
            changes.append(page.changes)
            rates.append(year_rate(page.changes, start))
            gaps.append(gap)
            copy_rates.append(year_rate(page.changes, captures[-1] if captures.size else start))
    history = (
        np.concatenate(times_l) if times_l else np.zeros(0),
        np.concatenate(flags_l).astype(bool) if flags_l else np.zeros(0, dtype=bool),
        np.asarray(offsets, dtype=np.int64),
    )
    return RealWorld(
        start,
        kept,
        skipped,
        history,
        changes,
        np.asarray(rates),
        np.asarray(gaps),
        np.asarray(copy_rates),
    )


def year_rate(changes: FloatArray, end: float) -> float:
    """The page's true rate over the year before ``end``: its changes in [end − 365, end), a
    day."""
    return int(np.count_nonzero((changes >= end - 365.0) & (changes < end))) / 365.0


def known_at_copy_policy(copy_year_rate: FloatArray):  # type: ignore[no-untyped-def]
    """The known-rate list as of the newest copy: p = 1 − e^{−λ (now + e − copy)} with λ each
    site's true rate over the year before its newest archive copy before the start, the most
    a reading of the copies could know exactly. The known-rate list's λ reaches to the start,
    and so counts the changes since that copy, which no copy has seen."""

    def known_at_copy(state: ReplayState) -> np.ndarray:
        return known_rate_probabilities(copy_year_rate, state)

    return known_at_copy


def oracle_policy(changes: list[FloatArray]):  # type: ignore[no-untyped-def]
    """The oracle: 1 for a page that changed since its newest copy, else 0 (ties to the older
    copy, as every list breaks them)."""

    def oracle(state: ReplayState) -> np.ndarray:
        changed = [
            np.searchsorted(c, state.now, side="right") > np.searchsorted(c, copy, side="right")
            for c, copy in zip(changes, state.last_copy.tolist(), strict=True)
        ]
        return np.asarray(changed, dtype=np.float64)

    return oracle


def stationary_policy(state: ReplayState) -> np.ndarray:
    """HACS's list read with rates that never reset (ρ = 0): the posterior the default was
    before rates that reset, on the same window and reference instant."""
    times, flags, offsets = state.arrays()
    return default_probabilities(
        times,
        flags,
        offsets,
        t=state.list_instant,
        e=state.e_days,
        history_days=state.history_days,
        reset=False,
    )


def sessions_policy(state: ReplayState) -> np.ndarray:
    """HACS's list read with sessions (``hacs.sessions``): the default's posterior with a
    hazard that rises after each detected change, fitted on the same window each day."""
    times, flags, offsets = state.arrays()
    return session_probabilities(
        times, flags, offsets, t=state.list_instant, e=state.e_days, history_days=state.history_days
    )


def links_policy(world: RealWorld):  # type: ignore[no-untyped-def]
    """HACS's list read with each copy's new links (``hacs.link_counts``): every observation of
    the day's timelines, archive capture or crawl, holds the links of the page live then, and
    counts those no earlier observation of the site held, as HACS stores them."""
    pages = [page for page in world.homepages for _ in range(SITES_PER_HOMEPAGE)]

    def policy(state: ReplayState) -> np.ndarray:
        times, flags, offsets = state.arrays()
        counts = [c for page, t in zip(pages, state.times, strict=True) for c in page.new_links(t)]
        return link_count_probabilities(
            times,
            flags,
            np.asarray(counts, dtype=np.int64),
            offsets,
            t=state.list_instant,
            e=state.e_days,
            history_days=state.history_days,
        )

    return policy


def policy_table(world: RealWorld, policies: list[str]) -> dict[str, Policy]:
    """Every named policy of the loop, as ``hacs.replay`` calls it."""
    built: dict[str, Callable[[], Policy]] = {
        ORACLE: lambda: oracle_policy(world.changes),
        STATIONARY: lambda: stationary_policy,
        SESSIONS: lambda: sessions_policy,
        LINKS: lambda: links_policy(world),
        KNOWN_AT_COPY: lambda: known_at_copy_policy(world.copy_year_rate),
    }
    table: dict[str, Policy] = {}
    for name in policies:
        if name not in POLICIES and name not in built:
            raise ValueError(f"unknown policy {name!r}")
        table[name] = POLICIES[name] if name in POLICIES else built[name]()
    return table


def handed_over(first: Policy, then: Policy, day: int) -> Policy:
    """``first``'s list on the loop's days before ``day``, ``then``'s from it on."""

    def policy(state: ReplayState) -> np.ndarray:
        return first(state) if state.now < state.start + day else then(state)

    return policy


def run_world(
    world: RealWorld,
    *,
    days: int,
    share: float,
    policies: list[str],
    seed: int,
    extra: dict | None = None,
    e_days: float = E_DAYS,
    handover: int | None = None,
) -> dict[str, PolicyResult]:
    """Every policy's loop over one world at one budget share. With ``handover`` every policy
    but HACS's takes over on that day from HACS's list of the days before, so that all of them
    start the rest of the loop from the same crawls."""
    budget = max(1, round(share * world.n_sites))
    more = dict(extra or {})
    table = policy_table(world, [p for p in policies if p not in more])
    table.update(more)
    if handover is not None:
        table = {
            name: policy if name == "hacs" else handed_over(POLICIES["hacs"], policy, handover)
            for name, policy in table.items()
        }
    results = replay(
        history=world.history,
        changes=world.changes,
        start=world.start,
        days=days,
        budget=budget,
        policies=[],
        e_days=e_days,
        true_rates=world.last_year_rate,
        seed=seed,
        extra=table,
    )
    return {r.policy: r for r in results}


def _day_text(day: float) -> str:
    return date.fromordinal(date(1970, 1, 1).toordinal() + int(day)).isoformat()


def print_worlds(worlds: dict[int, RealWorld]) -> None:
    for seed, world in worlds.items():
        gaps = world.capture_gap
        print(
            f"seed {seed}: start {_day_text(world.start)}, {len(world.homepages)} homepages "
            f"qualify → {world.n_sites} seed sites; capture gaps {gaps.min():.0f}–"
            f"{gaps.max():.0f} d (median {np.median(gaps):.0f}); "
            f"{int(np.diff(world.history[2]).sum())} archive captures"
        )
        for name, why in world.skipped:
            print(f"    not qualifying: {name} ({why})")


def print_table(
    rows: dict[int, dict[str, PolicyResult]],
    policies: list[str],
    days: int,
    title: str,
    second: int = 28,
) -> None:
    """Pooled figures over the loop and from day ``second`` on, then each seed's changes
    found."""
    print(f"\n{title}")
    halves = [(f"days 0–{days - 1}", 0, days - 1), (f"days {second}–{days - 1}", second, days - 1)]
    head = f"{'policy':14}" + "".join(
        f"{label + ': found':>20} {'yield':>6} {'delay':>6} {'÷HACS':>6}" for label, *_ in halves
    )
    print(head)
    for name in policies:
        cells = ""
        for _, first, last in halves:
            found = caught = crawls = 0
            delay = 0.0
            hacs = 0
            for by_policy in rows.values():
                f, c, d = by_policy[name].days(first, last)
                found += f
                caught += c
                delay += (d or 0.0) * c
                crawls += (last - first + 1) * (by_policy[name].crawls // days)
                hacs += by_policy["hacs"].days(first, last)[0] if "hacs" in by_policy else 0
            ratio = found / hacs if hacs else float("nan")
            mean_delay = delay / caught if caught else float("nan")
            cells += f"{found:>20} {found / max(crawls, 1):6.3f} {mean_delay:6.1f} {ratio:6.2f}"
        print(f"{LABELS.get(name, name):14}" + cells)
    print(f"changes found by seed (days 0–{days - 1} | days {second}–{days - 1}):")
    print(f"{'policy':14}" + "".join(f"{f'seed {s}':>12}" for s in rows))
    for name in policies:
        print(
            f"{LABELS.get(name, name):14}"
            + "".join(
                f"{f'{r[name].found}|{r[name].days(second, days - 1)[0]}':>12}"
                for r in rows.values()
            )
        )


#: The width of the windows a long loop is read in (days): four weeks, the default loop's half.
WINDOW_DAYS = 28


def windows(days: int, width: int = WINDOW_DAYS) -> list[tuple[int, int]]:
    """The loop's days 0 … days − 1 in windows of ``width`` days (first, last), the last window
    cut short when ``width`` does not divide ``days``."""
    return [(first, min(first + width, days) - 1) for first in range(0, days, width)]


def window_found(
    rows: dict[int, dict[str, PolicyResult]], name: str, days: int, width: int = WINDOW_DAYS
) -> list[int]:
    """Changes ``name`` found in each window of the loop, pooled over the seeds."""
    return [
        sum(by_policy[name].days(first, last)[0] for by_policy in rows.values())
        for first, last in windows(days, width)
    ]


def print_windows(
    rows: dict[int, dict[str, PolicyResult]], policies: list[str], days: int, title: str
) -> None:
    """Changes found in each four-week window, pooled, and HACS ÷ each peer there: whether a
    list's lead or deficit in one month lasts into the next ones."""
    spans = windows(days)
    print(f"\n{title}, by four-week window (changes found pooled; HACS ÷ peer):")
    print(f"{'policy':14}" + "".join(f"{f'days {a}–{b}':>18}" for a, b in spans))
    hacs = window_found(rows, "hacs", days) if "hacs" in policies else None
    for name in policies:
        found = window_found(rows, name, days)
        cells = []
        for i, n in enumerate(found):
            ratio = "" if hacs is None or name == "hacs" or not n else f" ({hacs[i] / n:.3f})"
            cells.append(f"{f'{n}{ratio}':>18}")
        print(f"{LABELS.get(name, name):14}" + "".join(cells))


#: The share of the seed bootstrap's ratios between the interval's bounds, and its draws.
INTERVAL_LEVEL = 0.9
INTERVAL_DRAWS = 4000


def seed_interval(
    hacs: list[int],
    peer: list[int],
    level: float = INTERVAL_LEVEL,
    draws: int = INTERVAL_DRAWS,
    seed: int = 0,
) -> tuple[float, float]:
    """A percentile bootstrap interval over the schedule seeds for HACS ÷ a peer, pooled.

    ``hacs[i]`` and ``peer[i]`` are the changes each list found on seed i, on the same world:
    seeds are drawn with replacement and the two kept together, so that the interval is that of
    the paired ratio of sums, the figure the tables print. With few seeds it is coarse (six seeds
    have 462 distinct resamples), but it says whether a difference of a few per cent stands out
    from the spread between start dates."""
    a = np.asarray(hacs, dtype=np.float64)
    b = np.asarray(peer, dtype=np.float64)
    if a.shape != b.shape or a.size == 0:
        raise ValueError("one figure per seed for both lists")
    picks = np.random.default_rng(seed).integers(0, a.size, size=(draws, a.size))
    top, bottom = a[picks].sum(axis=1), b[picks].sum(axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        ratios = np.where(bottom > 0, top / np.where(bottom > 0, bottom, 1.0), np.inf)
    tail = (1.0 - level) / 2.0
    low, high = np.quantile(ratios, [tail, 1.0 - tail])
    return float(low), float(high)


#: The issue's done-when: HACS ÷ each peer at least this, at each budget, over the whole loop and
#: over its second half. The baselines not named here have no target.
TARGETS = {
    "nutch_adaptive": 1.05,
    "nutch_fresh": 1.05,
    "round_robin": 1.0,
    "random": 1.0,
    "lambdacrawl": 1.0,
    KNOWN_RATE: 1.0,
}
#: The done-when's conditions, each one or more peers: Nutch adaptive, ``nutch_fresh``, every
#: other baseline, the known-rate list.
CONDITIONS = (
    ("Nutch adaptive ≥ 1.05×", ("nutch_adaptive",)),
    ("nutch_fresh ≥ 1.05×", ("nutch_fresh",)),
    ("every other baseline ≥ 1×", ("round_robin", "random", "lambdacrawl")),
    ("known-rate list ≥ 1×", (KNOWN_RATE,)),
)


@dataclass(frozen=True)
class Standing:
    """HACS ÷ one peer over one span at one budget, its interval over the seeds and its target
    (None: no target)."""

    ratio: float
    low: float
    high: float
    target: float | None

    @property
    def met(self) -> bool:
        return self.target is None or self.ratio >= self.target

    @property
    def clearly_missed(self) -> bool:
        """Missed beyond the spread between start dates: the whole interval lies below."""
        return self.target is not None and self.high < self.target


def standings(
    by_seed: dict[int, dict[str, PolicyResult]], name: str, first: int, last: int
) -> Standing:
    """HACS ÷ ``name`` over days first … last, pooled over the seeds, with its interval."""
    hacs = [r["hacs"].days(first, last)[0] for r in by_seed.values()]
    peer = [r[name].days(first, last)[0] for r in by_seed.values()]
    ratio = sum(hacs) / sum(peer) if sum(peer) else float("inf")
    low, high = seed_interval(hacs, peer)
    return Standing(ratio, low, high, TARGETS.get(name))


def print_done_when(
    rows: dict[float, dict[int, dict[str, PolicyResult]]], days: int, second: int = 28
) -> None:
    """HACS's default against every peer, pooled, whole loop and days ``second`` … days − 1,
    each with its 90 % seed bootstrap interval (:func:`seed_interval`) and, where the issue
    sets one, whether it meets its target (✓), misses it (✗) or misses it beyond the spread
    between start dates (✗✗); then the done-when's conditions met (:data:`CONDITIONS`)."""
    print(
        f"\nHACS ÷ each peer, pooled over the seeds (whole loop | days {second}–{days - 1}), "
        f"[{INTERVAL_LEVEL:.0%} interval over the seeds], against the done-when's target:"
    )
    spans = ((0, days - 1), (second, days - 1))
    met, asked, missed = 0, 0, []
    for share, by_seed in rows.items():
        print(f"  {share:.0%}:")
        present = next(iter(by_seed.values()))
        names = [n for n in present if n not in ("hacs", ORACLE)]
        table = {(n, span): standings(by_seed, n, *span) for n in names for span in spans}
        for name in names:
            cells = []
            for span in spans:
                found = table[name, span]
                mark = "" if found.target is None else " ✓" if found.met else " ✗"
                mark += "✗" if found.clearly_missed else ""
                cells.append(f"{found.ratio:.3f} [{found.low:.3f}–{found.high:.3f}]{mark}")
            target = TARGETS.get(name)
            goal = f"(≥ {target:.2f})" if target else ""
            print(f"    {LABELS.get(name, name):14} {goal:8} " + " | ".join(cells))
        for label, peers in CONDITIONS:
            if not all(p in present for p in peers):
                continue
            for span in spans:
                asked += 1
                if all(table[p, span].met for p in peers):
                    met += 1
                else:
                    missed.append(f"{share:.0%} days {span[0]}–{span[1]}: {label}")
    if asked:
        listed = "; ".join(missed) or "none"
        print(f"  done-when conditions met: {met} of {asked}; missed: {listed}")


def main() -> int:
    parser = argument_parser(__doc__)
    parser.add_argument("--realdata", type=Path, default=REALDATA)
    parser.add_argument("--seeds", default="0,1,2,3,4,5")
    parser.add_argument("--days", type=int, default=56)
    parser.add_argument("--budgets", default="0.02,0.05")
    parser.add_argument("--e-days", type=float, default=E_DAYS)
    parser.add_argument(
        "--handover-day",
        type=int,
        default=None,
        help="every peer takes over on this day from HACS's list of the days before",
    )
    parser.add_argument(
        "--policies",
        default=",".join(["hacs", STATIONARY, *BASELINES, KNOWN_RATE, KNOWN_AT_COPY, ORACLE]),
    )
    args = parser.parse_args()
    if args.handover_day is not None and not 0 < args.handover_day < args.days:
        parser.error(f"--handover-day must lie in 1 … {args.days - 1}; got {args.handover_day}")
    if not args.realdata.is_dir():
        print(f"{args.realdata} is not here: the real homepage histories live beside the checkout")
        return 1
    began = time.perf_counter()
    homepages = read_homepages(args.realdata)
    print(
        f"{len(homepages)} homepages read from {args.realdata} in "
        f"{time.perf_counter() - began:.0f} s"
    )
    seeds = [int(s) for s in args.seeds.split(",")]
    policies = args.policies.split(",")
    second = args.days // 2 if args.handover_day is None else args.handover_day
    worlds = {seed: real_world(homepages, seed, args.days) for seed in seeds}
    for seed in [seed for seed, world in worlds.items() if world.n_sites == 0]:
        world = worlds.pop(seed)
        print(
            f"seed {seed}: start {_day_text(world.start)}: none of the {len(homepages)} homepages "
            f"qualifies (a year of history before the start, known {args.days} days after it); "
            "left out"
        )
    if not worlds:
        print("No seed has a qualifying homepage: nothing to replay.")
        return 1
    print_worlds(worlds)
    results: dict[float, dict[int, dict[str, PolicyResult]]] = {}
    for share in (float(b) for b in args.budgets.split(",")):
        results[share] = {}
        for seed, world in worlds.items():
            results[share][seed] = run_world(
                world,
                days=args.days,
                share=share,
                policies=policies,
                seed=seed,
                e_days=args.e_days,
                handover=args.handover_day,
            )
        budgets = sorted({max(1, round(share * w.n_sites)) for w in worlds.values()})
        handover = (
            ""
            if args.handover_day is None
            else f"; every peer from day {args.handover_day} on, after HACS's list before it"
        )
        print_table(
            results[share],
            policies,
            args.days,
            f"Budget {share:.0%} a day ({'/'.join(map(str, budgets))} sites), "
            f"{args.days} days, seeds {args.seeds}{handover}",
            second,
        )
    if args.days > 2 * WINDOW_DAYS:
        for share, by_seed in results.items():
            print_windows(by_seed, policies, args.days, f"Budget {share:.0%} a day")
    print_done_when(results, args.days, second)
    print(f"\n({time.perf_counter() - began:.0f} s in all)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
