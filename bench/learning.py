"""Benchmark: learning the GP4C score function and the LWS regression, their cost at scale and
their test figures.

Run from the project root::

    .venv/bin/python -m bench.learning                 # cost at 2,000 and 20,000 sites
    .venv/bin/python -m bench.learning --sites 20000   # one size
    .venv/bin/python -m bench.learning --demo [--sites 1200] [--seed 0]

**Cost.** On the synthetic collection of ``bench.evaluation`` (bursty captures, Poisson
changes; the paper's three years, 2015-06-01 … 2018-06-01), learns at homepage level over the
first half of the period: GP4C (windows of 12 weeks, 5 % budget, NDCG fitness, the default
generations and population) and LWS (samples every 7 days), and prints the wall and CPU time
of each and the peak resident set size. Each size runs in a fresh process, so each peak is its
own. Goal: under 10 minutes and 4 GiB at 20,000 sites.

**Test figures** (``--demo``). On the demo archive (``hacs_demo``), both levels: learns both on
the first half of the period, then evaluates the second half (``hacs.evaluation.evaluate``,
w = 12 weeks, budget 5 %) with them as models, and prints NDCG@k, ChangeRate@k and weighted
P@K of GP4C, LWS, each terminal alone (GP4C's scorers and HACS's λ and p), HACS's models,
Last-Obs and Random. Same seed, same figures.
"""

from __future__ import annotations

import os
import resource
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

from bench.common import (
    END_DAYS,
    ROOT,
    START,
    START_DAYS,
    argument_parser,
    demo_archive,
    demo_tables,
)
from bench.evaluation import synthetic_collection
from hacs.evaluation import TERMINALS, ObservationTable, evaluate
from hacs.learning import lws
from hacs.learning.gp4c import learn_gp4c

W_WEEKS = 12
BUDGET = 0.05


class MemoryWatch:
    """The largest resident memory of this process and its scoring processes together,
    sampled every half second from /proc (Linux). ``ru_maxrss`` cannot give it: a spawned
    process's peak counts the parent's pages it held for an instant before starting afresh."""

    def __init__(self) -> None:
        self.peak = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> MemoryWatch:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def _run(self) -> None:
        while not self._stop.wait(0.5):
            self.peak = max(self.peak, sum(_rss(pid) for pid in [os.getpid(), *_children()]))


def _children() -> list[int]:
    found = []
    for task in Path(f"/proc/{os.getpid()}/task").iterdir():
        text = (task / "children").read_text() if (task / "children").exists() else ""
        found += [int(pid) for pid in text.split()]
    return found


def _rss(pid: int) -> int:
    """Resident bytes of a process (0 when it has ended)."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def cost(sites: int, seed: int, generations: int | None, population: int | None) -> None:
    began = time.perf_counter()
    tables = synthetic_collection(sites, seed)
    print(
        f"{sites:,} sites, seed {seed}: built the collection in "
        f"{time.perf_counter() - began:.1f} s "
        f"({tables['homepage'].size:,} homepage observations)"
    )
    options = _learn_options(generations, population)
    mid = START_DAYS + (END_DAYS - START_DAYS) / 2
    wall, cpu = time.perf_counter(), time.process_time()
    with MemoryWatch() as memory:
        result = learn_gp4c(
            tables["homepage"], start=START_DAYS, end=mid, w_weeks=W_WEEKS, seed=seed, **options
        )
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    generations = len(result.best_per_generation) - 1
    print(
        f"  GP4C learned in {wall:.1f} s (CPU {cpu:.1f} s here, {children.ru_utime:.1f} s in "
        f"scoring processes), {result.evaluations:,} distinct functions over {generations} "
        f"generations; peak memory {memory.peak / 1024**3:.2f} GiB, this process and its "
        "scoring processes together"
    )
    print(
        f"  training NDCG@5% {result.training_fitness:.4f}, validation "
        f"{result.validation_fitness:.4f}: {result.function.formula}"
    )
    wall, cpu = time.perf_counter(), time.process_time()
    model = learn_lws(tables["homepage"], START_DAYS, mid, seed)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024**2
    r2 = model.held_out_r2
    print(
        f"  LWS learned in {wall:.1f} s (CPU {cpu:.1f} s) on {model.samples:,} samples; "
        f"peak RSS so far {peak:.2f} GiB; R² on held-out sites {r2:.3f}"
    )


def learn_lws(table: ObservationTable, start: float, end: float, seed: int) -> lws.LwsModel:
    """LWS on the table's timelines, samples every 7 days of [start, end]."""
    found = lws.table_timelines(table)
    x, y, site, _ = lws.lws_samples(
        found.times,
        found.flags,
        found.offsets,
        lws.sample_points(start, end),
        horizon_end=end,
        new_links=found.new_links,
        page=found.page,
    )
    return lws.fit_lws(x, y, seed=seed, groups=site, period=(start, end))


