"""Website-level rates: which estimator ranks sites like their true rates, and at the right level?

Run from the project root::

    .venv/bin/python -m bench.website_rates [--sites N] [--seed S] [--no-bursts] [--level L]

It writes a demo archive with known truth (``hacs_demo``; ``--no-bursts``: the demo whose pages
add links as plain Poisson processes) into a temporary directory and reads each site's pages of
depth ≤ 2 as HACS stores them: observations (DESIGN rule 1), update flags (rule 3 over the whole
history) and each observation's links never seen before on its page. It prints two tables.

**Estimators**, Spearman's ρ against three truths: the generator's long-run rate
(``rate_per_day``), the rate realised over the history (add events on the site's pages within
it, per day) and the rate of the events the archive could see (on the pages it holds, within
the span it holds them); with the median ratio of estimate to the long-run rate on the densest
and sparsest thirds of sites by captures a day:

* **merged MLE** — every page on one timeline (DESIGN rule 4), observed MLE (rule 5);
* **Σ page MLE** — each page's own observed MLE, summed (unknown counts 0);
* **Σ page posterior** — each page's posterior mean under a Gamma prior fitted on all pages;
* **Σ page new links** — each page's links never seen before, per day of its span, summed
  (the rate of link additions, in links a day);
* **Σ page new links (posterior)** — the same, with a Gamma prior fitted on pages' new links;
* **HACS** — ``hacs.website``: each page's new links / κ, posterior, summed.

**κ, the new links per update** (``hacs.website.links_per_update``), read several ways, each
followed by the website posterior it gives: κ, ρ against the long-run rate, and the median
ratio of estimate to the long-run rate over all sites and by third of captures a day (dense,
middle, sparse). The same table is printed for the demo archive and for a **recovery** check:
a synthetic collection (:func:`recovery_pages`) whose every update adds exactly one link, so
that κ must come out 1 and the ratio 1, with a share of stale copies (a copy that re-serves
the content its page's previous copy showed, or the page as it was weeks before).

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
from hacs.website import (
    MIN_SHORT_UPDATES,
    SHORT_INTERVAL_DAYS,
    PageLinks,
    fit_page_prior,
    links_per_update,
    links_per_update_readings,
    page_link_evidence,
    page_links,
    website_posterior,
)

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
        self.held_long_run: list[float] = []  # over the pages the archive holds a copy of
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
            rate_of = {p["url"]: float(p["rate_per_day"]) for p in site["pages"]}
            self.held_long_run.append(sum(rate_of.get(key, 0.0) for key in by_page))
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


def grouped(pages: Pages) -> PageLinks:
    """The pages' copies as ``hacs.website`` reads them."""
    site = np.concatenate(
        [np.full(t.size, s) for t, s in zip(pages.times, pages.site_of, strict=True)]
    )
    page = np.concatenate([np.full(t.size, p) for p, t in enumerate(pages.times)])
    return page_links(site, page, np.concatenate(pages.times), np.concatenate(pages.fresh))


def hacs_website(pages: Pages) -> np.ndarray:
    """HACS's website level (``hacs.website``): each page's link posterior, summed."""
    links = grouped(pages)
    prior, kappa, dispersion = fit_page_prior(links)
    print(
        f"  κ = {kappa:.2f} new links per update, dispersion φ = {dispersion:.2f}; "
        f"page prior {prior}"
    )
    shape, rate = website_posterior(links, pages.n_sites, prior, kappa)  # φ: intervals only
    return np.nan_to_num(shape / rate)


ESTIMATORS: dict[str, Callable[[Pages], np.ndarray]] = {
    "merged MLE": merged_mle,
    "Σ page MLE": sum_page_mle,
    "Σ page posterior": sum_page_posterior,
    "Σ page new links": sum_page_new_links,
    "Σ page new links (posterior)": sum_page_new_links_posterior,
    "HACS: Σ page new links/κ": hacs_website,
}


# κ, read several ways ---------------------------------------------------------------------


def kappa_short_gap_mean(pages: PageLinks) -> float:
    """HACS's κ before issue 27: the mean new links of updates seen within SHORT_INTERVAL_DAYS
    of the page's previous copy (1 with fewer than MIN_SHORT_UPDATES)."""
    with np.errstate(invalid="ignore"):
        short = (pages.new_links > 0) & (pages.gap <= SHORT_INTERVAL_DAYS)
    return float(pages.new_links[short].mean()) if short.sum() >= MIN_SHORT_UPDATES else 1.0


