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
from dataclasses import dataclass
from typing import Any

import numpy as np

from bench.collection import Collection, CollectionSpec
from bench.common import argument_parser
from hacs.formats.queries import RefreshSeed, plan_queries

BUDGET, MAX_AGE = 912, 30
SAME_NIGHT, GEOMETRIC, LONGEST = 0.6, 1 / 3, 30
GOAL_ALL, GOAL_LONE, GOAL_NIGHT = 0.75, 0.50, 7


@dataclass(frozen=True)
class Model:
    """The queries' capture rates (a day), which of them are a seed alone, the budget."""

    rate: np.ndarray
    lone: np.ndarray
    budget: int = BUDGET

    def at(self, budget: int) -> Model:
        return Model(self.rate, self.lone, budget)


def indexed_cdf() -> np.ndarray:
    """P(a capture is indexed within ``lag`` nights of the night it is made), lag = 0 … 199:
    the collection's lags (``bench.collection``: 0.6 the same night, else 1 + a geometric
    number of nights, mean 3, at most 30)."""
    lag = np.arange(200)
    by = SAME_NIGHT + (1 - SAME_NIGHT) * (1 - (1 - GEOMETRIC) ** lag)
    by[LONGEST:] = 1.0
    return by


def indexed_sum(nights: np.ndarray) -> np.ndarray:
    """Σ over the nights made m = 1 … n of P(indexed by n): what a check on night n holds, a unit
    rate (n = 0: nothing)."""
    sums = np.concatenate([[0.0], np.cumsum(indexed_cdf())])
    return np.asarray(sums[np.clip(nights, 0, 199).astype(int)])


def run(model: Model, power: float, nights: int = 90) -> list[str]:
    """Past the max age first, then by rate × age^power: the shares held on the marked nights
    of the run, the shares held 1, 7 and 30 nights after the archive indexed them, the longest
    wait."""
    rate, budget = model.rate, model.budget
    last = np.zeros(rate.size)
    checks = np.zeros((nights + 1, rate.size), dtype=bool)
    marks, longest = [], 0.0
    for night in range(1, nights + 1):
        age = night - last
        due = np.flatnonzero(age >= MAX_AGE)
        due = due[np.argsort(-age[due])][:budget]
        score = rate * age**power
        score[due] = -np.inf
        left = budget - due.size
        picked = np.concatenate([due, np.argpartition(-score, left)[:left]])
        longest = max(longest, float(age[picked].max()))
        last[picked] = night
        checks[night, picked] = True
        if night in (1, 7, 30, 90):
            held, made = rate * indexed_sum(last), rate * indexed_sum(np.full(rate.size, night))
            marks.append(
                f"night {night} {held.sum() / made.sum():.1%} "
                f"(alone {held[model.lone].sum() / made[model.lone].sum():.1%})"
            )
    after = [_after_visible(model, checks, n) for n in (1, 7, 30)]
    return [
        *marks,
        f"longest wait {longest:.0f} d",
        "after indexed 1 / 7 / 30: " + " / ".join(after),
    ]


def _after_visible(model: Model, checks: np.ndarray, n: int) -> str:
    """The share of the captures indexed on a night v (v + n − 1 within the run) that a check
    of nights v … v + n − 1 holds: each night's visible captures weigh rate × P(a capture made
    on a night 1 … v is indexed on v)."""
    nights = checks.shape[0] - 1
    visible = np.diff(np.concatenate([[0.0], indexed_sum(np.arange(1, nights + 1))]))
    held = total = lone_held = lone_total = 0.0
    for v in range(1, nights - n + 2):
        covered = checks[v : v + n].any(axis=0)
        weight = model.rate * visible[v - 1]
        held += float(weight[covered].sum())
        total += float(weight.sum())
        lone_held += float(weight[covered & model.lone].sum())
        lone_total += float(weight[model.lone].sum())
    return f"{held / total:.1%} (alone {lone_held / lone_total:.1%})"


def bound(model: Model, night: int) -> float:
    """The busiest queries checked as late as possible before ``night``."""
    rate, budget = model.rate, model.budget
    order = np.argsort(-rate)
    held = sum(
        float(rate[order[j * budget : (j + 1) * budget]].sum())
        * indexed_sum(np.array([night - j]))[0]
        for j in range(night)
    )
    return float(held / (rate.sum() * indexed_sum(np.array([night]))[0]))


def split_bound(model: Model, share: float, night: int = GOAL_NIGHT) -> tuple[float, float]:
    """A share of the requests to the seeds alone (as late as possible), the rest to the
    busiest host queries every night: the shares held on ``night`` (alone, all)."""
    alone, hosts = model.rate[model.lone], model.rate[~model.lone]
    mine = int(model.budget * share)
    order = np.argsort(-alone)
    held_alone = sum(
        float(alone[order[j * mine : (j + 1) * mine]].sum()) * indexed_sum(np.array([night - j]))[0]
        for j in range(night)
    )
    held_hosts = (
        float(np.sort(hosts)[::-1][: model.budget - mine].sum()) * indexed_sum(np.array([night]))[0]
    )
    made = indexed_sum(np.array([night]))[0]
    return held_alone / (alone.sum() * made), (held_alone + held_hosts) / (model.rate.sum() * made)


