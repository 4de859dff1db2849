"""Stored estimates at website level: the sum of the pages' posteriors, each from its new links."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import numpy as np
import pytest

from archive.models import Site
from hacs.clock import to_days
from hacs.website import fit_page_prior, page_links, website_posterior
from scheduling.estimates import estimates_recompute
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
            add_observations(site, moments, updates=flags, page=path, depth=min(p, 2),
                             new_links=[3 * f if busy else f for f in flags])  # fmt: skip
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
    prior, kappa = fit_page_prior(pages)
    assert (stored.shape, stored.rate, stored.links_per_update) == pytest.approx(
        (prior.shape, prior.rate, kappa), rel=1e-6
    )
    shape, rate = website_posterior(pages, len(collection), prior, kappa)
    for i, s in enumerate(collection):
        estimate = Estimate.objects.get(site=s, level=Level.WEBSITE, method=Method.POSTERIOR)
        # The prior's optimiser stops within its tolerance, which depends on the pages' order.
        assert estimate.posterior_shape == pytest.approx(shape[i], rel=1e-6)
        assert estimate.posterior_rate == pytest.approx(rate[i], rel=1e-6)
        assert estimate.rate == pytest.approx(shape[i] / rate[i], rel=1e-6)
        assert estimate.last_copy_days == pytest.approx(max(time[site == i]))
    busy = [e.rate for e in Estimate.objects.filter(level=Level.WEBSITE, method=Method.POSTERIOR)
            .order_by("site_id")]  # fmt: skip
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
