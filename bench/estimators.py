"""Benchmark: vectorised ``estimate_many`` against a plain per-site loop calling Brent's method.

Run from the project root::

    .venv/bin/python -m bench.estimators [--sites N] [--seed S] [--repeat R]

Builds N synthetic sites (about 40 observations each, Poisson updates with log-normal rates of
median interval 110 days, bursty capture times rounded to whole seconds as in CDX timestamps),
then times ``estimate_many(method="observed")`` and a straightforward Python loop that builds
each site's intervals and calls ``scipy.optimize.brentq`` (the edge cases n = 0, m = 0 and m = n
handled as DESIGN.md rule 5 says). Prints sites/second for both, the speed ratio and the largest
relative difference between the two rates over every site. Goal: ≥ 20× at 1e-9 agreement.
Each contender runs R times (default 3) and its best time counts, as with ``timeit``: the
machine is shared, and the minimum is the least disturbed measurement of either.
"""

from __future__ import annotations

import math
import time

import numpy as np
from numpy.typing import NDArray
from scipy.optimize import brentq

from bench.common import bench_parser
from hacs.estimators import estimate_many

MEDIAN_INTERVAL_DAYS = 110.0


def synthetic_sites(
    n_sites: int, seed: int
) -> tuple[NDArray[np.float64], NDArray[np.bool_], NDArray[np.int64]]:
    """Flat (times, updated, offsets) for ``n_sites`` simulated sites."""
    times, updated, offsets, _rates = synthetic_sites_with_rates(n_sites, seed)
    return times, updated, offsets


def synthetic_sites_with_rates(
    n_sites: int, seed: int
) -> tuple[NDArray[np.float64], NDArray[np.bool_], NDArray[np.int64], NDArray[np.float64]]:
    """:func:`synthetic_sites` and each site's true rate per day."""
    rng = np.random.default_rng(seed)
    counts = rng.integers(30, 51, size=n_sites)  # 30..50 observations, about 40
    offsets = np.zeros(n_sites + 1, dtype=np.int64)
    np.cumsum(counts, out=offsets[1:])
    size = int(offsets[-1])
    site = np.repeat(np.arange(n_sites), counts)
    first = np.zeros(size, dtype=np.bool_)
    first[offsets[:-1]] = True

    # Bursty captures: a third of the gaps are a burst (minutes to a day), the rest are long
    # (exponential, mean 45 days), as in the irregular Wayback capture histories of Fig. 3.
    gaps = np.where(
        rng.random(size) < 1 / 3, rng.exponential(0.3, size), rng.exponential(45.0, size)
    )
    gaps[first] = rng.uniform(0, 365, n_sites)  # each site starts somewhere in its first year
    times = np.cumsum(gaps)
    times -= np.repeat(times[offsets[:-1]] - gaps[first], counts)
    # Whole seconds, as in CDX timestamps: some bursts collapse to one instant. Rounding is
    # monotone, so each site stays sorted.
    times = np.round(times * 86400) / 86400

    # An update is observed when at least one Poisson event fell in the interval since the
    # previous access: probability 1 − exp(−λ Δt).
    rate = np.exp(rng.normal(math.log(1 / MEDIAN_INTERVAL_DAYS), 1.0, n_sites))
    dt = np.diff(times, prepend=0.0)
    dt[first] = 0.0
    updated = rng.random(size) < -np.expm1(-rate[site] * dt)
    updated[first] = False
    return times, updated, offsets, rate


