"""Rows for database tests: plain functions, every field defaulted with ``kw.setdefault``.

Each returns the saved row(s); pass any model field to override its default.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import UTC, datetime
from typing import Any

from archive.models import Capture, LinkSnapshot, Site
from hacs.clock import to_days
from scheduling.models import Estimate

PASSWORD = "correct horse battery staple"
WHEN = datetime(2017, 3, 4, 5, 6, 7, tzinfo=UTC)


# What an estimate holds, in the order the tests compare stored estimates.
ESTIMATE_FIGURES = (
    "level",
    "method",
    "rate",
    "tau",
    "observations",
    "updates",
    "posterior_shape",
    "posterior_rate",
)


# What a capture holds, in the order the tests compare a collection's stored captures.
CAPTURE_FIGURES = (
    "site__canonical_key",
    "urlkey",
    "timestamp",
    "kind",
    "is_observation",
    "page_index",
    "link_floor",
    "new_links",
)


def stored_captures(*more: str) -> list[tuple[Any, ...]]:
    """Every stored capture's figures (and ``more`` fields), sorted: a collection's captures to
    compare with another run's."""
    return sorted(Capture.objects.values_list(*CAPTURE_FIGURES, *more))


def stored_estimates(*, digits: int | None = None) -> list[tuple[Any, ...]]:
    """Every stored estimate's figures with its site and window, sorted. ``digits``: floats to
    that many significant digits, for runs that finished their sites in other batches (the
    collection's prior is a sum over its sites, added up in another order, which moves the last
    bits of a float)."""
    rows = Estimate.objects.values_list(
        "site__canonical_key", *ESTIMATE_FIGURES, "window_start", "window_end"
    )

    def rounded(value: Any) -> Any:
        if digits is not None and isinstance(value, float):
            return float(f"{value:.{digits}g}")
        return value

    return sorted(tuple(rounded(v) for v in row) for row in rows)


def make_user(username: str = "librarian", *, role: str = "librarian", **kw: Any) -> Any:
    """A user who is a ``librarian`` (the default), a ``viewer`` or an ``admin``."""
    from django.contrib.auth import get_user_model

    from dashboard.roles import make_librarian

    kw.setdefault("password", PASSWORD)
    user_model = get_user_model()
    if role == "admin":
        return user_model.objects.create_superuser(username=username, email="", **kw)
    user = user_model.objects.create_user(username=username, **kw)
    if role == "librarian":
        make_librarian(user)
    return user


def make_site(**kw: Any) -> Site:
    n = Site.objects.count() + 1
    kw.setdefault("seed_url", f"http://www.cs.example.edu/~author{n}/")
    kw.setdefault("canonical_key", f"edu,example,cs)/~author{n}")
    kw.setdefault("author", f"Author {n}")
    return Site.objects.create(**kw)


def make_capture(site: Site, **kw: Any) -> Capture:
    """A 200 HTML observation of the site's homepage at :data:`WHEN` (no update data)."""
    kw.setdefault("url", site.seed_url)
    kw.setdefault("urlkey", site.canonical_key)
    kw.setdefault("page_key", kw["urlkey"])
    kw.setdefault("timestamp", WHEN)
    kw.setdefault("depth", 0)
    kw.setdefault("mimetype", "text/html")
    kw.setdefault("status", 200)
    kw.setdefault("digest", "AAAA")
    kw.setdefault("kind", Capture.Kind.OBSERVATION)
    kw.setdefault("is_observation", kw["kind"] in (Capture.Kind.OBSERVATION, Capture.Kind.REVISIT))
    return Capture.objects.create(site=site, **kw)


def make_estimate(site: Site, **kw: Any) -> Estimate:
    """The site's homepage estimate by the observed method; ``tau_days`` follows ``tau``."""
    kw.setdefault("level", "homepage")
    kw.setdefault("method", "observed")
    kw.setdefault("rate", 0.01)
    tau = kw.setdefault("tau", datetime(2024, 1, 1, tzinfo=UTC))
    kw.setdefault("tau_days", to_days(tau) if tau is not None else None)
    kw.setdefault("observations", 10)
    kw.setdefault("updates", 3)
    return Estimate.objects.create(site=site, **kw)