def visible_bound(model: Model, n: int = GOAL_NIGHT) -> tuple[float, float]:
    """The most a steady schedule holds ``n`` nights after the archive indexed a capture, with
    half the seeds alone's captures held if it can (alone, all): a query checked every n nights
    holds all its captures, one checked every ``MAX_AGE`` nights n/``MAX_AGE`` of them; the
    budget pays the max age for every query and then every n nights for as many as it can, the
    busiest lone seeds first until half of theirs are held, then the busiest of all."""
    rate, lone = model.rate, model.lone
    if n >= MAX_AGE:
        return 1.0, 1.0  # the max age checks every query within n nights
    extra = (model.budget - rate.size / MAX_AGE) / (1 / n - 1 / MAX_AGE)
    slots = int(max(0.0, min(rate.size, extra)))
    floor = n / MAX_AGE
    best = (0.0, 0.0)
    for alone_slots in range(0, min(slots, int(lone.sum())) + 1, max(1, slots // 200)):
        fast = _fastest(rate, lone, alone_slots, slots - alone_slots)
        share = np.where(fast, 1.0, floor)
        held_alone = float((rate * share)[lone].sum() / rate[lone].sum())
        held_all = float((rate * share).sum() / rate.sum())
        if (held_alone >= GOAL_LONE) > (best[0] >= GOAL_LONE) or (
            (held_alone >= GOAL_LONE) == (best[0] >= GOAL_LONE) and held_all > best[1]
        ):
            best = (held_alone, held_all)
    return best


def _fastest(rate: np.ndarray, lone: np.ndarray, alone: int, hosts: int) -> np.ndarray:
    """The ``alone`` busiest lone queries and the ``hosts`` busiest others."""
    fast = np.zeros(rate.size, dtype=bool)
    for mask, count in ((lone, alone), (~lone, hosts)):
        index = np.flatnonzero(mask)
        fast[index[np.argsort(-rate[index])][:count]] = True
    return fast


def joint_budget(model: Model, reading: str) -> str:
    """The smallest budget (in steps of 5 % of the model's) at which a rule can hold
    ``GOAL_ALL`` of all the new captures and ``GOAL_LONE`` of the seeds alone's by
    ``GOAL_NIGHT``, read on night 7 of the run or 7 nights after a capture was indexed."""
    for step in range(81):
        budget = round(model.budget * (1 + 0.05 * step))
        trial = model.at(budget)
        if reading == "night":
            pairs = [split_bound(trial, share / 20) for share in range(1, 20)]
        else:
            pairs = [visible_bound(trial)]
        feasible = [p for p in pairs if p[0] >= GOAL_LONE and p[1] >= GOAL_ALL]
        if feasible:
            alone, held = max(feasible, key=lambda p: p[1])
            return f"{budget:,} requests a night (alone {alone:.1%}, all {held:.1%})"
    return f"more than {round(model.budget * 5):,} requests a night"


def _model(args: Any) -> tuple[Model, int]:
    """The collection's queries as the model reads them, and how many seeds it has."""
    spec = CollectionSpec(seeds=args.sites, seed=args.seed)
    if args.as_bench:
        spec = CollectionSpec(
            seeds=args.sites, seed=args.seed, late_share=0.1, late_nights=90, heavy_seeds=3
        )
    collection = Collection(spec)
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
    budget = max(1, round(BUDGET * args.sites / 20_000))
    return Model(rate, lone, budget), len(collection.seeds)


def main() -> int:
    parser = argument_parser(__doc__)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--sites", type=int, default=20_000)
    parser.add_argument(
        "--as-bench", action="store_true", help="bench.nightly_refresh's late and heavy seeds"
    )
    args = parser.parse_args()
    model, seeds = _model(args)
    rate, lone = model.rate, model.lone
    print(
        f"{seeds:,} seeds, {rate.size:,} queries ({lone.sum():,} of a seed alone, holding "
        f"{rate[lone].sum() / rate.sum():.0%} of the captures), {model.budget} requests a night "
        f"(seed {args.seed}):"
    )
    for label, power in (("by expected new captures", 1.0), ("by capture-days", 2.0)):
        print(f"  {label}: " + "; ".join(run(model, power)))
    print(
        f"  the most any rule holds after 1 night {bound(model, 1):.1%}, after 7 nights "
        f"{bound(model, 7):.1%}"
    )
    for share in (0.5, 0.6, 0.7):
        alone, held = split_bound(model, share)
        print(
            f"  aimed at night 7, {share:.0%} of the requests alone: alone {alone:.1%}, "
            f"all {held:.1%}"
        )
    for n in (1, 7, 30):
        alone, held = visible_bound(model, n)
        print(
            f"  {n} nights after indexed, a steady schedule holds at most all {held:.1%} "
            f"with alone {alone:.1%}"
        )
    for reading in ("night", "after"):
        print(
            f"  {GOAL_ALL:.0%} of all and {GOAL_LONE:.0%} of the seeds alone's by "
            f"{'night 7 of the run' if reading == 'night' else '7 nights after indexed'} "
            f"need {joint_budget(model, reading)}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
