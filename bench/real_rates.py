"""Rates and intervals on real scholarly homepages: what each site's interval measures, and how
well the rates rank sites beside the ceiling the realised changes set.

Run from the project root::

    .venv/bin/python -m bench.real_rates [--realdata ../shared/realdata] [--seeds 0,1,2,3,4,5]

The sites are those of ``bench.real_loop``: every qualifying homepage (``bench.homepages``) as
four seed sites with their own archive capture schedules (mean gap 15 … 180 days) up to the
seed's start date S. Each site's homepage estimate is read as the crawl list reads it on S:
the observations of the three-year window before S, HACS's default posterior
(``hacs.ranking.default_posterior``: the collection's prior and reset rate fitted on the
sites) and the 90 % interval the site page shows (``hacs.bayes.interval_bounds`` with the
changes' dispersion φ and the reset rate, open when the copies cannot rule out a change a day).

**Coverage.** The rate a site's interval states is the one that predicts a change in the next
gap between its copies: the *pseudo-true* rate at the site's own capture gaps
(``bench.interval_coverage.pseudo_true_rate``), the Poisson rate whose chance of a change
over each gap matches how often the real page changed over gaps of that length. It is read
from the page's true changes over two spans: the window the copies cover (the last three
years before S), and the year after S (the gaps the next copies will span). The bench prints,
by third of sites by capture density (copies a year in the window), the share of sites whose
90 % interval holds each, beside the same for the interval read with rates that never reset
(ρ = 0) and with φ = 1.

**Ranks.** Spearman's ρ of each site's posterior mean rate against the page's true rate (its
link-adding changes a day) over the window and over the year after S, beside the ceiling:
the rate realised in the window, every true change counted, which no reading of the archive
can pass, against the year after.

Same seeds, same figures.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
from scipy.stats import spearmanr

from bench.common import argument_parser
from bench.homepages import REALDATA, read_homepages
from bench.interval_coverage import covers, pseudo_true_rate, thirds
from bench.real_loop import RealWorld, real_world
from hacs.bayes import change_dispersion, interval_bounds, interval_evidence, interval_posterior
from hacs.defaults import HISTORY_DAYS
from hacs.ranking import default_posterior, window_timelines

LEVEL = 0.9
AFTER_DAYS = 365.0  # the year after the start


def site_rows(world: RealWorld) -> dict[str, np.ndarray]:
    """Per site of the world: copies a year, the intervals (three readings), the pseudo-true
    rates and the true rates."""
    t = world.start
    times, flags, offsets = window_timelines(*world.history, t - HISTORY_DAYS, t)
    found = default_posterior(times, flags, offsets)
    evidence = interval_evidence(times, flags, offsets)
    rate = found.alpha / found.beta
    phi = change_dispersion(times, flags, offsets, rate)
    now = interval_bounds(found.prior, evidence, LEVEL, phi, found.reset_rate)
    still_rate = np.divide(*interval_posterior(found.prior, evidence))
    still = interval_bounds(
        found.prior, evidence, LEVEL, change_dispersion(times, flags, offsets, still_rate)
    )
    plain = interval_bounds(found.prior, evidence, LEVEL, 1.0, found.reset_rate)
    window_truth, after_truth, window_rate, after_rate, density = [], [], [], [], []
    for i, changes in enumerate(world.changes):
        own = times[offsets[i] : offsets[i + 1]]
        begin = max(t - HISTORY_DAYS, float(own[0]) if own.size else t)
        gaps = np.diff(own)
        inside = changes[(changes >= begin) & (changes < t)] - begin
        ahead = changes[(changes >= t) & (changes < t + AFTER_DAYS)] - t
        window_truth.append(pseudo_true_rate(inside, gaps, t - begin))
        after_truth.append(pseudo_true_rate(ahead, gaps, AFTER_DAYS))
        window_rate.append(inside.size / max(t - begin, 1.0))
        after_rate.append(ahead.size / AFTER_DAYS)
        density.append(own.size / max((t - begin) / 365.25, 1e-9))
    with np.errstate(divide="ignore"):
        return {
            "density": np.asarray(density),
            "rate": rate,
            "window_rate": np.asarray(window_rate),
            "after_rate": np.asarray(after_rate),
            "window_truth": 1.0 / np.asarray(window_truth),
            "after_truth": 1.0 / np.asarray(after_truth),
            "now_low": now.low,
            "now_high": now.high,
            "open": now.open,
            "still_low": still.low,
            "still_high": still.high,
            "plain_low": plain.low,
            "plain_high": plain.high,
            "phi": np.full(rate.size, phi),
            "reset": np.full(rate.size, found.reset_rate),
        }


def print_coverage(rows: dict[str, np.ndarray]) -> None:
    print(
        "\n90 % intervals of the mean interval holding the pseudo-true interval at the site's "
        "own capture gaps (share of sites)"
    )
    print(
        f"  {'third (copies a year)':34} {'sites':>5} {'open':>5} | {'window: now':>11} "
        f"{'ρ = 0':>6} {'φ = 1':>6} | {'year after: now':>15} {'ρ = 0':>6}"
    )
    everyone = np.ones(rows["rate"].size, dtype=bool)
    for name, mask in [*thirds(rows["density"]), ("all", everyone)]:
        cells = []
        for truth in ("window_truth", "after_truth"):
            known = mask & np.isfinite(rows[truth]) | mask & np.isinf(rows[truth])
            hold = [
                covers(rows[f"{r}_low"][known], rows[f"{r}_high"][known], rows[truth][known])
                for r in ("now", "still", "plain")
            ]
            cells.append([h.mean() if h.size else float("nan") for h in hold])
        print(
            f"  {name:34} {int(mask.sum()):5d} {int(rows['open'][mask].sum()):5d} | "
            f"{cells[0][0]:11.3f} {cells[0][1]:6.3f} {cells[0][2]:6.3f} | "
            f"{cells[1][0]:15.3f} {cells[1][1]:6.3f}"
        )


def print_ranks(rows: dict[str, np.ndarray]) -> None:
    def rho(a: np.ndarray, b: np.ndarray) -> float:
        return float(spearmanr(a, b).statistic)

    print("\nSpearman's ρ of the sites' rates (every site; a homepage's four sites alike)")
    window, after = rho(rows["rate"], rows["window_rate"]), rho(rows["rate"], rows["after_rate"])
    print(f"  HACS's rate against the window's true rate   {window:.3f}")
    print(f"  HACS's rate against the year after           {after:.3f}")
    print(
        f"  ceiling: the window's realised rate, every change counted, against the year after "
        f"{rho(rows['window_rate'], rows['after_rate']):.3f}"
    )


def main() -> int:
    parser = argument_parser(__doc__)
    parser.add_argument("--realdata", type=Path, default=REALDATA)
    parser.add_argument("--seeds", default="0,1,2,3,4,5")
    args = parser.parse_args()
    if not args.realdata.is_dir():
        print(f"{args.realdata} is not here: the real homepage histories live beside the checkout")
        return 1
    homepages = read_homepages(args.realdata)
    parts: list[dict[str, np.ndarray]] = []
    for seed in (int(s) for s in args.seeds.split(",")):
        world = real_world(homepages, seed, int(AFTER_DAYS))
        if world.n_sites == 0:
            print(f"seed {seed}: no homepage qualifies (a year known past the start); left out")
            continue
        rows = site_rows(world)
        parts.append(rows)
        print(
            f"seed {seed}: start day {world.start:.0f}, {world.n_sites} sites of "
            f"{len(world.homepages)} homepages (known a year past the start); prior "
            f"φ {rows['phi'][0]:.2f}, reset rate ρ {rows['reset'][0]:.2e} a day"
        )
    if not parts:
        print("No seed has a qualifying homepage: nothing to measure.")
        return 1
    rows = {key: np.concatenate([p[key] for p in parts]) for key in parts[0]}
    print_coverage(rows)
    print_ranks(rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
