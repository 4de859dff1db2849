"""A synthetic paper-scale collection of scholarly homepages, as the Internet Archive indexes it.

Run ``python -m bench.collection [--sites N] [--seed S]`` to print its distribution; the import
bench (``python -m bench.import_cost --paper-scale``) serves it from the fake Internet Archive.
Everything is drawn from ``--seed``: the same seed gives the same collection, line for line.

Where the numbers come from. **Paper** is the HACS paper (``shared/papers/hacs-scholarly-
webpage-updates.txt``, Section III-A and the conclusion); **realdata** the Internet Archive CDX
answers recorded by edgi ``wayback`` (``shared/realdata/edgi-wayback``); **assumption** a value
chosen here, with no measurement behind it: change it with the spec, not the code.

* Seeds: 20,000 (paper: 19,977 homepages). 87.35 % of them are archived at all (paper: TimeMaps
  for 21,171 of 24,236 homepages); the others have no capture.
* Kinds of seed (assumption; the paper kept only URLs with a tilde, so its collection is all
  institutional, and says only that 24,236 of 139,910 Google Scholar homepages had one):
  60 % institutional user directories (``/~name/``, or ``/people/name/`` and ``/homes/name/``
  on a fifth and a twentieth of the hosts), 22 % personal domains (one seed a host), 12 %
  ``name.github.io`` (one host per user), 6 % Google Sites (``sites.google.com/view/name`` or
  ``/site/name``, one shared host).
* Institutional host sizes (assumption): seeds per host drawn from P(k) ∝ k^-2, 1 ≤ k ≤ 800, so
  about 60 % of the hosts hold one seed and a dozen hold hundreds. Each host also holds other
  people's pages (assumption: one user not in the collection per seed, a homepage and depth-1
  pages, median 2) and 3 + k/10 department pages, captured like seeds; Google Sites holds 20
  other sites a seed captured at a fifth of a seed's rate (assumption; the real platform holds
  millions of sites: a host query there is out of the question). A host query on a large host
  thus reads its other people's pages too, and its whole history counts against the server's
  read cap (``testbed.ia_server``).
* Pages per seed (depth ≤ 2 is HACS's scope, paper Step 2): depth-1 pages log-normal, median 5,
  σ 1.0 (cap 200); depth-2 median 5, σ 1.2 (cap 400); deeper pages median 2, σ 1.0 (cap 100),
  which a refresh reads and discards. That is 19 in-scope pages a seed on average; the paper's
  D2 has 581,603 pages for 19,977 websites (29 a site; it also says 227.49), with a tail to
  35,056 that the caps cut (assumption beyond the mean).
* Capture rate: each seed's homepage is captured as a Poisson process whose mean interval is
  log-normal, median 50 days, σ 0.72 (paper: the median interval of 80 % of homepages lies
  between 20 and 127 days; ln 20 and ln 127 are the 10th and 90th percentiles). A depth-1 page
  is captured at 0.2 times its seed's rate, depth 2 at 0.08, deeper at 0.03, each page with a
  log-normal jitter of σ 0.5 (assumption). History: 2012-06-01 to 2018-06-01 (assumption; the
  paper evaluates 2015-06-01 to 2018-06-01 and notes denser captures from 2015, which this
  ignores: rates are constant in time).
* Content: a homepage gains a new version (a new link) as a Poisson process whose mean interval
  is log-normal with mean 141.5 days (paper: new links every 141.5 days on a homepage, rates
  log-normal), σ 1.0 (assumption). The pages below it share the rest of the website's rate:
  the paper's websites gain a link every 75 days, so a site's n other pages gain one every
  1 / (1/75 - 1/141.5) = 160 days together, each n times more rarely. 30 % of pages are
  dynamic (a counter, a date): half of their captures carry a fresh digest without a new link
  (assumption; realdata: 23–53 % of big sites' homepage captures change digest). 7 % of
  captures are redirects and 2 % are 404 (assumption; realdata big sites show 25–30 %
  redirects); an unchanged capture is recorded as ``warc/revisit`` three times in ten
  (assumption).
* Nights: the archive keeps capturing at the same rates after 2018-06-01; a capture made on
  night n is indexed that night with probability 0.6, else 1 + a geometric number of nights
  later (mean 2 more, at most 30, assumption; docs/operating.md notes the archive indexes late).
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from functools import lru_cache
from typing import Any

import numpy as np
from numpy.typing import NDArray

from bench.common import bench_parser

#: Arrays of page numbers, seconds, versions, hashes.
Array = NDArray[Any]

DAY = 86_400
KINDS = ("institution", "personal", "github", "google")
SYLLABLES = (
    "an",
    "be",
    "ca",
    "de",
    "el",
    "fa",
    "go",
    "ha",
    "in",
    "jo",
    "ka",
    "li",
    "ma",
    "ne",
    "ol",
    "pa",
    "ra",
    "sa",
    "ta",
    "ul",
    "va",
    "wi",
    "ya",
    "zo",
    "ri",
    "mo",
    "lu",
    "ki",
    "er",
    "st",
)
DEPTH1 = (
    "publications.html",
    "teaching/",
    "research/",
    "cv.pdf",
    "students/",
    "projects/",
    "talks.html",
    "software/",
    "courses/",
    "bio.html",
    "papers/",
    "group/",
)


@dataclass(frozen=True)
class CollectionSpec:
    """The distribution's parameters (module docstring: where each comes from)."""

    seeds: int = 20_000
    seed: int = 0
    start: date = date(2012, 6, 1)
    end: date = date(2018, 6, 1)  # the archive's "today": nights come after it
    archived_share: float = 0.8735
    kind_shares: tuple[float, float, float, float] = (0.60, 0.22, 0.12, 0.06)
    host_size_exponent: float = 2.0
    host_size_max: int = 800
    others_per_seed: float = 1.0
    department_pages_per: int = 10  # a host of k seeds has 3 + k // 10 department pages
    google_others_per_seed: float = 20.0
    capture_interval_median: float = 50.0
    capture_interval_sigma: float = 0.72
    depth_factor: tuple[float, float, float] = (0.2, 0.08, 0.03)  # depth 1, 2, deeper
    page_jitter_sigma: float = 0.5
    pages_depth1: tuple[float, float, int] = (5.0, 1.0, 200)  # median, sigma, cap
    pages_depth2: tuple[float, float, int] = (5.0, 1.2, 400)
    pages_deep: tuple[float, float, int] = (2.0, 1.0, 100)
    other_pages: tuple[float, float, int] = (2.0, 1.0, 20)  # someone else's depth-1 pages
    update_interval_mean: float = 141.5
    website_update_interval_mean: float = 75.0
    update_interval_sigma: float = 1.0
    dynamic_share: float = 0.3
    dynamic_noise: float = 0.5
    redirect_share: float = 0.07
    missing_share: float = 0.02
    revisit_share: float = 0.3
    same_night_share: float = 0.6
    lag_mean_extra: float = 2.0
    lag_max: int = 30
    horizon_nights: int = 60  # versions are drawn this far past ``end``
    # Seeds the archive first captures after ``end`` (a share of the unarchived ones, each from a
    # day drawn over ``late_nights``), and seeds with ``heavy_pages`` more depth-2 pages (the
    # first seed of each of the largest institutional hosts), whose first import runs past
    # 5,000 rows a page: both off by default, on in ``bench.nightly_refresh``.
    late_share: float = 0.0
    late_nights: int = 90
    heavy_seeds: int = 0
    heavy_pages: int = 3_000


