"""What a nightly budget can hold at best: the refresh on a model of the paper-scale collection.

Run from the project root: ``.venv/bin/python -m bench.refresh_model [--seed 0]``.

Every query of the collection (``bench.collection``, 20,000 seeds; ``plan_queries`` over its
archived seeds) is one request, captured as a Poisson process at the sum of its seeds' in-scope
page rates, each capture indexed the night it is made with probability 0.6, else 1 + a geometric
number of nights later (mean 3, at most 30: the collection's own lags). 912 requests a night (960
less the audit's share), everything checked at the first import. In expectation (no draws):
a query checked on night n holds what was made and indexed by n. Printed, the share of the new
captures indexed by nights 1, 7, 30 and 90 that each rule holds (all, and the seeds alone on their
host), and the longest wait:

* past 30 days first, then by expected new captures (rate × age), as the shipped job chose before;
* past 30 days first, then by capture-days (rate × age²/2), as ``hacs.refresh_budget.site_price``;
* the most any rule can hold after night 1 or 7: the busiest 912 queries checked on that night,
  the next 912 the night before, and so on (only a query's last check counts, and a later check
  holds more: the rearrangement inequality);
* and what a rule aimed at night 7 holds when it gives the seeds alone a share of the requests
  that way and the busiest host queries the rest every night: how much of all a rule keeps that
  holds half of the lone seeds' captures by then.

The full bench, with the import, the list and the real costs (pages, size questions, audits), is
``bench.nightly_refresh``; these figures are in ``docs/readings.md``.
"""

from __future__ import annotations

import sys

import numpy as np

from bench.collection import Collection, CollectionSpec
from bench.common import argument_parser
from hacs.formats.queries import RefreshSeed, plan_queries

BUDGET, MAX_AGE = 912, 30
SAME_NIGHT, GEOMETRIC, LONGEST = 0.6, 1 / 3, 30


def indexed_sum(nights: np.ndarray) -> np.ndarray:
    """Σ over the nights made m = 1 … n of P(indexed by n): what a check on night n holds, a unit
    rate (n = 0: nothing)."""
    lag = np.arange(200)
    by = SAME_NIGHT + (1 - SAME_NIGHT) * (1 - (1 - GEOMETRIC) ** lag)
    by[LONGEST:] = 1.0
    sums = np.concatenate([[0.0], np.cumsum(by)])
    return np.asarray(sums[np.clip(nights, 0, 199).astype(int)])


def run(rate: np.ndarray, lone: np.ndarray, power: float, nights: int = 90) -> list[str]:
    """Past the max age first, then by rate × age^power; the shares held at the marked nights."""
    last = np.zeros(rate.size)
    marks, longest = [], 0.0
    for night in range(1, nights + 1):
        age = night - last
        due = np.flatnonzero(age >= MAX_AGE)
        due = due[np.argsort(-age[due])][:BUDGET]
        score = rate * age**power
        score[due] = -np.inf
        left = BUDGET - due.size
        picked = np.concatenate([due, np.argpartition(-score, left)[:left]])
        longest = max(longest, float(age[picked].max()))
        last[picked] = night
        if night in (1, 7, 30, 90):
            held, made = rate * indexed_sum(last), rate * indexed_sum(np.full(rate.size, night))
            marks.append(
                f"night {night} {held.sum() / made.sum():.1%} "
                f"(alone {held[lone].sum() / made[lone].sum():.1%})"
            )
    return [*marks, f"longest wait {longest:.0f} d"]


def bound(rate: np.ndarray, night: int) -> float:
    """The busiest queries checked as late as possible before ``night``."""
    order = np.argsort(-rate)
    held = sum(
        float(rate[order[j * BUDGET : (j + 1) * BUDGET]].sum())
        * indexed_sum(np.array([night - j]))[0]
        for j in range(night)
    )
    return held / float(rate.sum() * indexed_sum(np.array([night]))[0])


def split_bound(rate: np.ndarray, lone: np.ndarray, share: float, night: int = 7) -> str:
    """A share of the requests to the seeds alone (as late as possible), the rest to the
    busiest host queries every night."""
    alone, hosts = rate[lone], rate[~lone]
    mine = int(BUDGET * share)
    order = np.argsort(-alone)
    held_alone = sum(
        float(alone[order[j * mine : (j + 1) * mine]].sum()) * indexed_sum(np.array([night - j]))[0]
        for j in range(night)
    )
    held_hosts = (
        float(np.sort(hosts)[::-1][: BUDGET - mine].sum()) * indexed_sum(np.array([night]))[0]
    )
    made = indexed_sum(np.array([night]))[0]
    return (
        f"{share:.0%} of the requests alone: alone {held_alone / (alone.sum() * made):.1%}, "
        f"all {(held_alone + held_hosts) / (rate.sum() * made):.1%}"
    )


def main() -> int:
    parser = argument_parser(__doc__)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    collection = Collection(CollectionSpec(seeds=20_000, seed=args.seed))
    rates, owners, depth = map(
        np.asarray, (collection.rate, collection.page_seed, collection.depth)
    )
    scoped = (owners >= 0) & (depth <= 2)
    seed_rate = np.zeros(len(collection.seeds))
    np.add.at(seed_rate, owners[scoped], rates[scoped])
    archived = [i for i, s in enumerate(collection.seeds) if s.archived]
    queries = plan_queries([RefreshSeed(i, collection.seeds[i].url, "2018") for i in archived])
    rate = np.array([seed_rate[list(q.site_ids)].sum() for q in queries])
    lone = np.array([not q.is_group for q in queries])
    print(
        f"{len(queries):,} queries ({lone.sum():,} of a seed alone, holding "
        f"{rate[lone].sum() / rate.sum():.0%} of the captures), {BUDGET} requests a night "
        f"(seed {args.seed}):"
    )
    for label, power in (("by expected new captures", 1.0), ("by capture-days", 2.0)):
        print(f"  {label}: " + "; ".join(run(rate, lone, power)))
    print(
        f"  the most any rule holds after 1 night {bound(rate, 1):.1%}, after 7 nights "
        f"{bound(rate, 7):.1%}"
    )
    for share in (0.5, 0.6, 0.7):
        print(f"  aimed at night 7, {split_bound(rate, lone, share)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
