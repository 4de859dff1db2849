"""Closed-loop replay on the demo archive: does the daily list find more changes than crawling in
turn, at random, or with the paper's probability? And how close does it come to a list that
knows every site's true rate?

Run from the project root::

    .venv/bin/python bench/replay.py [--sites N] [--seed S] [--days 28] [--periods 3]
                                     [--budgets 0.02,0.05] [--level homepage|website] [--e-days E]
                                     [--learned]

It writes a demo archive with known truth (``hacs.demo``) into a temporary directory, reads each
site's observations and update flags (DESIGN rules 1 and 3, as HACS stores them) and its true
change times from the archive's truth file, and replays ``--days`` days of crawling for each
budget (a share of the sites a day) from ``--periods`` start dates, the last ending with the
archive (``hacs.replay``). It prints, per policy, the LWS measures summed over the periods:
bandwidth utilisation (changes found per crawl), coverage and timeliness, and the largest number
of days any site was listed. Same seed, same figures.

``--learned`` also replays the learned schedulers (``hacs.learning``), each trained afresh for
every period on the year of history before it (the period's own days never seen): GP4C (a score
function over 12-week windows, NDCG at a 5 % budget, the default generations and population)
and LWS (the regression of the wait for the next update, samples every 7 days).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from datetime import date
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from hacs.defaults import E_DAYS  # noqa: E402
from hacs.demo import build_demo_archive  # noqa: E402
from hacs.evaluation import ObservationTable, reference_points  # noqa: E402
from hacs.learning import gp4c, lws  # noqa: E402
from hacs.replay import POLICIES, Policy, PolicyResult, replay  # noqa: E402
from hacs.updates import timeline_order  # noqa: E402

START, END = date(2015, 6, 1), date(2018, 6, 1)


def day_of(stamp: str) -> float:
    moment = time.strptime(stamp, "%Y%m%d%H%M%S")
    seconds = time.mktime(moment) - time.mktime(START.timetuple())
    return seconds / 86400.0


def load(
    truth_path: Path, level: str
) -> tuple[list[tuple[list[float], list[bool]]], list[list[float]], list[float]]:
    """Each site's observations (time, update flag), true change times and true rate."""
    truth = json.loads(truth_path.read_text())
    observed, changes, rates = [], [], []
    for site in truth["sites"]:
        rows = [
            c for c in site["captures"]
            if c["observation"] and (c["depth"] == 0 if level == "homepage" else c["depth"] <= 2)
        ]  # fmt: skip
        times = np.array([day_of(c["timestamp"]) for c in rows])
        pages = {page: i for i, page in enumerate(sorted({c["page"] for c in rows}))}
        page = np.array([pages[c["page"]] for c in rows], dtype=np.int64)
        order = timeline_order(np.zeros(len(rows), dtype=np.int64), times, page)
        observed.append(
            ([float(times[i]) for i in order], [bool(rows[i]["update"]) for i in order])
        )
        changes.append([float(x) for x in site["update_times"][level]])
        rates.append(float(site["rate_per_day"][level]))
    return observed, changes, rates


def before(observed: list[tuple[list[float], list[bool]]], start: float) -> tuple[np.ndarray, ...]:
    times: list[float] = []
    flags: list[bool] = []
    offsets = [0]
    for site_times, site_flags in observed:
        kept = [i for i, t in enumerate(site_times) if t < start]
        times += [site_times[i] for i in kept]
        kept_flags = [site_flags[i] for i in kept]
        if kept_flags:
            kept_flags[0] = False  # the first observation of the history is its baseline
        flags += kept_flags
        offsets.append(len(times))
    return np.array(times), np.array(flags, dtype=bool), np.array(offsets, dtype=np.int64)


