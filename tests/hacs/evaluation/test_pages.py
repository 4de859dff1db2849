"""hacs.evaluation.pages: the website level's posterior from its pages' new links, window by
window, as the crawl list reads it (hacs.website)."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from hacs.evaluation import DEFAULT_THETAS, ObservationTable, evaluate, window_scores
from hacs.ranking import posterior_probabilities
from hacs.website import PageLinks, fit_page_prior, page_links, website_posterior
from tests.hacs.evaluation._helpers import Obs, close, random_history, table_of


def slow_website_posterior(
    observations: list[Obs], table: ObservationTable, t: float, w: int, e: float = 7.0
) -> dict[int, float]:
    """p of each site with a copy in [t − 7w, t], straight from hacs.website: the pages of the
    window, the page prior and κ of the 12-week window ending at t, the sum of the posteriors
    of the site's pages copied by t, and p since the site's newest copy in the window."""
    assert table.new_links is not None
    fresh = {
        (int(p), float(x)): int(n)
        for p, x, n in zip(table.page, table.time, table.new_links, strict=True)
    }

    def pages(lo: float, hi: float) -> tuple[PageLinks, list[Obs]]:
        inside = [o for o in observations if lo <= o.time <= hi]
        found = page_links(
            [o.site for o in inside],
            [o.page for o in inside],
            [o.time for o in inside],
            [fresh[(o.page, o.time)] for o in inside],
        )
        return found, inside

    prior, kappa, _ = fit_page_prior(pages(t - 7.0 * 12, t)[0])
    window, inside = pages(t - 7.0 * w, t)
    known = [
        len({o.page for o in observations if o.site == site and o.time <= t})
        for site in range(table.site_count)
    ]
    alpha, beta = website_posterior(window, table.site_count, prior, kappa, known)
    result = {}
    for site in sorted({o.site for o in inside}):
        last = max(o.time for o in inside if o.site == site)
        p = posterior_probabilities(alpha[[site]], beta[[site]], np.array([last]), t, e)
        result[site] = float(p[0])
    return result


@settings(max_examples=25, deadline=None)
@given(st.integers(0, 2**32 - 1))
def test_the_website_posterior_sums_the_pages_new_links_as_the_crawl_list_does(seed: int) -> None:
    """At website level a table with link counts gives the posterior of hacs.website on each
    window's pages (the crawl list's reading); the merged timeline's posterior differs."""
    rng = np.random.default_rng(seed)
    observations = random_history(rng, n_sites=6, horizon=120.0, max_pages=3, max_obs=14)
    table = table_of(observations, 6, seed=seed % 7, new_links=True)
    for t, w in ((98.0, 2), (112.0, 5), (119.5, 1)):
        expected = slow_website_posterior(observations, table, t, w)
        found = window_scores(table, t=t, w_weeks=w, website=True)
        assert found.site.tolist() == sorted(expected)
        for site, p in zip(found.site.tolist(), found.posterior_probability.tolist(), strict=True):
            assert close(p, expected[site], rel=1e-9, abs_=1e-12), (t, w, site)


def test_the_website_reading_needs_the_level_and_the_link_counts() -> None:
    """Without link counts, or read as a homepage level, the merged timeline's posterior stays;
    with both, Evaluation 1 counts the page posterior's selections."""
    rng = np.random.default_rng(5)
    observations = random_history(rng, n_sites=10, horizon=120.0, max_pages=3, max_obs=16)
    linked = table_of(observations, 10, new_links=True)
    plain = table_of(observations, 10)
    t = 112.0
    merged = window_scores(plain, t=t, w_weeks=4).posterior_probability
    np.testing.assert_array_equal(
        window_scores(plain, t=t, w_weeks=4, website=True).posterior_probability, merged
    )
    np.testing.assert_array_equal(
        window_scores(linked, t=t, w_weeks=4).posterior_probability, merged
    )
    pages = window_scores(linked, t=t, w_weeks=4, website=True).posterior_probability
    assert not np.allclose(pages, merged)

    result = evaluate(
        {"website": linked, "homepage": linked}, start=98.0, end=112.0, w_weeks=[4], details=True
    )
    for point in result["points"]:
        found = window_scores(
            linked, t=point["t"], w_weeks=4, website=point["level"] == "website"
        ).posterior_probability
        selected = [int((found >= theta).sum()) for theta in DEFAULT_THETAS]
        assert point["posterior_selected"] == selected, (point["level"], point["t"])
    by_level = {(p["level"], p["t"]): p["posterior_selected"] for p in result["points"]}
    assert any(by_level[("website", t)] != by_level[("homepage", t)] for _, t in by_level)
