"""Do a site's recent updates predict its next ones, and should the crawl list use them?

Run from the project root::

    .venv/bin/python -m bench.experiments.bursts [--sites 1200] [--seed 0] [--replay-sites 500]
                                                 [--follow 0.5:4,0.3:4] [--skip-evaluation]
                                                 [--skip-replay] [--deflate]
    .venv/bin/python -m bench.experiments.bursts --git-history DIR   # a homepage's history

Authors add links in bursts: a paper, then its slides and code a few days later. HACS's
posterior reads each site's rate as a steady Poisson rate, so a site that changed yesterday is
no likelier to change this week than one that changed a year ago at the same rate. This bench
adds a *follow-up* term to HACS's default p: every update observed brings on average n more
changes, each an Exponential delay of mean d days later (a self-exciting, Hawkes, process), and
the chance of a change since the newest copy, by t + e, becomes

    1 − (β / (β + Δ))^α · exp(−n Σ_u ω_u (e^{−(c − u)/d} − e^{−(t + e − u)/d}))

over the site's updates u (observation times), with c its newest copy and ω_u = d/L (1 − e^{−L/d})
the share of u's follow-ups still to come when it was seen after an interval of L days (the
link went up somewhere in that interval). ``--follow n:d,…`` sets fixed (n, d); the ``fitted``
candidate fits them on the collection by the one-step-ahead likelihood of every interval's
change or no change (d on a grid of 1 … 32 days, n bounded in [0, 5], or [0, 0.99] with
``--deflate``).

It prints Evaluation 2 (mean weighted P@K at homepage level, w = 1 … 12, HACS's default beside
Cho–Garcia-Molina and Last-Obs, and each candidate with its wins over both) and the closed-loop
replay (``hacs.replay``, homepage, 3 × 28 days, budgets 2 % and 5 %, changes found and the
sites listed on more than half the days while changed on fewer of them). The fitted candidate
in Evaluation 2 fits at each reference point on every site's timeline before it.

``--deflate`` reads the posterior's rate as the rate between bursts, (1 − n) times the long-run
rate, as a Hawkes process would, in the fit as in p; by default the follow-ups come on top of
it.

``--git-history DIR`` reads a folder holding ``versions_index.csv`` (``commit_epoch``, ``file``)
and ``index_html_versions.tar.xz`` (one HTML file per commit, under ``versions/``), such as an
author's homepage exported from git, and prints how often a week with a link-adding commit is
followed by another such week, against the share of such weeks. Same seed, same figures.
"""

from __future__ import annotations

import csv
import sys
import tarfile
from collections.abc import Callable
from pathlib import Path

import numpy as np
from numpy.typing import NDArray
from scipy.optimize import minimize_scalar

from bench.common import (
    EVAL_E_DAYS,
    FloatArray,
    Scorer,
    Windows,
    add_evaluation_and_replay_options,
    bench_parser,
    demo_archive,
    demo_tables,
    load,
    pak_windows,
    print_pak,
    read_truth,
    replay_cells,
    replay_totals,
)
from hacs.bayes import fit_interval_prior, interval_evidence, interval_posterior
from hacs.defaults import E_DAYS
from hacs.formats.links import extract_links
from hacs.replay import ReplayState

BoolArray = NDArray[np.bool_]
IntArray = NDArray[np.int64]

D_GRID = (1.0, 2.0, 4.0, 8.0, 16.0, 32.0)
FITTED = "fitted"
DEFLATE = False  # set by --deflate


# The follow-up term ------------------------------------------------------------------------


def _still_to_come(gap: FloatArray, d: float) -> FloatArray:
    """ω: the share of an update's follow-ups after it was seen, its link uniform in the gap."""
    gap = np.maximum(gap, 1e-9)
    result: FloatArray = d / gap * -np.expm1(-gap / d)
    return result


def _layout(offsets: IntArray, size: int) -> tuple[IntArray, BoolArray]:
    owner = np.repeat(np.arange(offsets.size - 1), np.diff(offsets))
    first = np.zeros(size, dtype=bool)
    first[offsets[:-1][np.diff(offsets) > 0]] = True
    return owner, first


def _gaps(times: FloatArray, first: BoolArray) -> FloatArray:
    """Days since the timeline's previous observation; 0 at its first."""
    gap = np.r_[0.0, np.diff(times)]
    gap[first] = 0.0
    return gap


def follow_ups(
    times: FloatArray, flags: BoolArray, offsets: IntArray, copy: FloatArray, until: float, d: float
) -> FloatArray:
    """Σ_u ω_u (e^{−(c − u)/d} − e^{−(until − u)/d}) per site: follow-ups expected in (c, until]
    per unit of n, from every update of the timeline (c the newest copy, after every u)."""
    owner, first = _layout(offsets, times.size)
    gap = _gaps(times, first)
    update = flags & ~first
    u, o = times[update], owner[update]
    weight = _still_to_come(gap[update], d) * (
        np.exp(-(copy[o] - u) / d) - np.exp(-(until - u) / d)
    )
    return np.bincount(o, weight, minlength=offsets.size - 1)


