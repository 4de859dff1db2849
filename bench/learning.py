"""Benchmark: learning the GP4C score function, its cost at scale and its test figures.

Run from the project root::

    .venv/bin/python bench/learning.py                 # cost at 2,000 and 20,000 sites
    .venv/bin/python bench/learning.py --sites 20000   # one size
    .venv/bin/python bench/learning.py --demo [--sites 1200] [--seed 0]

**Cost.** On the synthetic collection of ``bench/evaluation.py`` (bursty captures, Poisson
changes; the paper's three years, 2015-06-01 … 2018-06-01), learns at homepage level over the
first half of the period (windows of 12 weeks, 5 % budget, NDCG fitness, the default
generations and population) and prints the wall and CPU time of building the windows and of
the evolution, and the peak resident set size. Each size runs in a fresh process, so each
peak is its own. Goal (issue: learned schedulers): under 10 minutes and 4 GiB at 20,000 sites.

**Test figures** (``--demo``). On the demo archive (``hacs.demo``), both levels: learns on the
first half of the period, then prints NDCG@k, ChangeRate@k and P@K... on the second half for the
learned function, each terminal alone (GP4C's scorers and HACS's λ and p) and Random. The
test period's NDCG and ChangeRate come from :func:`hacs.learning.gp4c.budget_fitness`, which
computes them as Evaluation 2 does. Same seed, same figures.
"""

from __future__ import annotations

import argparse
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from evaluation import (  # noqa: E402  # noqa: E402
    DEMO_END,
    DEMO_START,
    END,
    EPOCH,
    START,
    demo_collection,
    synthetic_collection,
)

from hacs.evaluation import TERMINALS, learning_windows  # noqa: E402
from hacs.learning.gp4c import ScoreFunction, budget_fitness, learn_gp4c  # noqa: E402

W_WEEKS = 12
BUDGET = 0.05


def cost(sites: int, seed: int, generations: int | None, population: int | None) -> None:
    began = time.perf_counter()
    tables = synthetic_collection(sites, seed)
    print(f"{sites:,} sites: built the collection in {time.perf_counter() - began:.1f} s "
          f"({tables['homepage'].size:,} homepage observations)")  # fmt: skip
    options = {}
    if generations is not None:
        options["generations"] = generations
    if population is not None:
        options["population"] = population
    mid = START + (END - START) / 2
    wall, cpu = time.perf_counter(), time.process_time()
    result = learn_gp4c(
        tables["homepage"], start=START, end=mid, w_weeks=W_WEEKS, seed=seed, **options
    )
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024**2  # KiB → GiB
    generations = len(result.best_per_generation) - 1
    print(f"  learned in {wall:.1f} s (CPU {cpu:.1f} s), {result.evaluations:,} distinct "
          f"functions over {generations} generations; peak RSS {peak:.2f} GiB")  # fmt: skip
    print(f"  training NDCG@5% {result.training_fitness:.4f}, validation "
          f"{result.validation_fitness:.4f}: {result.function.formula}")  # fmt: skip


def demo(sites: int, seed: int, generations: int | None, population: int | None) -> None:
    with tempfile.TemporaryDirectory(prefix="hacs-learning-demo-") as tmp:
        tables = demo_collection(sites, seed, Path(tmp) / "demo")
    start = float((DEMO_START - EPOCH).days)
    end = float((DEMO_END - EPOCH).days)
    mid = start + (end - start) / 2
    options = {}
    if generations is not None:
        options["generations"] = generations
    if population is not None:
        options["population"] = population
    print(f"Demo archive: {sites} sites, seed {seed}; learn on {DEMO_START} + half, "
          f"test on the second half; windows of {W_WEEKS} weeks, budget {BUDGET:.0%}")  # fmt: skip
    for level, table in tables.items():
        began = time.perf_counter()
        result = learn_gp4c(
            table, start=start, end=mid - 7.0, w_weeks=W_WEEKS, seed=seed, **options
        )
        took = time.perf_counter() - began
        test = learning_windows(table, start=mid, end=end, w_weeks=W_WEEKS)
        columns = test.columns()
        print(f"\n{level}: learned in {took:.1f} s; training {result.training_fitness:.4f}, "
              f"validation {result.validation_fitness:.4f}")  # fmt: skip
        print(f"  GP4C: {result.function.formula}")
        rows = [("GP4C", result.function)] + [(name, ScoreFunction(name)) for name in TERMINALS]
        print(f"  {'scorer':10} {'NDCG@5%':>8} {'ChangeRate@5%':>14}")
        for name, function in rows:
            ndcg, change_rate = budget_fitness(function.score(columns), test, BUDGET)
            print(f"  {name:10} {ndcg:8.4f} {change_rate:14.4f}")
        share = test.positive.astype(float)
        per_point = np.add.reduceat(share, test.offsets[:-1][np.diff(test.offsets) > 0])
        eligible = np.diff(test.offsets)[np.diff(test.offsets) > 0]
        print(f"  {'random':10} {'':8} {float(np.mean(per_point / eligible)):14.4f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
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
        command = [sys.executable, __file__, "--sites", str(sites), "--seed", str(args.seed)]
        for flag in ("generations", "population"):
            if getattr(args, flag) is not None:
                command += [f"--{flag}", str(getattr(args, flag))]
        subprocess.run(command, check=True)


if __name__ == "__main__":
    main()
