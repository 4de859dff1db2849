"""Stored estimates at website level: the sum of the pages' posteriors, each from its new links."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import numpy as np
import pytest

from archive.models import Capture, Site
from hacs.bayes import (
    GammaPrior,
    change_dispersion,
    interval_bounds,
    interval_credible_bounds,
    interval_evidence,
    interval_posterior,
)
from hacs.clock import to_days
from hacs.website import fit_page_prior, page_links, website_posterior
from scheduling.estimates import (
    LevelPrior,
    estimates_for_window,
    estimates_recompute,
    timelines_load,
)
from scheduling.models import Estimate, Level, Method, RatePrior
from tests.factories import add_observations, make_site

pytestmark = pytest.mark.django_db

START = datetime(2017, 1, 1, tzinfo=UTC)


def days(*offsets: float) -> list[datetime]:
    return [START + timedelta(days=d) for d in offsets]


@pytest.fixture()
def collection() -> list[Site]:
    """Twelve sites of two or three pages; pages of the busy sites add three links at a time."""
    sites = []
    for n in range(12):
        site = make_site()
        busy = n % 3 == 0
        for p, path in enumerate(["", "teaching/", "teaching/cs101/"][: 2 + n % 2]):
            moments = days(*range(p, 400, 20 + 5 * p + n))
            every = 2 if busy else 5
            flags = [False] + [(i + n + p) % every == 0 for i in range(1, len(moments))]
            add_observations(
                site,
                moments,
                updates=flags,
                page=path,
                depth=min(p, 2),
                new_links=[3 * f if busy else f for f in flags],
            )
        sites.append(site)
    return sites


def test_the_website_posterior_sums_each_pages_link_posterior(collection: list[Site]) -> None:
    estimates_recompute(levels=[Level.WEBSITE], methods=[Method.POSTERIOR])
    stored = RatePrior.objects.get(level=Level.WEBSITE)
    # The same arithmetic by the pure core, over the rows as stored.
    rows = [
        (site_index, hash((c.site_id, c.page_key)), to_days(c.timestamp), c.new_links)
        for site_index, site in enumerate(collection)
        for c in site.captures.filter(is_observation=True)
    ]
    site, page, time, links = (np.array(column) for column in zip(*rows, strict=True))
    pages = page_links(site, page, time, links)
    prior, kappa, dispersion = fit_page_prior(pages)
    assert dispersion > 1.0  # one link or three a changed copy
    assert (stored.shape, stored.rate, stored.links_per_update, stored.dispersion) == pytest.approx(
        (prior.shape, prior.rate, kappa, dispersion), rel=1e-6
    )
    shape, rate = website_posterior(pages, len(collection), prior, kappa)
    wide = interval_credible_bounds(shape, rate, dispersion=dispersion)
    for i, s in enumerate(collection):
        estimate = Estimate.objects.get(site=s, level=Level.WEBSITE, method=Method.POSTERIOR)
        # The prior's optimiser stops within its tolerance, which depends on the pages' order.
        assert estimate.posterior_shape == pytest.approx(shape[i], rel=1e-6)
        assert estimate.posterior_rate == pytest.approx(rate[i], rel=1e-6)
        assert estimate.rate == pytest.approx(shape[i] / rate[i], rel=1e-6)
        # The interval reads the links' dispersion φ; the rate does not.
        assert (estimate.interval_low, estimate.interval_high) == pytest.approx(
            (wide[0][i], wide[1][i]), rel=1e-6
        )
        assert estimate.last_copy_days == pytest.approx(max(time[site == i]))
    busy = [
        e.rate
        for e in Estimate.objects.filter(level=Level.WEBSITE, method=Method.POSTERIOR).order_by(
            "site_id"
        )
    ]
    assert min(busy[0::3]) > max(r for k, r in enumerate(busy) if k % 3)  # type: ignore[type-var]


def test_a_site_estimated_alone_reads_the_stored_prior_and_kappa(collection: list[Site]) -> None:
    estimates_recompute(levels=[Level.WEBSITE], methods=[Method.POSTERIOR])
    whole = Estimate.objects.get(site=collection[4], level=Level.WEBSITE, method=Method.POSTERIOR)
    RatePrior.objects.filter(level=Level.WEBSITE).update(links_per_update=2.0)
    estimates_recompute(
        levels=[Level.WEBSITE], methods=[Method.POSTERIOR], site_ids=[collection[4].pk]
    )
    alone = Estimate.objects.get(site=collection[4], level=Level.WEBSITE, method=Method.POSTERIOR)
    # With κ = 2 each new link counts half an update: the same copies, a lower rate.
    assert alone.last_copy_days == whole.last_copy_days
    assert alone.rate < whole.rate  # type: ignore[operator]
    # A full recompute refits both.
    estimates_recompute(levels=[Level.WEBSITE], methods=[Method.POSTERIOR])
    again = Estimate.objects.get(site=collection[4], level=Level.WEBSITE, method=Method.POSTERIOR)
    assert again.posterior_shape == pytest.approx(whole.posterior_shape)


def test_the_homepage_level_reads_only_homepages(collection: list[Site]) -> None:
    estimates_recompute(levels=[Level.HOMEPAGE, Level.WEBSITE], methods=[Method.POSTERIOR])
    for site in collection:
        homepage = Estimate.objects.get(site=site, level=Level.HOMEPAGE, method=Method.POSTERIOR)
        website = Estimate.objects.get(site=site, level=Level.WEBSITE, method=Method.POSTERIOR)
        assert homepage.observations < website.observations
        assert website.rate > homepage.rate  # type: ignore[operator]


def test_a_page_copied_before_the_window_enters_the_website_rate_with_the_prior() -> None:
    """The website rate sums every page HACS holds a copy of up to the window's end: a page the
    archive did not revisit in the window adds the prior's mean and variance; a page first
    copied after the window's end adds nothing."""
    site = make_site()
    in_window = days(100, 110, 120, 130)
    add_observations(
        site, in_window, updates=[False, True, False, True], page="", new_links=[0, 2, 0, 1]
    )
    add_observations(
        site, days(10, 30), updates=[False, True], page="old/", depth=1, new_links=[0, 4]
    )
    add_observations(
        site, days(200, 210), updates=[False, True], page="later/", depth=1, new_links=[0, 1]
    )
    prior = LevelPrior(GammaPrior(0.8, 60.0), links_per_update=2.0)
    start, end = START + timedelta(days=90), START + timedelta(days=150)
    found = estimates_for_window(
        level=Level.WEBSITE, method=Method.POSTERIOR, start=start, end=end, prior=prior
    )[site.pk]
    home_alpha, home_beta = 0.8 + 3 / 2.0, 60.0 + 30.0  # three new links / κ over 30 days
    mean = home_alpha / home_beta + 0.8 / 60.0
    variance = home_alpha / home_beta**2 + 0.8 / 60.0**2
    assert found.rate == pytest.approx(mean, rel=1e-12)
    assert found.posterior_shape == pytest.approx(mean**2 / variance, rel=1e-12)
    assert found.posterior_rate == pytest.approx(mean / variance, rel=1e-12)
    # Without the old page the sum is the homepage's posterior alone.
    alone = estimates_for_window(
        level=Level.WEBSITE,
        method=Method.POSTERIOR,
        start=start,
        end=end,
        prior=prior,
        site_ids=[site.pk],
    )[site.pk]
    assert alone.rate == pytest.approx(found.rate, rel=1e-12)
    Capture.objects.filter(site=site, page_key=site.canonical_key + "old/").delete()
    without_old = estimates_for_window(
        level=Level.WEBSITE, method=Method.POSTERIOR, start=start, end=end, prior=prior
    )[site.pk]
    assert without_old.rate == pytest.approx(home_alpha / home_beta, rel=1e-12)