def _learn_options(generations: int | None, population: int | None) -> dict[str, int]:
    """GP4C's ``--generations`` and ``--population``, where given."""
    chosen = {"generations": generations, "population": population}
    return {name: value for name, value in chosen.items() if value is not None}


def demo(sites: int, seed: int, generations: int | None, population: int | None) -> None:
    with demo_archive(sites, seed) as demo:
        tables = demo_tables(demo)
    start, end = START_DAYS, END_DAYS
    mid = start + (end - start) / 2
    options = _learn_options(generations, population)
    print(
        f"Demo archive: {sites} sites, seed {seed}; learn on {START} + half, "
        f"test on the second half; windows of {W_WEEKS} weeks, budget {BUDGET:.0%}"
    )
    scorers = {}
    for level, table in tables.items():
        began = time.perf_counter()
        result = learn_gp4c(
            table, start=start, end=mid - 7.0, w_weeks=W_WEEKS, seed=seed, **options
        )
        model = learn_lws(table, start, mid, seed)
        took = time.perf_counter() - began
        print(
            f"\n{level}: learned in {took:.1f} s; GP4C training {result.training_fitness:.4f}, "
            f"validation {result.validation_fitness:.4f}: {result.function.formula}"
        )
        print(f"  LWS on {model.samples:,} samples, R² on held-out sites {model.held_out_r2:.3f}")
        function = result.function
        scorers[level] = {
            "gp4c": lambda t, s, c, f=function: f.score(c),
            "lws": lws.evaluation_scorer(model, table, 7.0),
            **{f"only {name}": (lambda t, s, c, n=name: c[n]) for name in TERMINALS},
        }
    tested = evaluate(tables, start=mid, end=end, w_weeks=[W_WEEKS], scorers=scorers)
    for level in tables:
        _print_tested(tested, level)


#: The models of the test period's table, in its order.
TESTED = [
    "gp4c",
    "lws",
    *(f"only {n}" for n in TERMINALS),
    "posterior",
    "hacs",
    "last_obs",
    "random",
]


def _print_tested(tested: dict[str, Any], level: str) -> None:
    """NDCG@5%, ChangeRate@5% and weighted P@K of each model in the test period."""
    budget = {r["model"]: r for r in tested["budget"] if r["level"] == level}
    pak = {r["model"]: r for r in tested["pak"] if r["level"] == level}
    print(f"\n{level}, test period (second half), w = {W_WEEKS} weeks")
    print(f"  {'model':22} {'NDCG@5%':>8} {'ChangeRate@5%':>14} {'weighted P@K':>13}")
    for name in TESTED:
        row = budget[name]
        print(
            f"  {name:22} {row['ndcg_at_k']:8.4f} {row['change_rate_at_k']:14.4f} "
            f"{pak[name]['weighted_p_at_k']:13.4f}"
        )


def main() -> None:
    parser = argument_parser(__doc__)
    parser.add_argument("--demo", action="store_true", help="test figures on the demo archive")
    parser.add_argument(
        "--sites", type=int, default=None, help="one size (default: 2,000 and 20,000)"
    )
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--generations", type=int, default=None)
    parser.add_argument("--population", type=int, default=None)
    args = parser.parse_args()
    if args.demo:
        demo(args.sites or 1200, args.seed, args.generations, args.population)
        return
    if args.sites is not None:
        cost(args.sites, args.seed, args.generations, args.population)
        return
    for sites in (2_000, 20_000):  # each in its own process: its own peak memory
        command = [
            sys.executable,
            "-m",
            "bench.learning",
            "--sites",
            str(sites),
            "--seed",
            str(args.seed),
        ]
        for flag in ("generations", "population"):
            if getattr(args, flag) is not None:
                command += [f"--{flag}", str(getattr(args, flag))]
        subprocess.run(command, check=True, cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)})


if __name__ == "__main__":
    main()
