"""Thin history on the demo archive: does a site on a few copies ever look certain to have changed?

Run from the project root::

    .venv/bin/python -m bench.thin_history [--sites N] [--seed S] [--keep 0.2,1.0] [--level L]
                                           [--e-days E] [--dispersion]

It writes a demo archive with known truth (``hacs_demo``), keeps each homepage observation with
probability ``--keep`` (a thinner archive, seeded), and on every seventh day of the archive's
last year computes each site's probability of a change since its newest copy over the next
``--e-days`` days (7 by default, the evaluation's week; the daily crawl list's own is 1) as
HACS's default does (the posterior under the collection's prior fitted that day,
``hacs.bayes``; ``hacs.ranking.posterior_probabilities``). It counts (site, day) pairs with
fewer than 5 observations, and among them those with p ≥ 0.99 whose newest copy is not older
than the prior's mean interval; it also prints the paper's g on the same pairs for contrast.

``--level website`` reads the website level as HACS does (``hacs.website``): each page's new
links over κ, the page prior fitted that day, the site's rate the sum over every page copied
before the day; the site's prior mean interval is then one over (its pages × the page prior's
mean rate). A thinned page's dropped copies hand their new links on to its next kept copy. The
paper's g there reads the merged timeline. ``--dispersion`` (website level) tries a candidate
reading, measured and left out (docs/readings.md): each interval's new links a quasi-Poisson
count whose dispersion grows with the gap as a self-exciting count's does,
φ(L) = 1 + (φ∞ − 1)(1 − (d/L)(1 − e^{−L/d})), with (φ∞, d) fitted each day on the collection's
Pearson residuals by gap. Same seed, same figures.
"""

from __future__ import annotations

import sys
from typing import Any

import numpy as np

from bench.common import (
    END,
    EVAL_E_DAYS,
    START,
    before,
    bench_parser,
    demo_archive,
    load,
    read_truth,
)
from bench.website_rates import Pages
from hacs.bayes import (
    fit_interval_prior,
    fit_prior,
    interval_evidence,
    interval_posterior,
    posterior,
)
from hacs.estimators import estimate_many
from hacs.ranking import crawl_probabilities, posterior_probabilities
from hacs.website import (
    PageLinks,
    fit_page_prior,
    links_per_update,
    page_links,
    site_sum,
    website_posterior,
)

E_DAYS = EVAL_E_DAYS  # the evaluation's week; --e-days 1 reads p as the daily crawl list does
DISPERSION = False  # --dispersion
GAP_EDGES = 2.0 ** np.arange(-1, 11)  # half a day … 1,024 days
D_GRID = (1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0)
FITS: list[tuple[float, float]] = []


def _growth(gap: np.ndarray, d: float) -> np.ndarray:
    """1 − (d / L)(1 − e^{−L/d}): how far a self-exciting count's dispersion has grown at L."""
    gap = np.maximum(gap, 1e-9)
    result: np.ndarray = 1.0 - d / gap * -np.expm1(-gap / d)
    return result