def kappa_two_short_gaps(pages: PageLinks) -> float:
    """The same mean, on updates whose previous copy was itself seen within SHORT_INTERVAL_DAYS
    of the copy before it."""
    before = np.r_[np.nan, pages.gap[:-1]]
    before[pages.offsets[:-1][np.diff(pages.offsets) > 0]] = np.nan  # a page's first copy
    with np.errstate(invalid="ignore"):
        short = (pages.new_links > 0) & (pages.gap <= SHORT_INTERVAL_DAYS)
        short &= before <= SHORT_INTERVAL_DAYS
    return float(pages.new_links[short].mean()) if short.sum() >= MIN_SHORT_UPDATES else 1.0


def kappa_gap_rate_aware(pages: PageLinks) -> float:
    """``hacs.website``'s first reading alone: the gap since the previous copy."""
    found = links_per_update_readings(pages)[0]
    return 1.0 if found is None else found


def kappa_change_rate_aware(pages: PageLinks) -> float:
    """``hacs.website``'s second reading alone: the days since the previous change."""
    found = links_per_update_readings(pages)[1]
    return 1.0 if found is None else found


KAPPAS: dict[str, Callable[[PageLinks], float]] = {
    "gap ≤ 7 d, mean (before #27)": kappa_short_gap_mean,
    "two gaps ≤ 7 d, mean": kappa_two_short_gaps,
    "gap ≤ 7 d, rate-aware": kappa_gap_rate_aware,
    "change ≤ 14 d, rate-aware": kappa_change_rate_aware,
    "HACS: the smaller reading": links_per_update,
    "κ = 1": lambda pages: 1.0,
}


def website_rate(pages: PageLinks, n_sites: int, kappa: float) -> np.ndarray:
    """Each site's posterior mean rate, its pages' new links read with ``kappa``."""
    prior = fit_prior(*page_link_evidence(pages, kappa))
    shape, rate = website_posterior(pages, n_sites, prior, kappa)
    return np.nan_to_num(shape / rate)


def interval_rate(pages: PageLinks, n_sites: int) -> np.ndarray:
    """No κ: each page's posterior on its change/no-change intervals (the exact likelihood),
    summed over the site's pages."""
    evidence = interval_evidence(pages.time, pages.new_links > 0, pages.offsets)
    alpha, beta = interval_posterior(fit_interval_prior(evidence), evidence)
    return np.bincount(pages.page_site, weights=np.nan_to_num(alpha / beta), minlength=n_sites)


def kappa_table(title: str, pages: PageLinks, truth: np.ndarray, density: np.ndarray) -> None:
    """κ, ρ against ``truth`` and the median estimate / truth by third of ``density``."""
    third = np.digitize(density, np.quantile(density, [1 / 3, 2 / 3]))
    print(f"\n{title}")
    print(
        f"  {'κ reading':30} {'κ':>5} {'ρ':>6} {'ratio':>6} {'dense':>6} {'middle':>6} "
        f"{'sparse':>6}"
    )
    for name, reading in KAPPAS.items():
        kappa = reading(pages)
        _kappa_row(name, f"{kappa:5.2f}", website_rate(pages, truth.size, kappa), truth, third)
    _kappa_row(
        "no κ: Σ pages' interval post.", "    –", interval_rate(pages, truth.size), truth, third
    )


def _kappa_row(
    name: str, kappa: str, rate: np.ndarray, truth: np.ndarray, third: np.ndarray
) -> None:
    ratio = rate / truth
    thirds = " ".join(f"{np.median(ratio[third == k]):>6.2f}" for k in (2, 1, 0))
    print(
        f"  {name:30} {kappa} {spearmanr(rate, truth).statistic:>6.3f} "
        f"{np.median(ratio):>6.2f} {thirds}"
    )


# The recovery check: every update adds one link ----------------------------------------------

RECOVERY_CASES = (
    ("fresh copies", 0.0, None),
    ("a quarter of copies stale", 0.25, None),
    ("half of copies stale", 0.5, None),
    ("30 % re-serve the page of ~60 d before", 0.3, 60.0),
)


