"""Where HACS's posterior and Cho–Garcia-Molina part ways in Evaluation 2: the sites one puts in
its top k and the other does not, and whether the archive even looked at them the week after.

Run from the project root::

    .venv/bin/python -m bench.experiments.evaluation_picks [--sites 1200] [--seed 0] [--w 8]
                                                           [--level L]

On the demo archive (``python -m bench.evaluation --demo``'s collection), at every reference point t
of the period, with a history of ``--w`` weeks and e = 7 days as in Evaluation 2, it takes each
model's top k (5 % of the eligible sites, as the evaluation's budget) by
``hacs.evaluation.window_scores`` and compares the sites only one of the two picked:

* how many of them were positive (the archive holds a copy in (t, t + e] that adds a link:
  DESIGN rule 9);
* their median number of instants in the window, posterior mean rate and age of the newest copy;
* how many the archive captured at all in (t, t + e], and how many of those were positive.

A site the archive did not capture in the week cannot be positive, whatever happened to it, so
the last line separates the evaluation's question (will the archive see a change?) from the
crawl list's (did the site change since our copy?). Same seed, same figures.
"""

from __future__ import annotations

import sys

import numpy as np

from bench.common import (
    END_DAYS,
    EVAL_E_DAYS,
    START_DAYS,
    bench_parser,
    demo_archive,
    demo_tables,
)
from hacs.evaluation import reference_points, window_scores


def main() -> int:
    parser = bench_parser(__doc__, sites=1200)
    parser.add_argument("--w", type=int, default=8)
    parser.add_argument("--level", choices=("homepage", "website"), default="homepage")
    args = parser.parse_args()
    with demo_archive(args.sites, args.seed, bursts=not args.no_bursts) as demo:
        table = demo_tables(demo)[args.level]
    order = np.lexsort((table.time, table.site))
    copy_site, copy_time = table.site[order], table.time[order]

    def captured(sites: np.ndarray, t: float) -> np.ndarray:
        lo = np.searchsorted(copy_site, sites, side="left")
        hi = np.searchsorted(copy_site, sites, side="right")
        return np.array([bool(((copy_time[a:b] > t) & (copy_time[a:b] <= t + EVAL_E_DAYS)).any())
                         for a, b in zip(lo.tolist(), hi.tolist(), strict=True)],
                        dtype=bool)  # fmt: skip

    totals = {"post": np.zeros(3), "cgm": np.zeros(3)}  # top-k positives, only-one, seen
    positives_only = {"post": 0, "cgm": 0}
    positives_seen = {"post": 0, "cgm": 0}
    traits: dict[str, list[list[float]]] = {"post": [[], [], []], "cgm": [[], [], []]}
    points = 0
    for t in reference_points(START_DAYS, END_DAYS).tolist():
        s = window_scores(table, t=t, w_weeks=args.w, e_days=EVAL_E_DAYS, method="interpolated",
                          website=args.level == "website")  # fmt: skip
        if s.site.size == 0:
            continue
        points += 1
        k = max(1, round(0.05 * s.site.size))
        tops = {
            name: np.argsort(-s.scores[model], kind="stable")[:k]
            for name, model in (("post", "posterior"), ("cgm", "cho_garcia_molina"))
        }
        for name, other in (("post", "cgm"), ("cgm", "post")):
            only = np.setdiff1d(tops[name], tops[other])
            seen = captured(s.site[only], t)
            totals[name] += (s.positive[tops[name]].sum(), only.size, seen.sum())
            positives_only[name] += int(s.positive[only].sum())
            positives_seen[name] += int(s.positive[only][seen].sum())
            traits[name][0] += s.instants[only].tolist()
            traits[name][1] += (s.alpha / s.beta)[only].tolist()
            traits[name][2] += (t - s.last_copy[only]).tolist()
    print(f"Demo archive: {args.sites} sites, seed {args.seed}, {args.level}, w = {args.w}, "
          f"e = {EVAL_E_DAYS:g}, {points} reference points, top 5 %")  # fmt: skip
    print(f"{'':28}{'posterior':>12}{'Cho–Garcia-Molina':>20}")

    def median(trait: int) -> tuple[float, float]:
        return float(np.median(traits["post"][trait])), float(np.median(traits["cgm"][trait]))

    rows = [
        ("positives in the top k", totals["post"][0], totals["cgm"][0], "{:.0f}"),
        ("sites only this one picked", totals["post"][1], totals["cgm"][1], "{:.0f}"),
        ("… of them positive", positives_only["post"], positives_only["cgm"], "{:.0f}"),
        ("… median instants", *median(0), "{:.1f}"),
        ("… median mean rate / day", *median(1), "{:.4f}"),
        ("… median age of copy, days", *median(2), "{:.1f}"),
        ("… captured in (t, t + e]", totals["post"][2], totals["cgm"][2], "{:.0f}"),
        ("… … of them positive", positives_seen["post"], positives_seen["cgm"], "{:.0f}"),
    ]
    for label, a, b, fmt in rows:
        print(f"{label:28}{fmt.format(a):>12}{fmt.format(b):>20}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