def dispersed_posterior(grouped: PageLinks, n_sites: int, known: np.ndarray):
    """Each interval's links read as a quasi-Poisson count whose dispersion grows with the gap,
    φ(L) = 1 + (φ∞ − 1)(1 − (d/L)(1 − e^{−L/d})), the variance-time curve of a Hawkes count,
    (φ∞, d) fitted on the collection's Pearson residuals by gap; returns the site posteriors
    and the prior."""
    kappa = links_per_update(grouped)
    inner = np.isfinite(grouped.gap)
    page_of = np.repeat(np.arange(grouped.offsets.size - 1), np.diff(grouped.offsets))
    x, gap, owner = grouped.new_links[inner] / kappa, grouped.gap[inner], page_of[inner]
    n_pages = grouped.offsets.size - 1

    def evidence(phi: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        m = np.bincount(owner, x / phi, minlength=n_pages)
        t = np.bincount(owner, gap / phi, minlength=n_pages)
        return m, t

    m, t = evidence(np.ones(x.size))
    prior = fit_prior(m, t)
    a, b = posterior(prior, m, t)
    mu = (a / b)[owner] * gap
    bucket = np.digitize(gap, GAP_EDGES)
    num = np.bincount(bucket, (x - mu) ** 2, minlength=GAP_EDGES.size + 1)
    den = np.bincount(bucket, mu, minlength=GAP_EDGES.size + 1)
    used = den > 1.0
    centre = np.sqrt(np.r_[GAP_EDGES[0] / 2, GAP_EDGES] * np.r_[GAP_EDGES, GAP_EDGES[-1] * 2])
    y, w, c = num[used] / den[used], den[used], centre[used]
    best = (np.inf, 1.0, 1.0)
    for d in D_GRID:
        g = _growth(c, d)
        excess = max(0.0, float((w * g * (y - 1)).sum() / (w * g * g).sum()))
        cost = float((w * (y - 1 - excess * g) ** 2).sum())
        if cost < best[0]:
            best = (cost, 1.0 + excess, d)
    _, phi_inf, d = best
    FITS.append((phi_inf, d))
    phi = 1.0 + (phi_inf - 1.0) * _growth(gap, d)
    m, t = evidence(phi)
    prior = fit_prior(m, t)
    a, b = posterior(prior, m, t)
    unseen = known - np.bincount(grouped.page_site, minlength=n_sites)
    extra = np.repeat(np.arange(n_sites, dtype=np.int64), unseen)
    alpha = np.r_[a, np.full(extra.size, prior.shape)]
    beta = np.r_[b, np.full(extra.size, prior.rate)]
    shape, rate = site_sum(alpha, beta, np.r_[grouped.page_site, extra], n_sites)
    return shape, rate, prior


def thinned(
    observed: list[tuple[list[float], list[bool]]], keep: float, rng: np.random.Generator
) -> list[tuple[list[float], list[bool]]]:
    """Each site's observations kept with probability ``keep``; flags say whether a kept one
    changed since the previous kept one (a change in between is seen at the next copy)."""
    found = []
    for times, flags in observed:
        kept_times: list[float] = []
        kept_flags: list[bool] = []
        pending = False
        for time, flag in zip(times, flags, strict=True):
            pending = pending or flag
            if rng.random() < keep:
                kept_times.append(time)
                kept_flags.append(pending and bool(kept_times[:-1]))
                pending = False
        found.append((kept_times, kept_flags))
    return found


def homepage_day(sites: list[tuple[list[float], list[bool]]], day: float) -> tuple[np.ndarray, ...]:
    """On ``day``: each site's p since its newest copy (HACS's default), the paper's g, its
    observations before the day, its newest copy and the prior's mean interval."""
    times, flags, offsets = before(sites, day)
    evidence = interval_evidence(times, flags, offsets)
    prior = fit_interval_prior(evidence)
    alpha, beta = interval_posterior(prior, evidence)
    p = posterior_probabilities(alpha, beta, evidence.last, day, E_DAYS)
    mle = estimate_many(times, flags, offsets)
    g = crawl_probabilities(mle.rate, mle.tau, day, E_DAYS)
    interval = np.full(p.size, prior.mean_interval_days)
    return p, g, evidence.accesses, evidence.last, interval


def thinned_pages(pages: Pages, keep: float, rng: np.random.Generator) -> Pages:
    """Each page's copies kept with probability ``keep``; a kept copy's new links include those
    of the dropped copies before it (the first kept copy is the page's baseline)."""
    times, flags, fresh, site_of = [], [], [], []
    for t, f, links, site in zip(pages.times, pages.flags, pages.fresh, pages.site_of, strict=True):
        kept = rng.random(t.size) < keep
        if not kept.any():
            continue
        carried = np.cumsum(links)[kept]
        counts = np.diff(np.r_[0, carried])
        counts[0] = 0
        pending = np.cumsum(f)[kept]
        changed = np.diff(np.r_[0, pending]) > 0
        changed[0] = False
        times.append(t[kept])
        flags.append(changed)
        fresh.append(counts.astype(np.int64))
        site_of.append(site)
    result = Pages.__new__(Pages)
    result.times, result.flags, result.fresh, result.site_of = times, flags, fresh, site_of
    result.n_sites = pages.n_sites
    result.site = np.array(site_of, dtype=np.int64)
    return result


def website_day(pages: Pages, day: float) -> tuple[np.ndarray, ...]:
    """On ``day``: each site's p since its newest copy (HACS's website level), the paper's g on
    the merged timeline, its observations before the day and its prior mean interval."""
    site_l, page_l, time_l, fresh_l = [], [], [], []
    for number, (t, links, site) in enumerate(
        zip(pages.times, pages.fresh, pages.site_of, strict=True)
    ):
        before_day = t < day
        site_l.append(np.full(int(before_day.sum()), site))
        page_l.append(np.full(int(before_day.sum()), number))
        time_l.append(t[before_day])
        fresh_l.append(links[before_day])
    site, page, time, fresh = (np.concatenate(x) for x in (site_l, page_l, time_l, fresh_l))
    grouped = page_links(site, page, time, fresh)
    known = np.bincount(grouped.page_site, minlength=pages.n_sites)
    if DISPERSION:
        alpha, beta, prior = dispersed_posterior(grouped, pages.n_sites, known)
    else:
        prior, kappa, _ = fit_page_prior(grouped)
        alpha, beta = website_posterior(grouped, pages.n_sites, prior, kappa, known)
    last = np.full(pages.n_sites, -np.inf)
    np.maximum.at(last, site, time)
    copied = known > 0
    p = np.zeros(pages.n_sites)
    p[copied] = posterior_probabilities(alpha[copied], beta[copied], last[copied], day, E_DAYS)
    observations = np.bincount(site, minlength=pages.n_sites)
    with np.errstate(divide="ignore"):
        prior_interval = np.where(known > 0, 1.0 / (known * prior.shape / prior.rate), np.inf)
    # The paper's g on each site's merged timeline.
    order = np.lexsort((page, time, site))
    offsets = np.r_[0, np.cumsum(observations)].astype(np.int64)
    flags = np.concatenate([f[t < day] for f, t in zip(pages.flags, pages.times, strict=True)])
    mle = estimate_many(time[order], flags[order], offsets)
    g = crawl_probabilities(mle.rate, mle.tau, day, E_DAYS)
    return p, g, observations, last, prior_interval


def main() -> int:
    global E_DAYS
    parser = bench_parser(__doc__, sites=400)
    parser.add_argument("--keep", default="0.1,0.3,1.0")
    parser.add_argument("--level", choices=("homepage", "website"), default="homepage")
    parser.add_argument("--e-days", type=float, default=E_DAYS)
    parser.add_argument(
        "--dispersion",
        action="store_true",
        help="website level: a gap-dependent quasi-Poisson reading, measured and left out "
        "(docs/readings.md)",
    )
    args = parser.parse_args()
    E_DAYS = args.e_days
    global DISPERSION
    DISPERSION = args.dispersion
    with demo_archive(args.sites, args.seed, bursts=not args.no_bursts) as demo:
        truth = read_truth(demo)
    observed, _, _ = load(truth, "homepage")
    all_pages = Pages(truth)
    span = (END - START).days
    print(f"Demo archive: {args.sites} sites, seed {args.seed}, {args.level} level, e = {E_DAYS:g}")
    print(
        f"{'keep':>5} {'thin pairs':>10} {'p ≥ 0.99':>9} {'… before the prior mean':>23} "
        f"{'paper g ≥ 0.99':>14} {'max p thin, young copy':>22}"
    )
    for keep in (float(k) for k in args.keep.split(",")):
        rng = np.random.default_rng(args.seed)
        kept: Any = (
            thinned_pages(all_pages, keep, rng)
            if args.level == "website"
            else thinned(observed, keep, rng)
        )
        read_day = website_day if args.level == "website" else homepage_day
        thin, certain, early, paper_certain, worst = _thin_counts(read_day, kept, span)
        print(
            f"{keep:>5.2f} {thin:>10} {certain:>9} {early:>23} {paper_certain:>14} {worst:>22.3f}"
        )
        if FITS:
            fits = np.array(FITS)
            print(
                f"      dispersion: φ∞ {fits[:, 0].min():.2f} … {fits[:, 0].max():.2f}, "
                f"d {sorted(set(fits[:, 1].tolist()))} days"
            )
            FITS.clear()
    return 0


def _thin_counts(read_day: Any, kept: Any, span: int) -> tuple[int, int, int, int, float]:
    """Over the last year, a day a week: the sites on few copies (1 to 4), those HACS reads as
    certain to have changed (p ≥ 0.99), those of them before the prior mean interval had
    passed since their copy, those the paper's g reads as certain, and the largest p of a
    thin site with a young copy."""
    thin = certain = early = paper_certain = 0
    worst = 0.0
    for day in range(span - 365, span, 7):
        p, g, observations, last, interval = read_day(kept, float(day))
        is_thin = (observations > 0) & (observations < 5)
        young = day + E_DAYS - last <= interval
        thin += int(is_thin.sum())
        certain += int((is_thin & (p >= 0.99)).sum())
        early += int((is_thin & (p >= 0.99) & young).sum())
        paper_certain += int((is_thin & (g >= 0.99)).sum())
        if (is_thin & young).any():
            worst = max(worst, float(p[is_thin & young].max()))
    return thin, certain, early, paper_certain, worst


if __name__ == "__main__":
    sys.exit(main())
