"""Interval coverage on real homepage histories: do the 90 % intervals hold on pages HACS did not
generate?

Run from the project root::

    .venv/bin/python -m bench.real_intervals [--realdata ../shared/realdata] [--seed S]
                                             [--schedules N]

Two scholarly homepages kept in git (``jonbarron-homepage-git-history``, 663 versions 2017–2025;
``jbhuang-homepage-git-history``, 74 versions 2021–2025; third-party data beside the checkout,
never copied into the project) give every real change: a version is an update when its links
(``hacs.formats.links.extract_links``) include one no earlier version held. Each page is then
"captured" by ``--schedules`` random archives (Poisson captures at a mean gap of 7, 14, 30 or 60
days over the history, each schedule one site of a collection), and each capture is flagged as
rule 3 would flag it. For each page and gap the bench reads φ (``hacs.bayes.change_dispersion``)
on the schedules, under a collection prior like the demo archive's (:data:`PRIOR`: schedules of
one page are no collection to fit a prior on, as every site would have the same rate), and prints
the
share of schedules whose 90 % interval (``interval_bounds``) holds the page's pseudo-true mean
interval at the schedule's own gaps (``bench.interval_coverage.pseudo_true_rate``, read from the
real change times), with φ = 1 and with φ. Real updates come in bursts too (a paper, then its
slides), so this checks the dispersion on data no HACS generator made. Same seed, same figures.
"""

from __future__ import annotations

import csv
import sys
import tarfile
from pathlib import Path

import numpy as np

from bench.common import ROOT, bench_parser
from bench.interval_coverage import covers, pseudo_true_rate
from hacs.bayes import (
    GammaPrior,
    change_dispersion,
    interval_bounds,
    interval_evidence,
    interval_posterior,
)
from hacs.formats.links import extract_links

PAGES = {
    "jonbarron-homepage-git-history": "https://jonbarron.info/",
    "jbhuang-homepage-git-history": "https://jbhuang0604.github.io/",
}
GAPS = (7.0, 14.0, 30.0, 60.0)
#: About one update in 160 days, like the demo archive's collection prior.
PRIOR = GammaPrior(shape=1.3, rate=210.0)
EPOCH_DAY = 86400.0


def update_days(folder: Path, base_url: str) -> tuple[np.ndarray, float]:
    """The days (since the first version) of versions that add a link no earlier one held, and
    the history's length in days."""
    with open(folder / "versions_index.csv", encoding="utf-8") as handle:
        rows = sorted(csv.DictReader(handle), key=lambda r: int(r["commit_epoch"]))
    bodies: dict[str, bytes] = {}
    with tarfile.open(folder / "index_html_versions.tar.xz") as archive:
        for member in archive.getmembers():
            if member.isfile():
                extracted = archive.extractfile(member)
                if extracted is not None:
                    bodies[Path(member.name).name] = extracted.read()
    first = int(rows[0]["commit_epoch"])
    seen: set[str] = set()
    days = []
    for k, row in enumerate(rows):
        links = extract_links(bodies[row["file"]], base_url)
        if k and links - seen:
            days.append((int(row["commit_epoch"]) - first) / EPOCH_DAY)
        seen |= links
    span = (int(rows[-1]["commit_epoch"]) - first) / EPOCH_DAY
    return np.asarray(days), span


def schedules(
    rng: np.random.Generator, changes: np.ndarray, span: float, gap: float, count: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``count`` Poisson capture schedules of mean ``gap`` over [0, span], flagged by rule 3 on
    the true changes (an update when a change fell since the previous capture)."""
    times_l, flags_l, offsets = [], [], [0]
    for _ in range(count):
        times = np.sort(rng.uniform(0.0, span, max(3, int(rng.poisson(span / gap)))))
        seen = np.searchsorted(changes, times, side="right")
        times_l.append(times)
        flags_l.append(np.r_[False, np.diff(seen) > 0])
        offsets.append(offsets[-1] + times.size)
    return np.concatenate(times_l), np.concatenate(flags_l), np.asarray(offsets)


def main() -> int:
    parser = bench_parser(__doc__, sites=0)
    parser.add_argument("--realdata", type=Path, default=ROOT.parent / "shared" / "realdata")
    parser.add_argument("--schedules", type=int, default=40)
    args = parser.parse_args()
    if not args.realdata.is_dir():
        print(f"{args.realdata} is not here: the real homepage histories live beside the checkout")
        return 1
    rng = np.random.default_rng(args.seed)
    print(f"{'page':32} {'gap':>4} {'updates':>7} {'φ':>5} {'φ = 1':>6} {'with φ':>6} {'open':>4}")
    for name, url in PAGES.items():
        changes, span = update_days(args.realdata / name, url)
        for gap in GAPS:
            times, flags, offsets = schedules(rng, changes, span, gap, args.schedules)
            evidence = interval_evidence(times, flags, offsets)
            prior = PRIOR
            alpha, beta = interval_posterior(prior, evidence)
            phi = change_dispersion(times, flags, offsets, alpha / beta)
            truth = np.array(
                [
                    1.0 / pseudo_true_rate(changes, np.diff(np.unique(times[a:b])), span)
                    for a, b in zip(offsets[:-1], offsets[1:], strict=True)
                ]
            )
            plain = interval_bounds(prior, evidence)
            wide = interval_bounds(prior, evidence, dispersion=phi)
            print(
                f"{name.split('-')[0]:32} {gap:4.0f} {changes.size:7d} {phi:5.2f} "
                f"{covers(plain.low, plain.high, truth).mean():6.3f} "
                f"{covers(wide.low, wide.high, truth).mean():6.3f} "
                f"{int(wide.open.sum()):4d}"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