@dataclass
class Seed:
    url: str
    host: int
    kind: str
    family: str  # the path family a prefix group shares ("~", "people", "homes") or ""
    archived: bool
    pages: list[int] = field(default_factory=list)  # in scope (depth <= 2)


@dataclass
class Host:
    name: str
    kind: str
    seeds: list[int] = field(default_factory=list)
    pages: list[int] = field(default_factory=list)  # every page, seeds' and others'


def _lognormal(rng: np.random.Generator, median: float, sigma: float, size: int) -> Array:
    return np.asarray(median * np.exp(sigma * rng.standard_normal(size)))


def _count(rng: np.random.Generator, spec: tuple[float, float, int]) -> int:
    median, sigma, cap = spec
    return int(min(cap, round(float(_lognormal(rng, median, sigma, 1)[0]))))


def _host_key(host: str) -> str:
    """The SURT host of a host name, as the Internet Archive keys it (``www.`` dropped)."""
    labels = host.lower().split(".")
    if labels[0] == "www":
        labels = labels[1:]
    return ",".join(reversed(labels))


def urlkey_of(url: str) -> str:
    """The urlkey of the collection's plain URLs (scheme, host, lower-case path, no query)."""
    host, _, path = url.split("://", 1)[1].partition("/")
    path = "/" + path.lower()
    if len(path) > 1 and path.endswith("/"):
        path = path[:-1]
    return f"{_host_key(host)}){path}"


