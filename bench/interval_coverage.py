"""Interval coverage: does each site's 90 % interval of its mean update interval hold the truth?

Run from the project root::

    .venv/bin/python -m bench.interval_coverage [--sites N] [--seed S] [--no-bursts]

It writes a demo archive with known truth (``hacs_demo``), reads every site's homepage
observations over the whole period as HACS does (DESIGN rules 1–5), fits the collection's prior
(``hacs.bayes.fit_interval_prior``) and prints, by third of sites by capture density (homepage
copies a year), the share of sites whose 90 % interval holds the true mean interval 1/λ
(``truth.json``, ``rate_per_day.homepage``):

* **band** — the central interval of the Gamma(α, β) matched to the posterior
  (``interval_posterior`` and ``interval_credible_bounds``, what HACS showed before);
* **now** — ``interval_bounds``: the central interval of the posterior on the grid, the
  posterior raised to 1/φ (``change_dispersion``: how much more the changed intervals vary than
  independent ones, on the collection), or, when the captures are sparser than the changes, the
  open statement "at least one change every N days", which holds the truth when 1/λ ≤ N;

with the number of open intervals, the share of them that hold the truth, their median N over
the truth, and the median posterior mean rate over the true rate. With bursts, "now, sessions"
is the coverage of the interval between editing sessions, 1 / (λ (1 − n)): a capture after a
session sees one update however many links the session added.

**at its gaps** is the coverage of each page's *pseudo-true* interval (with φ = 1, and now):
the interval of the Poisson page that, over gaps like the page's own copies', would be found
changed as often as the page really is (:func:`pseudo_true_rate`, from a long run of the page's
own process). That is what a Poisson estimate from change/no-change can converge to however many
copies it reads (the maximum likelihood under a wrong model tends to the model nearest the
truth); without bursts it is the page's rate, with bursts it lies between the session rate and
the link rate, nearer the link rate the denser the copies.

Then the website level (``hacs.website``: the sum of the pages' posteriors on their new links
read with κ, its interval widened by the links' dispersion φ), and a synthetic page that changes
every 6–7 days (Poisson) captured every 45 or 90 days for three years, under the demo's prior.
Same seed, same figures.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy.optimize import brentq
from scipy.stats import spearmanr

from bench.common import END, START, before, bench_parser, demo_archive, load, read_truth
from bench.website_rates import Pages
from hacs.bayes import (
    GammaPrior,
    change_dispersion,
    interval_bounds,
    interval_credible_bounds,
    interval_evidence,
    interval_posterior,
)
from hacs.ranking import default_posterior
from hacs.website import fit_page_prior, page_links, website_posterior
from hacs_demo.sessions import session_times

SPAN_DAYS = float((END - START).days)
YEARS = SPAN_DAYS / 365.25
LEVEL = 0.9


def thirds(density: np.ndarray) -> list[tuple[str, np.ndarray]]:
    """The sites by third of capture density (lowest first), as (label, mask)."""
    cuts = np.quantile(density, [1 / 3, 2 / 3])
    third = np.digitize(density, cuts, right=True)
    labels = ("sparsest third", "middle third", "densest third")
    result = []
    for k, label in enumerate(labels):
        mask = third == k
        if mask.any():
            lo, hi = density[mask].min(), density[mask].max()
            result.append((f"{label} ({lo:.1f}–{hi:.1f} copies/yr)", mask))
    return result


def covers(low: np.ndarray, high: np.ndarray, truth: np.ndarray) -> np.ndarray:
    """Whether [low, high] holds each truth; a NaN low is an open interval (no lower bound)."""
    return (np.isnan(low) | (low <= truth)) & (truth <= high)


def window_change_share(events: np.ndarray, gap: float, span: float) -> float:
    """The share of windows (s, s + gap], s in [0, span − gap], holding at least one of the
    sorted ``events`` (days): the chance that a page copied ``gap`` days apart is found changed."""
    if gap >= span:
        return 1.0 if events.size else 0.0
    room = span - gap
    high = np.clip(events, 0.0, room)  # a window starting in [e − gap, e) holds the event e
    low = np.clip(events - gap, 0.0, room)
    reached = np.maximum.accumulate(np.r_[0.0, high[:-1]])
    return float(np.maximum(0.0, high - np.maximum(low, reached)).sum() / room)


def pseudo_true_rate(events: np.ndarray, gaps: np.ndarray, span: float) -> float:
    """The Poisson rate λ* whose chance of a change over each of ``gaps``, 1 − e^(−λ* gap), fits
    the page's true chance p(gap) (:func:`window_change_share`) as the likelihood would: the root
    of Σ gap (p e^(−λ gap) / (1 − e^(−λ gap)) − (1 − p)), the expected score of rule 5's
    change/no-change likelihood. ∞ when every gap holds a change, 0 when none does."""
    gaps = gaps[gaps > 0]
    if gaps.size == 0:
        return float("nan")
    p = np.array([window_change_share(events, g, span) for g in gaps])
    if (p >= 1.0).all():
        return float("inf")
    if (p <= 0.0).all():
        return 0.0

    def score(rate: float) -> float:
        changed = -np.expm1(-rate * gaps)
        return float(np.sum(gaps * (p * (1.0 - changed) / changed - (1.0 - p))))

    if score(RATE_CEILING) > 0:
        return float("inf")
    return float(brentq(score, 1e-9, RATE_CEILING))


RATE_CEILING = 10.0  # changes a day: beyond it the interval is under three hours


def pseudo_true_intervals(truth: dict, observed: list, seed: int) -> np.ndarray:
    """Each site's homepage pseudo-true mean interval (days) at its own copies' gaps, the chance
    of a change over a gap read from a long run (PROCESS_DAYS) of the page's own process: its
    rate, and with bursts its author's branching ratio and follow-up delay
    (``hacs_demo.sessions``; a homepage's sessions do not follow the terms)."""
    bursts = bool(truth["update_model"].get("bursts"))
    rng = np.random.default_rng(seed)
    out = []
    for site, (times, _) in zip(truth["sites"], observed, strict=True):
        rate = float(site["rate_per_day"]["homepage"])
        if bursts:
            habits = site["update_model"]
            events, _ = session_times(
                rng,
                rate=rate,
                branching=habits["branching_ratio"],
                follow_up_days=habits["follow_up_mean_days"],
                total_days=PROCESS_DAYS,
                term_days=None,
            )
        else:
            events = np.sort(rng.uniform(0.0, PROCESS_DAYS, rng.poisson(rate * PROCESS_DAYS)))
        gaps = np.diff(np.unique(np.asarray(times, dtype=float)))
        found = pseudo_true_rate(events, gaps, PROCESS_DAYS)
        out.append(np.inf if found == 0.0 else 1.0 / found)  # 1 / ∞ = 0; NaN stays NaN
    return np.asarray(out)


PROCESS_DAYS = 200 * 365.25  # long enough for the slowest page (one change in 5,000 days)


def _print_ranking(estimate: np.ndarray, rates: list[float], changes: list[list[float]]) -> None:
    """How HACS's rates rank the sites against their true rates, and the ceiling: the
    changes realised in the history, every one counted."""
    realised = np.array([len(c) for c in changes]) / SPAN_DAYS
    hacs_rho = float(spearmanr(estimate, rates).statistic)
    ceiling = float(spearmanr(realised, rates).statistic)
    print(
        f"  Spearman's ρ with the true long-run rate: HACS's rate {hacs_rho:.3f}; ceiling, the "
        f"changes realised in the history, every one counted, {ceiling:.3f}"
    )


@dataclass
class _Coverage:
    """Each homepage's coverage, by the interval it is read against."""

    density: np.ndarray  # observations a year
    used: np.ndarray  # sites with an interval
    now: Any  # HACS's intervals (``interval_bounds``)
    true_interval: np.ndarray
    old: np.ndarray  # the Gamma band's coverage of the true interval
    estimate: np.ndarray  # HACS's rate
    by_session: np.ndarray | None  # HACS's coverage of the interval between sessions (bursts)
    by_gaps: np.ndarray  # HACS's coverage of the interval at its observations' gaps
    by_gaps_plain: np.ndarray  # the same with φ = 1


def _print_thirds(c: _Coverage) -> None:
    """The coverage table, by thirds of observation density, then all sites."""
    bursts = c.by_session is not None
    now, true_interval = c.now, c.true_interval
    new = covers(now.low, now.high, true_interval)
    print(
        f"  {'third':38} {'sites':>5} {'band':>6} {'now':>6} {'open':>5} "
        f"{'open hold':>9} {'N / truth':>9} {'λ̂ / λ':>6}"
        + (f" {'now, sessions':>13}" if bursts else "")
        + f" {'at its gaps, φ = 1':>18} {'now':>6}"
    )
    for name, mask in [*thirds(c.density[c.used]), ("all", np.ones(int(c.used.sum()), bool))]:
        rows = np.flatnonzero(c.used)[mask]
        opened = rows[now.open[rows]]
        ratio = np.median(now.high[opened] / true_interval[opened]) if opened.size else np.nan
        hold = f"{new[opened].mean():.3f}" if opened.size else "–"
        bias = np.median(c.estimate[rows] * true_interval[rows])
        print(
            f"  {name:38} {rows.size:5d} {c.old[rows].mean():6.3f} {new[rows].mean():6.3f} "
            f"{opened.size:5d} {hold:>9} {ratio:9.2f} {bias:6.2f}"
            + (f" {c.by_session[rows].mean():13.3f}" if c.by_session is not None else "")
            + f" {c.by_gaps_plain[rows].mean():18.3f} {c.by_gaps[rows].mean():6.3f}"
        )


def homepage(truth: dict, label: str, seed: int) -> GammaPrior:
    observed, changes, rates = load(truth, "homepage")
    times, flags, offsets = before(observed, SPAN_DAYS + 1.0)
    evidence = interval_evidence(times, flags, offsets)
    # HACS's default posterior: the prior and the reset rate fitted on the collection.
    found = default_posterior(times, flags, offsets)
    prior, reset = found.prior, found.reset_rate
    alpha, beta = found.alpha, found.beta
    band_low, band_high = interval_credible_bounds(alpha, beta, LEVEL)
    dispersion = change_dispersion(times, flags, offsets, alpha / beta)
    plain = interval_bounds(prior, evidence, LEVEL, 1.0, reset)  # φ = 1: changes independent
    now = interval_bounds(prior, evidence, LEVEL, dispersion, reset)
    with np.errstate(divide="ignore"):
        true_interval = 1.0 / np.asarray(rates)
    density = np.diff(offsets) / YEARS
    used = evidence.accesses >= 2
    print(
        f"\n{label}: homepage, {int(used.sum())} of {used.size} sites with an interval; "
        f"prior Gamma({prior.shape:.3g}, {prior.rate:.3g}), mean interval "
        f"{prior.mean_interval_days:.1f} d, reset rate ρ {reset:.2e} a day; changes' "
        f"dispersion φ = {dispersion:.2f}"
    )
    _print_ranking(alpha / beta, rates, changes)
    # With bursts a capture sees an editing session, not each link added in it: the interval
    # between sessions, 1 / (λ (1 − n)), is the one the captures can measure.
    bursts = bool(truth["update_model"].get("bursts"))
    homes = [next(p for p in site["pages"] if p["depth"] == 0) for site in truth["sites"]]
    with np.errstate(divide="ignore"):
        session_interval = 1.0 / np.array([p["session_rate_per_day"] for p in homes])
    pseudo_true = pseudo_true_intervals(truth, observed, seed)
    _print_thirds(
        _Coverage(
            density=density,
            used=used,
            now=now,
            true_interval=true_interval,
            old=covers(band_low, band_high, true_interval),
            estimate=alpha / beta,
            by_session=covers(now.low, now.high, session_interval) if bursts else None,
            by_gaps=covers(now.low, now.high, pseudo_true),
            by_gaps_plain=covers(plain.low, plain.high, pseudo_true),
        )
    )
    closed = used & ~now.open
    widths = now.high[closed] / now.low[closed]
    print(
        f"  closed intervals: median high / low {np.median(widths):.2f} now, "
        f"{np.median(band_high[closed] / band_low[closed]):.2f} in the band"
    )
    return prior


def website(truth: dict, label: str) -> None:
    pages = Pages(truth)
    site_l, page_l, time_l, fresh_l = [], [], [], []
    for number, (t, links, site) in enumerate(
        zip(pages.times, pages.fresh, pages.site_of, strict=True)
    ):
        site_l.append(np.full(t.size, site))
        page_l.append(np.full(t.size, number))
        time_l.append(t)
        fresh_l.append(links)
    site, page, time, fresh = (np.concatenate(x) for x in (site_l, page_l, time_l, fresh_l))
    grouped = page_links(site, page, time, fresh)
    known = np.bincount(grouped.page_site, minlength=pages.n_sites)
    prior, kappa, dispersion = fit_page_prior(grouped)
    alpha, beta = website_posterior(grouped, pages.n_sites, prior, kappa, known)
    low, high = interval_credible_bounds(alpha, beta, LEVEL, dispersion)
    with np.errstate(divide="ignore"):
        true_interval = 1.0 / np.asarray(pages.long_run)
    copies = np.bincount(site, minlength=pages.n_sites) / YEARS
    used = np.isfinite(alpha) & (np.bincount(site, minlength=pages.n_sites) >= 2)
    hit = covers(low, high, true_interval)
    with np.errstate(divide="ignore"):
        held_interval = 1.0 / np.asarray(pages.held_long_run)
    held = covers(low, high, held_interval)
    print(f"\n{label}: website (pages' new links / κ, read with φ), {int(used.sum())} sites")
    for name, mask in [*thirds(copies[used]), ("all", np.ones(int(used.sum()), bool))]:
        rows = np.flatnonzero(used)[mask]
        print(
            f"  {name:38} {rows.size:5d} band {hit[rows].mean():6.3f}, over the pages the "
            f"archive holds {held[rows].mean():6.3f}"
        )


def synthetic(prior: GammaPrior, seed: int, pages: int = 400) -> None:
    """Poisson pages of mean interval 6–7 days captured every ``gap`` days for three years."""
    rng = np.random.default_rng(seed)
    print(
        f"\nsynthetic: a Poisson page changing every 6–7 days, captured every 45 or 90 days "
        f"for {SPAN_DAYS:.0f} days, {pages} pages each, the demo's prior"
    )
    for gap in (45.0, 90.0):
        times_l, flags_l, offsets = [], [], [0]
        true_interval = rng.uniform(6.0, 7.0, pages)
        for mean in true_interval:
            t = np.arange(0.0, SPAN_DAYS, gap)
            changes = np.cumsum(rng.exponential(mean, int(3 * SPAN_DAYS / mean) + 50))
            counts = np.searchsorted(changes, t)
            times_l.append(t)
            flags_l.append(np.r_[False, np.diff(counts) > 0])
            offsets.append(offsets[-1] + t.size)
        evidence = interval_evidence(
            np.concatenate(times_l), np.concatenate(flags_l), np.array(offsets)
        )
        alpha, beta = interval_posterior(prior, evidence)
        band_low, band_high = interval_credible_bounds(alpha, beta, LEVEL)
        now = interval_bounds(prior, evidence, LEVEL)
        old = covers(band_low, band_high, true_interval).mean()
        new = covers(now.low, now.high, true_interval).mean()
        k = 0
        print(
            f"  every {gap:.0f} d: band holds the truth for {old:.3f}, now {new:.3f} "
            f"({int(now.open.sum())} of {pages} open); e.g. truth {true_interval[k]:.1f} d: "
            f"band {band_low[k]:.1f}–{band_high[k]:.1f} d, now "
            + (f"≤ {now.high[k]:.1f} d" if now.open[k] else f"{now.low[k]:.1f}–{now.high[k]:.1f} d")
        )


def main() -> int:
    args = bench_parser(__doc__, sites=400).parse_args()
    bursts = not args.no_bursts
    label = f"demo, {args.sites} sites, seed {args.seed}, " + (
        "with bursts" if bursts else "without bursts"
    )
    with demo_archive(args.sites, args.seed, bursts=bursts) as demo:
        truth = read_truth(demo)
    prior = homepage(truth, label, args.seed)
    website(truth, label)
    synthetic(prior, args.seed)
    return 0


if __name__ == "__main__":
    sys.exit(main())
