"""Website-level rates on the demo archive: which estimator ranks sites like their true rates?

Run from the project root::

    .venv/bin/python -m bench.website_rates [--sites N] [--seed S] [--level L]

It writes a demo archive with known truth (``hacs_demo``) into a temporary directory and reads
each site's pages of depth ≤ 2 as HACS stores them: observations (DESIGN rule 1), update flags
(rule 3 over the whole history) and each observation's links never seen before on its page. It
then estimates each site's rate of link-adding updates several ways and prints Spearman's ρ
against two truths: the generator's long-run rate (``rate_per_day``) and the rate realised over
the history (add events on the site's pages within it, per day), with the median ratio of
estimate to truth on the densest and sparsest thirds of sites by captures a day:

* **merged MLE** — every page on one timeline (DESIGN rule 4), observed MLE (rule 5);
* **Σ page MLE** — each page's own observed MLE, summed (unknown counts 0);
* **Σ page posterior** — each page's posterior mean under a Gamma prior fitted on all pages;
* **Σ page new links** — each page's links never seen before, per day of its span, summed
  (the rate of link additions, in links a day);
* **Σ page new links (posterior)** — the same, with a Gamma prior fitted on pages' new links.

Same seed, same figures.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

import numpy as np
from scipy.stats import spearmanr

from bench.common import END, START, bench_parser, day_of, demo_archive, read_truth
from hacs.bayes import (
    fit_interval_prior,
    fit_prior,
    interval_evidence,
    interval_posterior,
    posterior,
)
from hacs.estimators import estimate_many
from hacs.updates import new_link_counts, timeline_order
from hacs.website import fit_page_prior, page_links, website_posterior

SPAN_DAYS = float((END - START).days)


class Pages:
    """Every page's observations in time order: times, update flags, new links; per site."""

    def __init__(self, truth: dict[str, Any], level: str = "website") -> None:
        depth = 2 if level == "website" else 0
        self.times: list[np.ndarray] = []
        self.flags: list[np.ndarray] = []
        self.fresh: list[np.ndarray] = []
        self.site_of: list[int] = []
        self.long_run: list[float] = []
        self.realised: list[float] = []
        self.visible: list[float] = []
        self.captures_a_day: list[float] = []
        for index, site in enumerate(truth["sites"]):
            links = {k: frozenset(v) for k, v in site["link_sets"].items()}
            rows = [c for c in site["captures"] if c["observation"] and c["depth"] <= depth]
            by_page: dict[str, list[dict[str, Any]]] = {}
            for c in rows:
                by_page.setdefault(c["page"], []).append(c)
            adds: dict[str, list[float]] = {}
            for event in site["events"]:
                if event["kind"] == "add":
                    adds.setdefault(event["page"], []).append(float(event["day"]))
            visible = 0.0
            for page_key, page_rows in by_page.items():
                t = np.array([day_of(c["timestamp"]) for c in page_rows])
                order = timeline_order(np.zeros(t.size, dtype=np.int64), t)
                page_rows = [page_rows[i] for i in order]
                sets = [links.get(c["digest"], frozenset()) for c in page_rows]
                fresh = new_link_counts(sets)
                fresh[0] = 0  # the first observation is the page's baseline (rule 3)
                self.times.append(t[order])
                self.flags.append(np.array([bool(c["update"]) for c in page_rows]))
                self.fresh.append(fresh)
                self.site_of.append(index)
                lo, hi = float(t.min()), float(t.max())
                if hi > lo:
                    seen = [d for d in adds.get(page_key, []) if lo < d <= hi]
                    visible += len(seen) / (hi - lo)
            self.visible.append(visible)
            events = [x for x in site["update_times"][level] if 0 <= x <= SPAN_DAYS]
            self.long_run.append(float(site["rate_per_day"][level]))
            self.realised.append(len(events) / SPAN_DAYS)
            self.captures_a_day.append(len(rows) / SPAN_DAYS)
        self.n_sites = len(truth["sites"])
        self.site = np.array(self.site_of, dtype=np.int64)

    def timelines(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        offsets = np.r_[0, np.cumsum([t.size for t in self.times])].astype(np.int64)
        return np.concatenate(self.times), np.concatenate(self.flags), offsets

    def per_site(self, page_values: np.ndarray) -> np.ndarray:
        return np.bincount(self.site, weights=np.nan_to_num(page_values), minlength=self.n_sites)


def merged_mle(pages: Pages) -> np.ndarray:
    times, flags, offsets = pages.timelines()
    page_of = np.repeat(np.arange(offsets.size - 1), np.diff(offsets))
    site = pages.site[page_of]
    order = timeline_order(site, times, page_of)
    site_offsets = np.r_[0, np.cumsum(np.bincount(site, minlength=pages.n_sites))]
    result = estimate_many(times[order], flags[order], site_offsets.astype(np.int64))
    return np.nan_to_num(result.rate)


def sum_page_mle(pages: Pages) -> np.ndarray:
    return pages.per_site(estimate_many(*pages.timelines()).rate)


def sum_page_posterior(pages: Pages) -> np.ndarray:
    evidence = interval_evidence(*pages.timelines())
    alpha, beta = interval_posterior(fit_interval_prior(evidence), evidence)
    return pages.per_site(alpha / beta)


def _spans(pages: Pages) -> np.ndarray:
    return np.array([t[-1] - t[0] for t in pages.times])


def sum_page_new_links(pages: Pages) -> np.ndarray:
    spans = _spans(pages)
    counts = np.array([f.sum() for f in pages.fresh], dtype=np.float64)
    return pages.per_site(np.where(spans > 0, counts / np.maximum(spans, 1e-9), 0.0))


def sum_page_new_links_posterior(pages: Pages) -> np.ndarray:
    spans = _spans(pages)
    counts = np.array([f.sum() for f in pages.fresh], dtype=np.float64)
    prior = fit_prior(counts, spans)
    alpha, beta = posterior(prior, counts, spans)
    return pages.per_site(alpha / beta)


def hacs_website(pages: Pages) -> np.ndarray:
    """HACS's website level (``hacs.website``): each page's link posterior, summed."""
    site = np.concatenate(
        [np.full(t.size, s) for t, s in zip(pages.times, pages.site_of, strict=True)]
    )
    page = np.concatenate([np.full(t.size, p) for p, t in enumerate(pages.times)])
    grouped = page_links(site, page, np.concatenate(pages.times), np.concatenate(pages.fresh))
    prior, kappa = fit_page_prior(grouped)
    print(f"  κ = {kappa:.2f} new links per update; page prior {prior}")
    shape, rate = website_posterior(grouped, pages.n_sites, prior, kappa)
    return np.nan_to_num(shape / rate)


ESTIMATORS: dict[str, Callable[[Pages], np.ndarray]] = {
    "merged MLE": merged_mle,
    "Σ page MLE": sum_page_mle,
    "Σ page posterior": sum_page_posterior,
    "Σ page new links": sum_page_new_links,
    "Σ page new links (posterior)": sum_page_new_links_posterior,
    "HACS: Σ page new links/κ": hacs_website,
}


def main() -> int:
    parser = bench_parser(__doc__, sites=400)
    parser.add_argument("--level", choices=("homepage", "website"), default="website")
    args = parser.parse_args()
    with demo_archive(args.sites, args.seed) as demo:
        pages = Pages(read_truth(demo), args.level)
    long_run, realised = np.array(pages.long_run), np.array(pages.realised)
    visible = np.array(pages.visible)
    density = np.array(pages.captures_a_day)
    dense = density >= np.quantile(density, 2 / 3)
    sparse = density <= np.quantile(density, 1 / 3)
    print(f"Demo archive: {args.sites} sites, seed {args.seed}, {len(pages.times)} pages of "
          f"depth ≤ 2; true realised vs long-run ρ = "
          f"{spearmanr(realised, long_run).statistic:.3f}; the visible events' rate ranks as the "
          f"realised with ρ = {spearmanr(visible, realised).statistic:.3f}, as the long-run "
          f"with ρ = {spearmanr(visible, long_run).statistic:.3f}")  # fmt: skip
    print(f"{'estimator':30} {'ρ long-run':>10} {'ρ realised':>10} {'ρ visible':>10} "
          f"{'ratio dense':>11} {'ratio sparse':>12}")  # fmt: skip
    for name, estimator in ESTIMATORS.items():
        rate = estimator(pages)
        ok = realised > 0
        ratio = rate[ok] / realised[ok]
        print(
            f"{name:30} {spearmanr(rate, long_run).statistic:>10.3f} "
            f"{spearmanr(rate, realised).statistic:>10.3f} "
            f"{spearmanr(rate, visible).statistic:>10.3f} "
            f"{np.median(ratio[dense[ok]]):>11.2f} {np.median(ratio[sparse[ok]]):>12.2f}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