def _scan(decay: FloatArray, add: FloatArray) -> FloatArray:
    """r_k = decay_k r_{k−1} + add_k (r_{−1} = 0), by doubling: no loop over observations."""
    r, a = add.copy(), decay.copy()
    step = 1
    while step < r.size:
        r[step:] = r[step:] + a[step:] * r[:-step]
        a[step:] = a[step:] * a[:-step]
        step *= 2
    return r


def fit_follow_ups(
    times: FloatArray, flags: BoolArray, offsets: IntArray, alpha: FloatArray, beta: FloatArray
) -> tuple[float, float]:
    """(n, d) with the highest one-step-ahead likelihood of every interval's change or no change,
    each interval read from the posterior (α, β) and the follow-ups of the updates before it."""
    owner, first = _layout(offsets, times.size)
    gap = _gaps(times, first)
    inner = ~first
    changed, length, o = flags[inner], gap[inner], owner[inner]
    a_o, b_o = alpha[o], beta[o]
    best: tuple[float, float, float] | None = None
    for d in D_GRID:
        pending = _scan(
            np.where(first, 0.0, np.exp(-gap / d)),
            np.where(flags & ~first, _still_to_come(gap, d), 0.0),
        )
        before_interval = np.r_[0.0, pending[:-1]][inner]
        mass = before_interval * -np.expm1(-length / d)

        def cost(n: float, mass: FloatArray = mass) -> float:
            between = (1.0 - min(n, 1.0)) if DEFLATE else 1.0
            x = a_o * np.log1p(between * length / b_o) + n * mass
            with np.errstate(divide="ignore"):
                log_lik = np.where(changed, np.log(-np.expm1(-x)), -x)
            return -float(np.maximum(log_lik, -700.0).sum())

        top = 0.99 if DEFLATE else 5.0  # a Hawkes process with n ≥ 1 never settles
        found = minimize_scalar(cost, bounds=(0.0, top), method="bounded", options={"xatol": 1e-4})
        if best is None or found.fun < best[0]:
            best = (float(found.fun), float(found.x), d)
    assert best is not None
    return best[1], best[2]


def chance(
    alpha: FloatArray,
    beta: FloatArray,
    copy: FloatArray,
    now: float,
    e: float,
    pending: FloatArray,
    n: float,
) -> FloatArray:
    """p with the follow-up term: 1 − (β / (β + Δ))^α · exp(−n · pending); with ``--deflate``
    the steady rate is the rate between bursts, (1 − n) times the long-run one."""
    delta = np.maximum(now + e - copy, 0.0) * (1.0 - min(n, 1.0) if DEFLATE else 1.0)
    with np.errstate(invalid="ignore", divide="ignore"):
        x = alpha * np.log1p(delta / beta) + n * pending
    result: FloatArray = -np.expm1(-x)
    return result


def candidates(follow: list[tuple[float, float]]) -> list[str]:
    return [FITTED, *(f"n={n:g}, d={d:g}" for n, d in follow)]


# Evaluation 2 ------------------------------------------------------------------------------


class _Fits:
    """(n, d) fitted at each reference point on every timeline before it."""

    def __init__(self, windows: Windows) -> None:
        self.windows = windows
        self.cache: dict[float, tuple[float, float]] = {}

    def at(self, t: float) -> tuple[float, float]:
        if t not in self.cache:
            _, times, flags, offsets, _ = self.windows.timelines(-np.inf, t)
            evidence = interval_evidence(times, flags, offsets)
            alpha, beta = interval_posterior(fit_interval_prior(evidence), evidence)
            self.cache[t] = fit_follow_ups(times, flags, offsets, alpha, beta)
        return self.cache[t]


def evaluation_2(table: object, follow: list[tuple[float, float]]) -> None:
    windows = Windows(table)  # type: ignore[arg-type]
    fits = _Fits(windows)
    names = candidates(follow)

    def scorer(name: str, w: int) -> Scorer:
        def score(t: float, sites: np.ndarray, _columns: object) -> FloatArray:
            owner, times, flags, offsets, last = windows.timelines(t - 7.0 * w, t)
            evidence = interval_evidence(times, flags, offsets)
            alpha, beta = interval_posterior(windows.hacs_prior(t), evidence)
            n, d = fits.at(t) if name == FITTED else follow[names.index(name) - 1]
            pending = follow_ups(times, flags, offsets, last, t + EVAL_E_DAYS, d)
            row = np.searchsorted(owner, sites)
            return chance(alpha[row], beta[row], last[row], t, EVAL_E_DAYS, pending[row], n)

        return score

    rows = pak_windows(table, lambda w: {name: scorer(name, w) for name in names})  # type: ignore[arg-type]
    fitted = np.array(list(fits.cache.values()))
    print_pak(rows, "HACS (default)",
              f"fitted at {len(fitted)} reference points: n {fitted[:, 0].min():.2f} … "
              f"{fitted[:, 0].max():.2f} (median {np.median(fitted[:, 0]):.2f}), "
              f"d {sorted(set(fitted[:, 1].tolist()))} days")  # fmt: skip


