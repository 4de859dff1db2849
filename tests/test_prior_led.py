"""A probability that rests mostly on the collection's prior says so: a site with three copies in
a week and no update is listed on the prior's rate, which the site page, the crawl list and Overview
mark; a site with years of copies is not marked."""

from __future__ import annotations

import html
from datetime import timedelta
from typing import Any

import numpy as np
import pytest

from hacs.clock import reference_instant
from hacs_site.clock import today
from scheduling.crawl_lists import CrawlListOptions, crawl_list_store
from scheduling.estimates import estimates_recompute
from scheduling.models import PRIOR_LED, CrawlList, Estimate, RatePrior
from tests.factories import add_observations, make_site

DAY = today()  # the site page reads today


@pytest.fixture()
def thin_and_rich(db: None) -> tuple[Any, Any]:
    t = reference_instant(DAY)
    rng = np.random.default_rng(4)
    sites = []
    # A collection for the prior, as real ones are: sites seen weekly, changing every week to
    # every year (rates spread over two orders of magnitude, so the prior is broad).
    for n, mean_interval in enumerate(np.geomspace(7, 365, 12)):
        site = make_site(author=f"Weekly {n}")
        days = np.arange(700, 0, -7.0) + rng.uniform(0, 1)
        changed = rng.random(days.size) < -np.expm1(-7.0 / mean_interval)
        add_observations(
            site,
            [t - timedelta(days=float(d)) for d in days],
            updates=[bool(c) and i > 0 for i, c in enumerate(changed)],
        )
        sites.append(site)
    thin = make_site(author="Thin")
    add_observations(thin, [t - timedelta(days=d) for d in (30, 26, 22)], updates=[False] * 3)
    estimates_recompute()
    return thin, sites[3]  # changing about monthly, seen 100 times


def test_the_prior_share_is_the_priors_weight_in_the_posterior(
    thin_and_rich: tuple[Any, Any],
) -> None:
    thin, rich = thin_and_rich
    prior = RatePrior.objects.get(level="homepage")
    for site in (thin, rich):
        e = Estimate.objects.get(site=site, level="homepage", method="posterior")
        assert 0 <= e.prior_share <= 1
        assert e.prior_share == pytest.approx(min(1.0, prior.rate / e.posterior_rate), rel=1e-9)
    thin_e = Estimate.objects.get(site=thin, level="homepage", method="posterior")
    rich_e = Estimate.objects.get(site=rich, level="homepage", method="posterior")
    assert thin_e.prior_share > PRIOR_LED and thin_e.rests_on_prior
    assert rich_e.prior_share < PRIOR_LED and not rich_e.rests_on_prior


def test_pages_mark_a_p_that_rests_on_the_prior(
    thin_and_rich: tuple[Any, Any], logged_in_client: Any
) -> None:
    thin, rich = thin_and_rich
    crawl = crawl_list_store(
        day=DAY,
        options=CrawlListOptions(theta=0.0, history_days=1000),
        source=CrawlList.Source.DAILY_JOB,
    ).crawl_list
    assert crawl.entries.get(site=thin).rests_on_prior
    assert not crawl.entries.get(site=rich).rests_on_prior
    page = html.unescape(logged_in_client.get(f"/crawl-list/?list={crawl.pk}").content.decode())
    row = page[page.index(thin.seed_url) :]
    assert "p mostly from the prior" in row[: row.index("</tr>")]
    row = page[page.index(rich.seed_url) :]
    assert "p mostly from the prior" not in row[: row.index("</tr>")]
    site_page = logged_in_client.get(f"/sites/{thin.pk}/").content.decode()
    assert "mostly the prior</span>" in site_page and "note-prior-led" in site_page
    assert "note-prior-led" not in logged_in_client.get(f"/sites/{rich.pk}/").content.decode()