def test_the_homepage_prior_stores_the_changes_dispersion_and_its_intervals_read_it(
    collection: list[Site],
) -> None:
    """The stored homepage prior carries φ of hacs.bayes.change_dispersion on the collection's
    timelines; every stored homepage interval is interval_bounds under that prior and φ, and
    a larger φ widens the intervals while the rates stay as they are."""
    estimates_recompute(levels=[Level.HOMEPAGE], methods=[Method.POSTERIOR])
    stored = RatePrior.objects.get(level=Level.HOMEPAGE)
    timelines = timelines_load(level=Level.HOMEPAGE)
    evidence = interval_evidence(timelines.times, timelines.updated, timelines.offsets)
    gamma = GammaPrior(stored.shape, stored.rate)
    alpha, beta = interval_posterior(gamma, evidence)
    phi = change_dispersion(timelines.times, timelines.updated, timelines.offsets, alpha / beta)
    assert stored.dispersion == pytest.approx(phi, rel=1e-9)

    def stored_bounds() -> dict[int, tuple[float | None, float | None, float]]:
        rows = Estimate.objects.filter(level=Level.HOMEPAGE, method=Method.POSTERIOR)
        return {e.site_id: (e.interval_low, e.interval_high, e.rate) for e in rows}

    widths = {}
    for dispersion in (stored.dispersion, 2.5):
        RatePrior.objects.filter(level=Level.HOMEPAGE).update(dispersion=dispersion)
        estimates_recompute(
            levels=[Level.HOMEPAGE],
            methods=[Method.POSTERIOR],
            site_ids=[s.pk for s in collection],  # reads the stored prior
        )
        bounds = interval_bounds(gamma, evidence, dispersion=dispersion)
        found = stored_bounds()
        for i, site_id in enumerate(timelines.site_ids.tolist()):
            low, high, rate = found[site_id]
            assert high == pytest.approx(bounds.high[i], rel=1e-9)
            assert (low is None) == bool(bounds.open[i])
            if low is not None:
                assert low == pytest.approx(bounds.low[i], rel=1e-9)
            assert rate == pytest.approx(alpha[i] / beta[i], rel=1e-9)
        widths[dispersion] = np.median([high / low for low, high, _ in found.values() if low])
    assert widths[2.5] > widths[stored.dispersion] * 1.1