def learned_policies(history: tuple[np.ndarray, ...], start: float, seed: int) -> dict[str, Policy]:
    """GP4C and LWS trained on the year before ``start`` (the module docstring)."""
    times, flags, offsets = history
    counts = np.diff(offsets)
    site = np.repeat(np.arange(counts.size), counts)
    index = np.arange(times.size) - np.repeat(offsets[:-1], counts)
    table = ObservationTable(
        site=site, page=site, time=times, page_index=index,
        link_floor=np.where(flags, -1, index - 1), n_sites=counts.size,
    )  # fmt: skip
    first = max(start - 365.0, 7.0 * 12)
    began = time.perf_counter()
    evolution = gp4c.learn_gp4c(table, start=first, end=start - 7.0, w_weeks=12, seed=seed)
    x, y, groups, _ = lws.lws_samples(
        times, flags, offsets, reference_points(first, start - 7.0, 7.0), horizon_end=start
    )
    model = lws.fit_lws(x, y, seed=seed, groups=groups, period=(first, start - 7.0))
    print(f"  learned for the period from day {start:g} in {time.perf_counter() - began:.0f} s: "
          f"GP4C {evolution.function.formula[:70]}")  # fmt: skip
    return {
        "gp4c": gp4c.replay_policy(evolution.function, w_weeks=12),
        "lws": lws.replay_policy(model),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sites", type=int, default=400)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--days", type=int, default=28)
    parser.add_argument("--periods", type=int, default=3)
    parser.add_argument("--budgets", default="0.02,0.05")
    parser.add_argument("--level", choices=("homepage", "website"), default="homepage")
    parser.add_argument("--e-days", type=float, default=E_DAYS)
    parser.add_argument("--policies", default=",".join(POLICIES))
    parser.add_argument("--learned", action="store_true", help="also GP4C and LWS, trained")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="hacs-replay-") as tmp:
        began = time.perf_counter()
        demo = build_demo_archive(Path(tmp) / "demo", sites=args.sites, seed=args.seed,
                                  start=START, end=END)  # fmt: skip
        observed, changes, rates = load(demo.outdir / "truth.json", args.level)
        print(f"Demo archive: {args.sites} sites, seed {args.seed}, {args.level} level "
              f"({time.perf_counter() - began:.0f} s to write and read)")  # fmt: skip
    span = (END - START).days
    starts = [span - args.days * (k + 1) for k in range(args.periods)]
    policies = args.policies.split(",")
    learned = {
        start: learned_policies(before(observed, start), float(start), args.seed)
        for start in (starts if args.learned else [])
    }
    for share in (float(b) for b in args.budgets.split(",")):
        budget = max(1, round(share * args.sites))
        names = policies + (["gp4c", "lws"] if args.learned else [])
        totals: dict[str, list[PolicyResult]] = {name: [] for name in names}
        for start in starts:
            results = replay(
                history=before(observed, start), changes=changes, start=float(start),
                days=args.days, budget=budget, policies=policies, e_days=args.e_days,
                true_rates=rates, seed=args.seed + start, extra=learned.get(start),
            )  # fmt: skip
            for result in results:
                totals[result.policy].append(result)
        print(f"\nBudget {share:.0%} a day ({budget} sites), {args.periods} periods of "
              f"{args.days} days, e = {args.e_days:g}")  # fmt: skip
        print(f"{'policy':16} {'found/crawls':>14} {'utilisation':>11} {'coverage':>9} "
              f"{'delay (d)':>9} {'max days':>8} {'overlisted':>10}")  # fmt: skip
        for name, rows in totals.items():
            crawls = sum(r.crawls for r in rows)
            found = sum(r.found for r in rows)
            changes_total = sum(r.changes for r in rows)
            caught = sum(r.caught for r in rows)
            delays = [r.mean_delay_days * r.caught for r in rows if r.mean_delay_days is not None]
            delay = sum(delays) / caught if caught else float("nan")
            print(f"{name:16} {found:>6}/{crawls:<7} {found / crawls:>11.3f} "
                  f"{caught / max(changes_total, 1):>9.3f} {delay:>9.1f} "
                  f"{max(r.most_days_listed for r in rows):>8} "
                  f"{sum(r.overlisted_sites for r in rows):>10}")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