# Replay ------------------------------------------------------------------------------------


def replay_policy(
    name: str, follow: list[tuple[float, float]]
) -> Callable[[ReplayState], FloatArray]:
    names = candidates(follow)
    fitted: list[tuple[float, float]] = []

    def policy(state: ReplayState) -> FloatArray:
        times, flags, offsets = state.arrays()
        evidence = interval_evidence(times, flags, offsets)
        alpha, beta = interval_posterior(fit_interval_prior(evidence), evidence)
        if name == FITTED:
            fitted.append(fit_follow_ups(times, flags, offsets, alpha, beta))
            n, d = fitted[-1]
        else:
            n, d = follow[names.index(name) - 1]
        held = np.isfinite(state.last_copy)
        copy = np.where(held, state.last_copy, state.now)
        pending = follow_ups(times, flags, offsets, copy, state.now + state.e_days, d)
        p = chance(alpha, beta, copy, state.now, state.e_days, pending, n)
        return np.where(held, p, 1.0)

    policy.fitted = fitted  # type: ignore[attr-defined]
    return policy


def closed_loop(
    sites: int, seed: int, follow: list[tuple[float, float]], *, bursts: bool = True
) -> None:
    with demo_archive(sites, seed, bursts=bursts) as demo:
        observed, changes, rates = load(read_truth(demo), "homepage")
    print(f"\nReplay: {sites} sites, seed {seed}, 3 × 28 days, e = {E_DAYS:g} "
          "(changes found / crawls, overlisted sites)")  # fmt: skip
    for share in (0.02, 0.05):
        budget = max(1, round(share * sites))
        extra = {name: replay_policy(name, follow) for name in candidates(follow)}
        totals = replay_totals(observed, changes, rates, seed=seed, budget=budget, extra=extra)
        fits = np.array(extra[FITTED].fitted)  # type: ignore[attr-defined]
        print(f"  budget {share:.0%}: " + replay_cells(totals, "HACS (default)"))
        print(f"    fitted each day: n {fits[:, 0].min():.2f} … {fits[:, 0].max():.2f}, "
              f"d {sorted(set(fits[:, 1].tolist()))} days")  # fmt: skip


# A real homepage's history -----------------------------------------------------------------


def git_history(folder: Path) -> None:
    """Weeks with a link-adding commit, and how often the next week has one too."""
    with open(folder / "versions_index.csv", newline="", encoding="utf-8") as handle:
        rows = sorted(csv.DictReader(handle), key=lambda row: int(row["commit_epoch"]))
    with tarfile.open(folder / "index_html_versions.tar.xz") as archive:
        bodies = {
            Path(member.name).name: archive.extractfile(member).read()  # type: ignore[union-attr]
            for member in archive.getmembers()
            if member.isfile()
        }
    seen: set[str] = set()
    days: list[float] = []
    for i, row in enumerate(rows):
        links = extract_links(bodies[row["file"]], "https://homepage.example/")
        if i and links - seen:
            days.append(int(row["commit_epoch"]) / 86400.0)
        seen |= links
    week = np.floor((np.array(days) - days[0]) / 7.0).astype(np.int64)
    active = np.bincount(week) > 0
    follow = (active[:-1] & active[1:]).sum() / max(1, active[:-1].sum())
    print(f"{folder.name}: {len(rows)} versions, {len(days)} add a link, over {active.size} weeks")
    print(f"  share of weeks with a new link {active.mean():.2f}; "
          f"after such a week, the next has one {follow:.2f}")  # fmt: skip


def main() -> int:
    parser = bench_parser(__doc__, sites=1200)
    add_evaluation_and_replay_options(parser)
    parser.add_argument("--follow", default="0.5:4,0.3:4", help="fixed n:d pairs, comma-separated")
    parser.add_argument("--deflate", action="store_true", help="steady rate × (1 − n)")
    parser.add_argument("--git-history", type=Path, action="append", default=[])
    args = parser.parse_args()
    if args.git_history:
        for folder in args.git_history:
            git_history(folder)
        return 0
    global DEFLATE
    DEFLATE = args.deflate
    follow = [(float(n), float(d)) for n, d in (pair.split(":") for pair in args.follow.split(","))]
    if not args.skip_evaluation:
        with demo_archive(args.sites, args.seed, bursts=not args.no_bursts) as demo:
            tables = demo_tables(demo)
        print(f"Demo archive: {args.sites} sites, seed {args.seed}, homepage level")
        evaluation_2(tables["homepage"], follow)
    if not args.skip_replay:
        closed_loop(args.replay_sites, args.seed, follow, bursts=not args.no_bursts)
    return 0


if __name__ == "__main__":
    sys.exit(main())