def make_posterior_estimate(site: Site, **kw: Any) -> Estimate:
    """The site's homepage estimate by the posterior method: a Gamma(shape, shape / rate)
    posterior (mean ``rate``) and the newest copy at ``last_copy`` (default: ``tau``)."""
    kw.setdefault("method", "posterior")
    rate = kw.setdefault("rate", 0.01)
    shape = kw.pop("shape", 2.0)
    kw.setdefault("posterior_shape", None if rate is None else shape)
    kw.setdefault("posterior_rate", None if not rate else shape / rate)
    estimate = make_estimate(site, **kw)
    copy = kw.get("last_copy", estimate.tau)
    if "last_copy_days" not in kw:
        estimate.last_copy = copy
        estimate.last_copy_days = to_days(copy) if copy is not None else None
        estimate.save(update_fields=["last_copy", "last_copy_days"])
    return estimate


def make_snapshot(*, links: Iterable[str] = (), **kw: Any) -> LinkSnapshot:
    """A parsed link snapshot; ``links`` are stored sorted, as the importer stores them."""
    held = sorted(set(links))
    kw.setdefault("urlkey", "edu,example,cs)/~author1")
    kw.setdefault("digest", "AAAA")
    kw.setdefault("status", LinkSnapshot.Status.OK)
    kw.setdefault("links", "\n".join(held))
    kw.setdefault("link_count", len(held))
    return LinkSnapshot.objects.create(**kw)


def add_observations(
    site: Site,
    moments: Sequence[datetime],
    *,
    updates: Sequence[bool] | None = None,
    floors: Sequence[int] | None = None,
    page: str = "",
    depth: int = 0,
    unreadable: Iterable[int] = (),
    new_links: Sequence[int] | None = None,
) -> list[Capture]:
    """Observations of one page of ``site`` at ``moments`` (in time order), with update data.

    ``page`` is the path after the seed ("" is the homepage). The update data is what the
    importer stores (``page_index``, ``link_floor``, see ``hacs.updates``), given either as
    ``updates`` — True: the observation adds a brand-new link (floor −1), False: it adds
    nothing (floor i − 1) — or as the ``floors`` themselves. ``unreadable`` observations (by
    position) have no page index, as when their content could not be fetched; the others are
    numbered 0, 1, … as the importer numbers them. ``new_links`` (links no earlier copy of the
    page held) defaults to one for an observation with a brand-new link, else none.
    """
    if (updates is None) == (floors is None):
        raise ValueError("give either updates or floors")
    if len(updates if updates is not None else floors or ()) != len(moments):
        raise ValueError("give one update flag or floor per moment")
    skipped = set(unreadable)
    key = site.canonical_key + page
    rows, index = [], 0
    for i, moment in enumerate(moments):
        readable = i not in skipped
        if floors is not None:
            floor = min(floors[i], index)
        else:
            assert updates is not None
            floor = -1 if updates[i] else index - 1
        new = new_links[i] if new_links is not None else int(floor == -1)
        row = observation_of(site, page, key, moment, digest=f"D{i}", depth=depth)
        if readable:
            row.page_index, row.link_floor, row.new_links = index, floor, new
        rows.append(row)
        index += readable
    return Capture.objects.bulk_create(rows)


def observation_of(
    site: Site, page: str, key: str, moment: datetime, *, digest: str, depth: int
) -> Capture:
    """An unsaved observation of one page of ``site``, without update data (unreadable)."""
    return Capture(
        site=site,
        url=site.seed_url + page.lstrip("/"),
        urlkey=key,
        page_key=key,
        timestamp=moment,
        depth=depth,
        mimetype="text/html",
        status=200,
        digest=digest,
        kind=Capture.Kind.OBSERVATION,
        is_observation=True,
    )