def loop_rates(
    times: NDArray[np.float64], updated: NDArray[np.bool_], offsets: NDArray[np.int64]
) -> NDArray[np.float64]:
    """The plain way: per site, build intervals in Python and call ``brentq`` on Eq. 5."""
    t_all = times.tolist()
    u_all = updated.tolist()
    off = offsets.tolist()
    out = [math.nan] * (len(off) - 1)

    def eq5(lam: float, changed: list[float], unchanged_sum: float) -> float:
        total = 0.0
        for tc in changed:
            x = lam * tc
            total += tc / math.expm1(x) if x < 700.0 else 0.0
        return total - unchanged_sum

    for i in range(len(off) - 1):
        a, b = off[i], off[i + 1]
        # Observations at one instant are one access, an update if any is.
        inst: list[float] = []
        flag: list[bool] = []
        for k in range(a, b):
            if inst and t_all[k] == inst[-1]:
                flag[-1] = flag[-1] or u_all[k]
            else:
                inst.append(t_all[k])
                flag.append(u_all[k])
        changed: list[float] = []
        unchanged_sum = 0.0
        for k in range(1, len(inst)):
            dt = inst[k] - inst[k - 1]
            if flag[k]:
                changed.append(dt)
            else:
                unchanged_sum += dt
        n = len(inst) - 1
        m = len(changed)
        if n == 0:
            continue
        if m == 0:
            out[i] = 0.0
        elif m == n:
            out[i] = -math.log((n - m + 0.5) / (n + 0.5)) * n / sum(changed)
        else:
            changed_sum = sum(changed)
            lo = 0.5 * m / (unchanged_sum + 0.5 * changed_sum)
            hi = 2.0 * m / unchanged_sum
            out[i] = brentq(eq5, lo, hi, args=(changed, unchanged_sum), xtol=lo * 1e-13, rtol=1e-13)
    return np.array(out)


def _timed_estimates(
    times: np.ndarray, updated: np.ndarray, offsets: np.ndarray, repeat: int
) -> tuple[np.ndarray, np.ndarray, tuple[float, float, float]]:
    """The observed rates by ``estimate_many`` and by the brentq loop, and the best of
    ``repeat`` seconds of each, and of the interpolated ``estimate_many``."""
    fast_seconds = slow_seconds = interpolated_seconds = math.inf
    for _ in range(repeat):
        start = time.perf_counter()
        fast = estimate_many(times, updated, offsets, method="observed").rate
        fast_seconds = min(fast_seconds, time.perf_counter() - start)
        start = time.perf_counter()
        estimate_many(times, updated, offsets, method="interpolated")
        interpolated_seconds = min(interpolated_seconds, time.perf_counter() - start)
        start = time.perf_counter()
        slow = loop_rates(times, updated, offsets)
        slow_seconds = min(slow_seconds, time.perf_counter() - start)
    return fast, slow, (fast_seconds, slow_seconds, interpolated_seconds)


def main() -> None:
    parser = bench_parser(__doc__, sites=1_000_000, seed=20240601, demo=False)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()

    start = time.perf_counter()
    times, updated, offsets = synthetic_sites(args.sites, args.seed)
    print(
        f"built {args.sites:,} sites (seed {args.seed}), {times.size:,} observations, "
        f"{int(updated.sum()):,} updates in {time.perf_counter() - start:.1f} s"
    )

    fast, slow, seconds = _timed_estimates(times, updated, offsets, args.repeat)
    fast_seconds, slow_seconds, interpolated_seconds = seconds

    same_nan = np.array_equal(np.isnan(fast), np.isnan(slow))
    known = ~np.isnan(slow)
    both = known & (slow != 0)
    rel = np.abs(fast[both] - slow[both]) / np.abs(slow[both])
    worst = float(rel.max()) if rel.size else 0.0
    zeros_agree = bool(np.all(fast[known & (slow == 0)] == 0))

    best = f"best of {args.repeat}"
    print(
        f"estimate_many : {args.sites / fast_seconds:12,.0f} sites/s ({fast_seconds:.2f} s, {best})"
    )
    print(
        f"brentq loop   : {args.sites / slow_seconds:12,.0f} sites/s ({slow_seconds:.2f} s, {best})"
    )
    print(f"speed ratio   : {slow_seconds / fast_seconds:.1f}x")
    print(
        f"(interpolated : {args.sites / interpolated_seconds:12,.0f} sites/s "
        f"({interpolated_seconds:.2f} s, {best}), for reference)"
    )
    print(f"max rel diff  : {worst:.3e} over {int(both.sum()):,} sites with a positive rate")
    print(f"NaN/zero agree: {same_nan and zeros_agree}")
    kinds = {
        "unknown": int((~known).sum()),
        "zero": int((known & (slow == 0)).sum()),
        "positive": int(both.sum()),
    }
    print("rates         : " + ", ".join(f"{k} {v:,}" for k, v in kinds.items()))


if __name__ == "__main__":
    main()