@lru_cache(maxsize=4096)
def _day_text(day: int) -> str:
    return (datetime(1970, 1, 1, tzinfo=UTC) + timedelta(days=day)).strftime("%Y%m%d")


def timestamp_text(seconds: int) -> str:
    """A 14-digit Wayback timestamp of seconds since 1970 (UTC)."""
    day, rest = divmod(int(seconds), DAY)
    return f"{_day_text(day)}{rest // 3600:02d}{rest // 60 % 60:02d}{rest % 60:02d}"


def _epoch(day: date) -> int:
    return int(datetime(day.year, day.month, day.day, tzinfo=UTC).timestamp())


class Collection:
    """The seeds, hosts and pages of a synthetic collection and the archive's captures of them.

    ``history_lines()`` gives the CDX lines indexed by ``spec.end``; ``night(n)`` the lines
    indexed on night n (call nights in order); ``body_for(timestamp, url)`` the page a memento
    of a capture holds (its links grow with its versions).
    """

    def __init__(self, spec: CollectionSpec) -> None:
        self.spec = spec
        self.rng = np.random.default_rng(spec.seed)
        self.seeds: list[Seed] = []
        self.hosts: list[Host] = []
        self.urls: list[str] = []
        self.page_seed: list[int] = []  # the seed whose scope holds the page, or -1
        self.depth: list[int] = []  # 0-2 in a seed's scope, 3 deeper, -1 someone else's
        self.rate: list[float] = []  # captures a day
        self.update_scale: list[float] = []  # a page's mean version interval / a homepage's
        self.first_capture: dict[int, int] = {}  # a late seed's pages: no capture before (s)
        self._build()
        self.urlkeys = [urlkey_of(u) for u in self.urls]
        self.urlkey_page = {key: page for page, key in enumerate(self.urlkeys)}
        self.page_index = {url: i for i, url in enumerate(self.urls)}
        self._draw_versions()
        self.start_s, self.end_s = _epoch(spec.start), _epoch(spec.end)
        self._night_times: list[tuple[Array, Array]] = []
        self._pending: dict[int, list[tuple[str, int, int]]] = {}
        self.history: tuple[Array, Array] = (np.empty(0, np.int64), np.empty(0, np.int64))
        self._nights_done = 0
        self.last_version = np.full(len(self.urls), -1, dtype=np.int64)
        self.newest = np.zeros(len(self.seeds), dtype=np.int64)  # newest visible capture

    # --- Seeds, hosts and pages ---------------------------------------------------------------
    def _name(self, taken: set[str]) -> str:
        while True:
            size = 2 + int(self.rng.random() < 0.6)
            name = "".join(SYLLABLES[i] for i in self.rng.integers(0, len(SYLLABLES), size))
            if name not in taken:
                taken.add(name)
                return name

    def _host_sizes(self, total: int) -> list[int]:
        spec = self.spec
        sizes_k = np.arange(1, spec.host_size_max + 1)
        weights = sizes_k**-spec.host_size_exponent
        sizes: list[int] = []
        while sum(sizes) < total:
            sizes.append(int(self.rng.choice(sizes_k, p=weights / weights.sum())))
        sizes[-1] -= sum(sizes) - total
        return sorted((s for s in sizes if s > 0), reverse=True)

    def _page(self, url: str, seed: int, depth: int, rate: float, host: int) -> int:
        self.urls.append(url)
        self.page_seed.append(seed)
        self.depth.append(depth)
        self.rate.append(rate)
        self.update_scale.append(1.0)
        self.hosts[host].pages.append(len(self.urls) - 1)
        if seed >= 0 and depth <= 2:
            self.seeds[seed].pages.append(len(self.urls) - 1)
        return len(self.urls) - 1

    def _site_pages(self, base: str, seed: int, rate: float, host: int) -> None:
        """A seed's homepage at ``base`` (ending in "/") and its pages at depths 1, 2 and
        deeper."""
        spec = self.spec
        jitter = _lognormal(self.rng, 1.0, spec.page_jitter_sigma, 1 + 200 + 400 + 100)
        home = self._page(base, seed, 0, rate, host)
        dirs = []
        for j in range(_count(self.rng, spec.pages_depth1)):
            name = DEPTH1[j] if j < len(DEPTH1) else f"p{j}.html"
            self._page(base + name, seed, 1, rate * spec.depth_factor[0] * jitter[1 + j], host)
            if name.endswith("/"):
                dirs.append(base + name)
        dirs = dirs or [base + "files/"]
        for j in range(_count(self.rng, spec.pages_depth2)):
            parent = dirs[j % len(dirs)]
            leaf = f"item{j}.pdf" if j % 4 == 3 else f"item{j}/"
            self._page(parent + leaf, seed, 2, rate * spec.depth_factor[1] * jitter[201 + j], host)
        for j in range(_count(self.rng, spec.pages_deep)):
            parent = dirs[j % len(dirs)]
            self._page(
                f"{parent}item{j}/notes/n{j}.html",
                seed,
                3,
                rate * spec.depth_factor[2] * jitter[601 + j],
                host,
            )
        self._subpages_share(home)

    def _subpages_share(self, home: int) -> None:
        """Spread the site's new links over its pages below the homepage: together they gain
        one every 1 / (1/75 - 1/141.5) days (the paper's website and homepage rates), so each
        of n pages gains one n times more rarely."""
        spec = self.spec
        below = len(self.urls) - 1 - home
        factor = 1 / (spec.update_interval_mean / spec.website_update_interval_mean - 1)
        for page in range(home + 1, len(self.urls)):
            self.update_scale[page] = below * factor

    def _seed_rate(self) -> float:
        spec = self.spec
        interval = float(
            _lognormal(self.rng, spec.capture_interval_median, spec.capture_interval_sigma, 1)[0]
        )
        return 1.0 / interval

    def _add_seed(self, url: str, host: int, kind: str, family: str) -> int:
        archived = bool(self.rng.random() < self.spec.archived_share)
        self.seeds.append(Seed(url, host, kind, family, archived))
        self.hosts[host].seeds.append(len(self.seeds) - 1)
        return len(self.seeds) - 1

    def _build(self) -> None:
        spec = self.spec
        shares = np.asarray(spec.kind_shares) / sum(spec.kind_shares)
        counts = np.floor(shares * spec.seeds).astype(int)
        counts[0] += spec.seeds - counts.sum()
        taken_hosts: set[str] = set()
        for size in self._host_sizes(int(counts[0])):
            self._institution(size, taken_hosts)
        for kind, count in zip(KINDS[1:3], counts[1:3], strict=True):
            for _ in range(count):
                name = self._name(taken_hosts)
                if kind == "github":
                    host_name = f"{name}.github.io"
                else:
                    tld = ("net", "com", "org", "info", "me")[int(self.rng.integers(0, 5))]
                    host_name = ("www." if self.rng.random() < 0.5 else "") + f"{name}.{tld}"
                self.hosts.append(Host(host_name, kind))
                seed = self._add_seed(f"https://{host_name}/", len(self.hosts) - 1, kind, "")
                self._seed_site(seed, f"https://{host_name}/")
        self._google(int(counts[3]))
        self._heavy()

    def _heavy(self) -> None:
        """``heavy_pages`` more depth-2 pages for the first archived seed of each of the
        ``heavy_seeds`` largest institutional hosts, each captured at a depth-2 page's rate."""
        spec = self.spec
        hosts = sorted(
            (h for h in self.hosts if h.kind == "institution"), key=lambda h: -len(h.seeds)
        )[: spec.heavy_seeds]
        for host in hosts:
            seed = next((i for i in host.seeds if self.seeds[i].archived), None)
            if seed is None:
                continue
            home = self.seeds[seed].pages[0]
            base, rate = self.urls[home], self.rate[home] * spec.depth_factor[1]
            jitter = _lognormal(self.rng, 1.0, spec.page_jitter_sigma, spec.heavy_pages)
            for j in range(spec.heavy_pages):
                self._page(
                    f"{base}archive/{j}/", seed, 2, rate * float(jitter[j]), self.seeds[seed].host
                )

    def _seed_site(self, seed: int, base: str) -> None:
        """The seed's pages, captured only if the archive holds the seed at all (or, for a
        late seed, from its first capture after ``end`` on)."""
        spec = self.spec
        late = (
            spec.late_share > 0
            and not self.seeds[seed].archived
            and self.rng.random() < spec.late_share
        )
        rate = self._seed_rate() if self.seeds[seed].archived or late else 0.0
        first = len(self.urls)
        self._site_pages(base, seed, rate, self.seeds[seed].host)
        if late:
            day = _epoch(spec.end) + int(self.rng.integers(0, spec.late_nights * DAY))
            self.first_capture.update(dict.fromkeys(range(first, len(self.urls)), day))

    def _institution(self, size: int, taken_hosts: set[str]) -> None:
        spec = self.spec
        uni = self._name(taken_hosts)
        forms = (
            f"www.cs.{uni}.edu",
            f"{uni}.edu",
            f"people.cs.{uni}.edu",
            f"www.{uni}.ac.uk",
            f"math.{uni}.edu",
        )
        name = forms[int(self.rng.integers(0, len(forms)))]
        draw = self.rng.random()
        family = "~" if draw < 0.75 else ("people" if draw < 0.95 else "homes")
        self.hosts.append(Host(name, "institution"))
        host = len(self.hosts) - 1
        users: set[str] = set()

        def base_of(user: str, fam: str) -> str:
            return f"http://{name}/~{user}/" if fam == "~" else f"http://{name}/{fam}/{user}/"

        for _ in range(size):
            user = self._name(users)
            fam = family if self.rng.random() < 0.9 else "~"
            seed = self._add_seed(base_of(user, fam), host, "institution", fam)
            self._seed_site(seed, base_of(user, fam))
        for _ in range(round(size * spec.others_per_seed)):
            base = base_of(self._name(users), family)
            rate = self._seed_rate()
            home = self._page(base, -1, -1, rate, host)
            for j in range(_count(self.rng, spec.other_pages)):
                jitter = float(_lognormal(self.rng, 1.0, spec.page_jitter_sigma, 1)[0])
                self._page(
                    f"{base}{DEPTH1[j % len(DEPTH1)]}",
                    -1,
                    -1,
                    rate * spec.depth_factor[0] * jitter,
                    host,
                )
            self._subpages_share(home)
        for j in range(3 + size // spec.department_pages_per):
            page = ("", "news/", "courses/", "events/", "research/")[j % 5]
            url = f"http://{name}/{page}" + (f"d{j}.html" if j >= 5 else "")
            self._page(url, -1, -1, self._seed_rate(), host)

    def _google(self, count: int) -> None:
        self.hosts.append(Host("sites.google.com", "google"))
        host = len(self.hosts) - 1
        names: set[str] = set()
        for _ in range(count):
            form = "view" if self.rng.random() < 0.7 else "site"
            base = f"https://sites.google.com/{form}/{self._name(names)}/"
            seed = self._add_seed(base, host, "google", "")
            self._seed_site(seed, base)
        for _ in range(round(count * self.spec.google_others_per_seed)):
            base = f"https://sites.google.com/view/{self._name(names)}/"
            self._page(base, -1, -1, 0.2 * self._seed_rate(), host)
            self._page(base + "home", -1, -1, 0.05 * self._seed_rate(), host)

    # --- Versions and captures ----------------------------------------------------------------
    def _draw_versions(self) -> None:
        """Each page's version times (seconds), from ``start`` to ``end`` + the horizon."""
        spec = self.spec
        n = len(self.urls)
        sigma = spec.update_interval_sigma
        mean = spec.update_interval_mean
        intervals = _lognormal(self.rng, mean * math.exp(-sigma * sigma / 2), sigma, n)
        intervals *= np.asarray(self.update_scale)
        span = (spec.end - spec.start).days + spec.horizon_nights
        counts = self.rng.poisson(span / intervals)
        start = _epoch(spec.start)
        times = self.rng.integers(start, start + span * DAY, int(counts.sum()))
        owners = np.repeat(np.arange(n, dtype=np.int64), counts)
        # One sorted array of (page, time) keys: a capture's version is how many keys of its
        # page lie at or before it.
        self.version_keys = np.sort(owners << 40 | times)
        self.version_offsets = np.concatenate([[0], np.cumsum(counts)])
        self.dynamic = self.rng.random(n) < spec.dynamic_share

    def _versions(self, pages: Array, seconds: Array) -> Array:
        found = np.searchsorted(self.version_keys, pages << 40 | seconds, side="right")
        return np.asarray(found - self.version_offsets[pages])

    def _flags(self, pages: Array, seconds: Array) -> tuple[Array, Array]:
        """(status kind: 0 = 200, 1 = redirect, 2 = 404; a fresh digest without a new version)
        of each capture, a function of (seed, page, time) alone, so that a memento's body can
        be told again from its URL and timestamp."""
        spec = self.spec
        draw = _uniform(_mix(pages, seconds, spec.seed, 1))
        kinds = np.where(draw < spec.redirect_share, 1, 0)
        kinds = np.where(
            (draw >= spec.redirect_share) & (draw < spec.redirect_share + spec.missing_share),
            2,
            kinds,
        )
        noise = self.dynamic[pages] & (
            _uniform(_mix(pages, seconds, spec.seed, 2)) < spec.dynamic_noise
        )
        return kinds, noise

    def _lines(self, pages: Array, seconds: Array) -> list[str]:
        """CDX lines of captures sorted by (page, time); pages' last versions move on."""
        if len(pages) == 0:
            return []
        spec = self.spec
        versions = self._versions(pages, seconds)
        kinds, noise = self._flags(pages, seconds)
        tag = np.where(noise, seconds, 0)
        digest_a = _mix(pages, versions, spec.seed, 3) ^ tag.astype(np.uint64)
        digest_b = _mix(pages, versions, spec.seed, 4) + tag.astype(np.uint64)
        # What each capture's content is, to tell whether it repeats the one before: its
        # version, or -2 for a fresh digest and -3 for a redirect or a 404.
        state = np.where(kinds > 0, -3, np.where(noise, -2, versions))
        first = np.ones(len(pages), dtype=bool)
        first[1:] = pages[1:] != pages[:-1]
        previous = np.empty_like(state)
        previous[1:] = state[:-1]
        previous[first] = self.last_version[pages[first]]
        revisit = (state >= 0) & (state == previous)
        revisit &= _uniform(_mix(pages, seconds, spec.seed, 5)) < spec.revisit_share
        lines: list[str] = []
        urls, keys = self.urls, self.urlkeys
        for page, when, version, kind, rev, a, b in zip(
            pages.tolist(),
            seconds.tolist(),
            versions.tolist(),
            kinds.tolist(),
            revisit.tolist(),
            digest_a.tolist(),
            digest_b.tolist(),
            strict=True,
        ):
            url = urls[page]
            head = f"{keys[page]} {timestamp_text(when)} {url}"
            if kind:
                status = "301" if kind == 1 else "404"
                lines.append(f"{head} text/html {status} {page:012X}{kind:020X} 400")
            elif rev:
                lines.append(f"{head} warc/revisit - {a:016X}{b:016X} 600")
            else:
                mime = "application/pdf" if url.endswith(".pdf") else "text/html"
                lines.append(f"{head} {mime} 200 {a:016X}{b:016X} {2_000 + 40 * version}")
        last = np.ones(len(pages), dtype=bool)
        last[:-1] = pages[1:] != pages[:-1]
        self.last_version[pages[last]] = state[last]
        return lines

    def _captures(self, rng: np.random.Generator, low: int, high: int) -> tuple[Array, Array]:
        """Every page's captures from ``low`` to ``high`` (seconds), sorted by (page, time);
        none of a late seed's page before its first capture."""
        counts = rng.poisson(np.asarray(self.rate) * (high - low) / DAY)
        pages = np.repeat(np.arange(len(self.urls), dtype=np.int64), counts)
        seconds = rng.integers(low, high, int(counts.sum()))
        if self.first_capture:
            starts = np.zeros(len(self.urls), dtype=np.int64)
            starts[list(self.first_capture)] = list(self.first_capture.values())
            kept = seconds >= starts[pages]
            pages, seconds = pages[kept], seconds[kept]
        order = np.lexsort((seconds, pages))
        return pages[order], seconds[order]

    def history_lines(self) -> list[str]:
        """Every capture made from ``start`` to ``end``, as CDX lines (unsorted)."""
        pages, seconds = self._captures(self.rng, self.start_s, self.end_s)
        self._seen(pages, seconds)
        self.history = (pages, seconds)
        lines: list[str] = []
        step = 250_000  # captures formatted at a time: their Python lists stay small
        for low in range(0, len(pages), step):
            lines += self._lines(pages[low : low + step], seconds[low : low + step])
        return lines

    def _seen(self, pages: Array, seconds: Array) -> None:
        """Move each seed's newest visible in-scope capture on (what a refresh's ``from`` is
        counted from)."""
        seeds = np.asarray(self.page_seed)[pages]
        scoped = (seeds >= 0) & (np.asarray(self.depth)[pages] <= 2)
        np.maximum.at(self.newest, seeds[scoped], seconds[scoped])

    def night(self, n: int) -> list[str]:
        """The lines the archive indexes on night ``n`` (1 = the night after ``end``)."""
        self.draw(n)
        visible = self._pending.pop(n, [])
        if visible:
            self._seen(np.asarray([v[1] for v in visible]), np.asarray([v[2] for v in visible]))
        return [v[0] for v in visible]

    def draw(self, n: int) -> None:
        """Draw the captures made on nights up to ``n`` (each indexed on its own later night)."""
        spec = self.spec
        while self._nights_done < n:
            k = self._nights_done + 1
            rng = np.random.default_rng([spec.seed, 7, k])
            day = self.end_s + (k - 1) * DAY
            pages, seconds = self._captures(rng, day, day + DAY)
            lines = self._lines(pages, seconds)
            lags = np.where(
                rng.random(len(lines)) < spec.same_night_share,
                0,
                np.minimum(spec.lag_max, rng.geometric(1 / (1 + spec.lag_mean_extra), len(lines))),
            )
            for line, page, when, lag in zip(
                lines, pages.tolist(), seconds.tolist(), lags.tolist(), strict=True
            ):
                self._pending.setdefault(k + lag, []).append((line, page, when))
            self._night_times.append((pages, seconds))
            self._nights_done = k

    def body_for(self, stamp: str, url: str) -> tuple[bytes, str] | None:
        """The HTML a memento of ``url`` at ``stamp`` holds, or None if there is no capture."""
        page = self.page_index.get(url)
        if page is None or not stamp.isdigit() or len(stamp) != 14:
            return None
        seconds = _epoch_of(stamp)
        if not any(
            _holds(pages, times, page, seconds)
            for pages, times in [self.history, *self._night_times]
        ):
            return None
        pages, times = np.asarray([page]), np.asarray([seconds])
        _kinds, noise = self._flags(pages, times)
        version = int(self._versions(pages, times)[0])
        links = [f'<a href="{url}pub{v}.pdf">paper {v}</a>' for v in range(version)]
        links += [f'<a href="{self.urls[q]}">page</a>' for q in self._children(page)]
        extra = f"<!-- visited {stamp} -->" if noise[0] else ""
        html = f"<html><body><h1>{url}</h1>{''.join(links)}{extra}</body></html>"
        return html.encode(), "text/html"

    def _children(self, page: int) -> list[int]:
        seed = self.page_seed[page]
        if seed < 0 or self.depth[page] != 0:
            return []
        return [q for q in self.seeds[seed].pages if self.depth[q] == 1][:20]


def _holds(pages: Array, times: Array, page: int, seconds: int) -> bool:
    """Whether captures sorted by (page, time) hold this one."""
    low = int(np.searchsorted(pages, page, side="left"))
    high = int(np.searchsorted(pages, page, side="right"))
    return bool(seconds in set(times[low:high].tolist()))


def _mix(a: Array, b: Array, seed: int, salt: int) -> Array:
    """A 64-bit hash of (seed, salt, a, b) for each pair (splitmix64's finaliser)."""
    with np.errstate(over="ignore"):
        x = (
            np.asarray(a, dtype=np.uint64) * np.uint64(0x9E3779B97F4A7C15)
            + np.asarray(b, dtype=np.uint64) * np.uint64(0xBF58476D1CE4E5B9)
            + np.uint64((seed * 1_000_003 + salt) & 0xFFFFFFFFFFFFFFFF)
        )
        x ^= x >> np.uint64(30)
        x *= np.uint64(0xBF58476D1CE4E5B9)
        x ^= x >> np.uint64(27)
        x *= np.uint64(0x94D049BB133111EB)
        x ^= x >> np.uint64(31)
    return x


def _uniform(x: Array) -> Array:
    return np.asarray((x >> np.uint64(11)).astype(np.float64) / float(1 << 53))


def _epoch_of(stamp: str) -> int:
    moment = datetime.strptime(stamp, "%Y%m%d%H%M%S").replace(tzinfo=UTC)
    return int(moment.timestamp())


@dataclass(frozen=True)
class Group:
    """Seeds one CDX query could refresh together: ``url`` with ``match_type``."""

    url: str
    match_type: str
    seeds: tuple[int, ...]


def groups(collection: Collection, seeds: list[int], *, by: str) -> list[Group]:
    """The queries a refresh of ``seeds`` sends grouped ``by`` "seed" (today: one prefix query
    each), "host" (one host query a host) or "prefix" (one prefix query per host and path
    family: ``host/~``, ``host/people/``). Google Sites seeds stay one query each: a host or
    prefix query on ``sites.google.com`` would read the whole platform."""
    from hacs.formats.canon import SeedScope

    found: dict[tuple[str, str], list[int]] = {}
    for index in seeds:
        seed = collection.seeds[index]
        host = collection.hosts[seed.host].name
        if by == "seed" or seed.kind == "google":
            key = (SeedScope.from_url(seed.url).cdx_query_url(), "prefix")
        elif by == "host" or not seed.family:
            key = (host, "host")
        else:
            family = "~" if seed.family == "~" else f"{seed.family}/"
            key = (f"{host}/{family}", "prefix")
        found.setdefault(key, []).append(index)
    return [Group(url, kind, tuple(members)) for (url, kind), members in found.items()]


def describe(collection: Collection, history: int) -> list[str]:
    """The collection's distribution in a few lines (``history``: its captures by ``end``)."""
    seeds = collection.seeds
    kinds = Counter(s.kind for s in seeds)
    archived = [i for i, s in enumerate(seeds) if s.archived]
    institution = [len(h.seeds) for h in collection.hosts if h.kind == "institution"]
    sizes = Counter(
        "1" if k == 1 else "2-9" if k < 10 else "10-99" if k < 100 else ">=100" for k in institution
    )
    in_scope = [len(s.pages) for s in seeds]
    pages, _seconds = collection.history
    mine = np.asarray(collection.page_seed)[pages] >= 0
    scoped = mine & (np.asarray(collection.depth)[pages] <= 2)
    shares = ", ".join(f"{kind} {kinds[kind]:,}" for kind in KINDS)
    return [
        f"{len(seeds):,} seeds ({shares}); {len(archived):,} archived "
        f"({len(archived) / len(seeds):.1%})",
        f"{len(institution):,} institutional hosts, seeds a host: "
        + ", ".join(f"{name}: {sizes[name]:,}" for name in ("1", "2-9", "10-99", ">=100"))
        + f"; largest {', '.join(str(k) for k in sorted(institution)[-5:][::-1])}",
        f"{len(collection.urls):,} pages; in a seed's scope (depth <= 2) "
        f"{np.mean(in_scope):.1f} a seed (median {np.median(in_scope):.0f}, max {max(in_scope)})",
        f"{history:,} captures by {collection.spec.end}: {scoped.sum():,} in seeds' scopes, "
        f"{(mine & ~scoped).sum():,} deeper, {(~mine).sum():,} other people's pages",
        f"groups of the {len(archived):,} archived seeds: "
        f"{len(groups(collection, archived, by='host')):,} by host, "
        f"{len(groups(collection, archived, by='prefix')):,} by host and path family "
        f"(the {sum(seeds[i].kind == 'google' for i in archived):,} archived Google Sites "
        "seeds one query each)",
    ]


def main() -> None:
    parser = bench_parser(__doc__, sites=20_000, demo=False)
    options = parser.parse_args()
    collection = Collection(CollectionSpec(seeds=options.sites, seed=options.seed))
    history = len(collection.history_lines())
    print(f"Synthetic collection (seed {options.seed}):")
    for line in describe(collection, history):
        print(f"  {line}")
    nights = [len(collection.night(n)) for n in range(1, 8)]
    print(f"  captures indexed on nights 1-7: {', '.join(f'{n:,}' for n in nights)}")


if __name__ == "__main__":
    main()