def recovery_pages(
    rng: np.random.Generator, n_sites: int, stale: float, lag_days: float | None
) -> tuple[PageLinks, np.ndarray, np.ndarray]:
    """A synthetic collection over the demo's period, its pages' copies, each site's true rate
    and its copies a day. A site has one to six pages, each a Poisson process of updates whose
    every one adds exactly one link, at log-normal rates (median one in 150 days, σ = 1, one a
    day at most); each page is copied at the site's own rate (log-normal, median every 15
    days) times a page factor, at random instants with a third of them followed by another copy
    hours later, so gaps run from hours to a year. A copy is stale with probability ``stale``:
    it re-serves what the page's previous copy showed or, with ``lag_days``, the page as it
    was an Exponential(``lag_days``) number of days before."""
    site, page, time, links = [], [], [], []
    truth, density = np.zeros(n_sites), np.zeros(n_sites)
    for s in range(n_sites):
        rates = np.exp(rng.normal(np.log(1 / 150), 1.0, int(rng.integers(1, 7))))
        rates = np.clip(rates, 1 / 5000, 1.0)
        truth[s] = rates.sum()
        visits = float(np.exp(rng.normal(np.log(1 / 15), 0.8)))
        for rate in rates:
            copies = int(rng.poisson(visits * rng.uniform(0.2, 1.0) * SPAN_DAYS)) + 2
            t = np.sort(rng.uniform(0, SPAN_DAYS, copies))
            again = rng.random(t.size) < 1 / 3
            t = np.sort(np.r_[t, t[again] + rng.exponential(0.3, int(again.sum()))])
            t = t[t < SPAN_DAYS]
            count = int(rng.poisson(rate * (SPAN_DAYS + 200)))  # from 200 days before
            updates = np.sort(rng.uniform(-200, SPAN_DAYS, count))
            served = t.copy()
            for i in np.flatnonzero(rng.random(t.size) < stale):
                if lag_days is not None:
                    served[i] = t[i] - rng.exponential(lag_days)
                elif i:
                    served[i] = served[i - 1]
            held = np.maximum.accumulate(np.searchsorted(updates, served, side="right"))
            fresh = np.diff(np.r_[held[0], held])  # links no earlier copy held
            site.append(np.full(t.size, s))
            page.append(np.full(t.size, len(page)))
            time.append(t)
            links.append(fresh)
            density[s] += t.size / SPAN_DAYS
    result = page_links(
        np.concatenate(site), np.concatenate(page), np.concatenate(time), np.concatenate(links)
    )
    return result, truth, density


def main() -> int:
    parser = bench_parser(__doc__, sites=400)
    parser.add_argument("--level", choices=("homepage", "website"), default="website")
    parser.add_argument("--recovery-sites", type=int, default=400, help="default 400")
    args = parser.parse_args()
    bursts = not args.no_bursts
    with demo_archive(args.sites, args.seed, bursts=bursts) as demo:
        pages = Pages(read_truth(demo), args.level)
    long_run, realised = np.array(pages.long_run), np.array(pages.realised)
    visible = np.array(pages.visible)
    density = np.array(pages.captures_a_day)
    dense = density >= np.quantile(density, 2 / 3)
    sparse = density <= np.quantile(density, 1 / 3)
    kind = "with bursts" if bursts else "without bursts"
    print(
        f"Demo archive {kind}: {args.sites} sites, seed {args.seed}, {len(pages.times)} pages "
        f"of depth ≤ 2; true realised vs long-run ρ = "
        f"{spearmanr(realised, long_run).statistic:.3f}; the visible events' rate ranks as the "
        f"realised with ρ = {spearmanr(visible, realised).statistic:.3f}, as the long-run "
        f"with ρ = {spearmanr(visible, long_run).statistic:.3f}"
    )
    print(
        f"{'estimator':30} {'ρ long-run':>10} {'ρ realised':>10} {'ρ visible':>10} "
        f"{'ratio dense':>11} {'ratio sparse':>12}"
    )
    for name, estimator in ESTIMATORS.items():
        rate = estimator(pages)
        ratio = rate / long_run
        print(
            f"{name:30} {spearmanr(rate, long_run).statistic:>10.3f} "
            f"{spearmanr(rate, realised).statistic:>10.3f} "
            f"{spearmanr(rate, visible).statistic:>10.3f} "
            f"{np.median(ratio[dense]):>11.2f} {np.median(ratio[sparse]):>12.2f}"
        )
    if args.level == "website":
        kappa_table(
            f"κ on the demo archive {kind} (seed {args.seed}); ratio = estimate / long-run rate",
            grouped(pages),
            long_run,
            density,
        )
        for label, stale, lag in RECOVERY_CASES:
            rng = np.random.default_rng([args.seed, int(stale * 100), int(lag or 0)])
            links, truth, copies = recovery_pages(rng, args.recovery_sites, stale, lag)
            title = f"Recovery, every update one link, {label} ({args.recovery_sites} sites, "
            kappa_table(f"{title}seed {args.seed}): κ should be 1", links, truth, copies)
    return 0


if __name__ == "__main__":
    sys.exit(main())
