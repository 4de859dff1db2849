"""The website level's posterior from its pages' new links, window by window.

Part of :mod:`hacs.evaluation`; pure (NumPy and :mod:`hacs.website`). At website level HACS's
default reads each page of a site on its own (docs/readings.md, "Website level: the sum of the
pages' rates, each from its new links"): a page's evidence is the links no earlier copy of it
held, divided by κ, over the days between its first and last copy in the window; the site's
rate is the sum of its pages' posteriors (:func:`hacs.website.website_posterior`). When a
website table carries ``new_links``, the evaluation reads its posterior the same way, so that
Evaluations 1 and 2 judge the estimate the crawl list ranks by:

* the window of reference point t is [t − 7w, t], both ends included, as for the merged
  timeline (``hacs.evaluation.windows``), so the same sites are eligible;
* the prior and κ at t are :func:`hacs.website.fit_page_prior` on every page's copies in
  [t − 7·prior_weeks, t] (refitted every ``prior_every`` points), so they use nothing after t;
* the sum runs over every page of the site with a copy at or before t, a page with no copy in
  the window entering with the prior (``hacs.website``, "Every known page"), as the crawl list
  counts the pages HACS holds up to the list's date.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from hacs.bayes import GammaPrior
from hacs.evaluation.table import FloatArray, IntArray, ObservationTable
from hacs.website import PageLinks, fit_page_prior, page_links, website_posterior

__all__: list[str] = []


@dataclass(frozen=True, eq=False)
class _PageCopies:
    """A website table's observations in time order, for window look-ups by time."""

    site: IntArray
    page: IntArray
    time: FloatArray
    new_links: IntArray
    n_sites: int
    first_site: IntArray  # each page's site, pages in order of their first copy
    first_time: FloatArray  # each page's first copy, ascending

    def known_pages(self, hi: float) -> IntArray:
        """Each site's number of pages with a copy at or before ``hi``."""
        count = int(np.searchsorted(self.first_time, hi, side="right"))
        result: IntArray = np.bincount(self.first_site[:count], minlength=self.n_sites)
        return result

    def window(self, lo: float, hi: float) -> PageLinks:
        """Every page's copies with lo ≤ time ≤ hi (:func:`hacs.website.page_links`)."""
        first = int(np.searchsorted(self.time, lo, side="left"))
        last = int(np.searchsorted(self.time, hi, side="right"))
        part = slice(first, last)
        return page_links(self.site[part], self.page[part], self.time[part], self.new_links[part])


def _page_copies(table: ObservationTable) -> _PageCopies | None:
    """The table's copies for the page evidence, or None when it holds no link counts."""
    if not table.has_new_links or table.new_links is None:
        return None
    order = np.argsort(table.time, kind="stable")
    site, page, time = table.site[order], table.page[order], table.time[order]
    _, first = np.unique(page, return_index=True)  # each page's first copy (time order)
    first = np.sort(first)
    return _PageCopies(
        site=site,
        page=page,
        time=time,
        new_links=table.new_links[order],
        n_sites=table.site_count,
        first_site=site[first],
        first_time=time[first],
    )


def _page_priors(pages: _PageCopies, t: FloatArray, weeks: int, every: int) -> FloatArray:
    """(shape, rate, κ) at each reference point: :func:`hacs.website.fit_page_prior` on every
    page's window [t − 7·weeks, t] at r = 0, every, 2·every, …, each used until the next."""
    priors = np.empty((t.size, 3))
    row = (1.0, 1.0, 1.0)  # replaced at r = 0
    for r in range(t.size):
        if r % every == 0:
            prior, kappa, _ = fit_page_prior(pages.window(float(t[r]) - 7.0 * weeks, float(t[r])))
            row = (prior.shape, prior.rate, kappa)
        priors[r] = row
    return priors


def _page_posteriors(
    pages: _PageCopies, t: FloatArray, w: int, priors: FloatArray, offsets: IntArray, site: IntArray
) -> tuple[FloatArray, FloatArray]:
    """(α, β) of every (reference point, site) pair, pairs of r at ``offsets[r]:offsets[r+1]``:
    the sum of the posteriors of the site's pages known at t, from their copies in the window
    [t − 7w, t], under r's prior and κ."""
    alpha = np.empty(site.size)
    beta = np.empty(site.size)
    for r in np.flatnonzero(np.diff(offsets)).tolist():
        lo, hi = int(offsets[r]), int(offsets[r + 1])
        prior = GammaPrior(float(priors[r, 0]), float(priors[r, 1]))
        window = pages.window(float(t[r]) - 7.0 * w, float(t[r]))
        site_alpha, site_beta = website_posterior(
            window, pages.n_sites, prior, float(priors[r, 2]), pages.known_pages(float(t[r]))
        )
        alpha[lo:hi], beta[lo:hi] = site_alpha[site[lo:hi]], site_beta[site[lo:hi]]
    return alpha, beta
