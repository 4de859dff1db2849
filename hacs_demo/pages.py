"""Which pages an author's site has, and how fast each one changes in the long run.

Each author has a ``/~name/`` homepage with pages to depth 3 (``publications.html``,
``teaching/``, ``teaching/<course>/``, ``projects/<p>/``, ``projects/<p>/<q>/``, ``cv.pdf``,
``photo.jpg``), sometimes a page that has gone (404). HACS ranks a site by its homepage or by
its website (the HTML pages at depth ≤ 2), so both levels need pages that change.

A page's long-run mean rate λ of link-adding events is log-normal as in the HACS paper's
Fig. 4: median interval 110 days at the homepage (σ = 0.7), 300 days for other pages (σ = 0.8),
clipped to 3-5000 days; the website then changes several times faster than its homepage. How
the additions cluster around that mean is ``hacs_demo.sessions``.
"""

from __future__ import annotations

import numpy as np

from hacs_demo.model import XHTML, Page
from hacs_demo.vocabulary import PROJECTS

HOMEPAGE_MEDIAN_INTERVAL_DAYS = 110.0  # of the long-run mean rate, log-normal across sites
HOMEPAGE_SIGMA = 0.7
PAGE_MEDIAN_INTERVAL_DAYS = 300.0
PAGE_SIGMA = 0.8
SHORTEST_INTERVAL_DAYS = 3.0
LONGEST_INTERVAL_DAYS = 5000.0


def _clip(rate: float) -> float:
    return min(max(rate, 1 / LONGEST_INTERVAL_DAYS), 1 / SHORTEST_INTERVAL_DAYS)


def _page_rate(rng: np.random.Generator) -> float:
    return _clip(float(np.exp(rng.normal(np.log(1 / PAGE_MEDIAN_INTERVAL_DAYS), PAGE_SIGMA))))


def draw_pages(rng: np.random.Generator) -> list[Page]:
    """A site's pages, homepage first, each with its long-run rate (0 for files and 404s)."""
    home_rate = float(np.exp(rng.normal(np.log(1 / HOMEPAGE_MEDIAN_INTERVAL_DAYS), HOMEPAGE_SIGMA)))
    home = Page("", "home", "text/html", 0, _clip(home_rate))
    home.base_href = bool(rng.random() < 0.1)
    pages = [home]
    if rng.random() < 0.8:
        mime = XHTML if rng.random() < 0.15 else "text/html"
        pages.append(Page("publications.html", "pubs", mime, 1, _page_rate(rng)))
    pages += _teaching_pages(rng) + _project_pages(rng) + _other_files(rng)
    for page in pages[1:]:
        if page.is_html and page.mime == "text/html":
            page.base_href = bool(rng.random() < 0.2)
    return pages


def _teaching_pages(rng: np.random.Generator) -> list[Page]:
    """``teaching/`` and, usually, the current course's page under it."""
    if rng.random() >= 0.7:
        return []
    pages = [Page("teaching/", "teaching", "text/html", 1, _page_rate(rng))]
    if rng.random() < 0.8:
        course = f"cs{int(rng.integers(100, 800))}"
        pages.append(Page(f"teaching/{course}/", "course", "text/html", 2, _page_rate(rng)))
    return pages


def _project_pages(rng: np.random.Generator) -> list[Page]:
    """A project's page and, sometimes, its data page at depth 3 (outside the website)."""
    if rng.random() >= 0.5:
        return []
    proj = PROJECTS[int(rng.integers(len(PROJECTS)))]
    pages = [Page(f"projects/{proj}/", "project", "text/html", 2, _page_rate(rng))]
    if rng.random() < 0.6:
        pages.append(Page(f"projects/{proj}/data/", "subproject", "text/html", 3, _page_rate(rng)))
    return pages


def _other_files(rng: np.random.Generator) -> list[Page]:
    """A CV (PDF), a photo (JPEG) and a page that has gone: captured, never observations."""
    pages: list[Page] = []
    if rng.random() < 0.6:
        pages.append(Page("cv.pdf", "cv", "application/pdf", 1, 0.0))
    if rng.random() < 0.6:
        pages.append(Page("photo.jpg", "photo", "image/jpeg", 1, 0.0))
    if rng.random() < 0.25:
        pages.append(Page("oldpage.html", "gone", "text/html", 1, 0.0))
    return pages
