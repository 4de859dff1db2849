"""How a page writes each link, and the truth's canonical form of it.

Real homepages write the same link many equivalent ways, and HACS must count them as one link
or it would report updates that never happened. So the demo writes links relative,
root-relative and absolute; http and https; with and without ``www.``; with an upper-case host,
``:80``, ``%7E`` for ``~``, a ``#fragment``, a missing trailing slash or stray whitespace inside
the attribute -- and the truth records each link once, in canonical form.

Canonical link form in the truth ("canonical absolute URL"): ``http://`` + lower-case host
without ``www.`` + path (``%7E`` written ``~``) without trailing slash, query kept, no fragment,
no default port. Paths and queries are never varied in case, so this form maps one-to-one onto
the SURT form of DESIGN.md rule 2. ``index.html`` is *not* removed (rule 2 does not remove it),
but whether a given anchor is written with ``index.html`` never changes over time, so update
flags are the same whether or not a reader folds ``index.html`` into its directory.
"""

from __future__ import annotations

import posixpath
from urllib.parse import urlsplit

from hacs_demo.hashing import stable_hash
from hacs_demo.model import Page, Target
from hacs_demo.urls import SiteUrls


def canonical_link(url: str) -> str:
    """The truth file's canonical writing of an absolute http(s) URL.

    ``http://`` + lower-case host without ``www.`` and without a default port + path (``%7E``
    as ``~``, trailing slash dropped) + query; fragment dropped. Raises ``ValueError`` for
    anything that is not an absolute http(s) URL. Tests use it on parsed ``href`` values.
    """
    parts = urlsplit(url.strip())
    if parts.scheme.lower() not in ("http", "https") or not parts.hostname:
        raise ValueError(f"not an absolute http(s) URL: {url!r}")
    host = parts.hostname.lower()
    if host.startswith("www."):
        host = host[4:]
    port = parts.port
    if port is not None and port not in (80, 443):
        host += f":{port}"
    path = parts.path.replace("%7E", "~").replace("%7e", "~").rstrip("/")
    return f"http://{host}{path}" + (f"?{parts.query}" if parts.query else "")


class _Dice:
    """Yes/no choices read digit by digit off one stable hash, so they never change."""

    def __init__(self, h: int) -> None:
        self.h = h

    def roll(self, sides: int) -> int:
        value = self.h % sides
        self.h //= sides
        return value

    def pick(self, percent: int) -> bool:
        return self.roll(100) < percent


class HrefWriter:
    """Writes a site's links; one per site, remembering what it has written."""

    def __init__(self, seed: int, index: int, urls: SiteUrls) -> None:
        self.seed = seed
        self.index = index
        self.urls = urls
        self.written: dict[tuple[str, str, str, int], tuple[str, str]] = {}

    def href(self, page: Page, target: Target, slot: str, epoch: int) -> tuple[str, str]:
        """How ``page`` writes a link to ``target`` in ``slot`` at style ``epoch``, and the link's
        canonical form. Choices hang on a stable hash, so they do not change between versions
        -- except the scheme and ``www.`` of absolute URLs, which the https move rewrites."""
        key = (page.path, target.path + target.host + target.query, slot, epoch)
        hit = self.written.get(key)
        if hit is not None:
            return hit
        dice = _Dice(stable_hash(str(self.seed), str(self.index), *key[:3]))
        if target.internal:
            written, canon = self._internal(dice, page, target, epoch)
        else:
            written, canon = _external(dice, target, epoch)
        if dice.pick(8):
            written += ("#top", "#sec2", "#pubs", "#x1")[dice.roll(4)]
        if dice.pick(2):
            written = f" {written}\n"  # real pages have stray whitespace inside href values
        self.written[key] = (written, canon)
        return written, canon

    def _internal(self, dice: _Dice, page: Page, target: Target, epoch: int) -> tuple[str, str]:
        urls = self.urls
        path = target.path
        index_form = target.is_dir and dice.pick(8)
        if index_form:
            path += "index.html"
        drop_slash = target.is_dir and path != "" and not index_form and dice.pick(8)
        full = urls.root_path + path
        canon = f"http://{urls.host}{full}".rstrip("/")
        if drop_slash:
            full = full.rstrip("/")
        mode = dice.roll(100)
        if mode < 45:
            return _relative(urls, page, full), canon
        if dice.pick(12):
            full = full.replace("~", "%7E", 1)
        if mode < 60:
            return full, canon
        return self._absolute(dice, full, epoch), canon

    def _absolute(self, dice: _Dice, full: str, epoch: int) -> str:
        """An absolute URL of the site's own page at root-relative ``full``."""
        scheme = self.urls.scheme_at(epoch)
        if dice.pick(10):
            scheme = "https" if scheme == "http" else "http"
        host = self.urls.host
        if self.urls.www != dice.pick(15) and not (epoch and dice.pick(50)):
            host = "www." + host
        if dice.pick(5):
            host = host.upper()
        port = ":80" if scheme == "http" and dice.pick(4) else ""
        return f"{scheme}://{host}{port}{full}"


def _relative(urls: SiteUrls, page: Page, full: str) -> str:
    """``full`` relative to the page's directory, or to the root when it has ``<base href>``."""
    base = urls.root_path if page.base_href else urls.root_path + page.path
    base_dir = base.rstrip("/") if base.endswith("/") else posixpath.dirname(base)
    rel = posixpath.relpath(full, base_dir) if full.rstrip("/") != base_dir else "."
    if full.endswith("/") or rel == ".":
        rel = rel.rstrip("/") + "/"
    return rel


def _external(dice: _Dice, target: Target, epoch: int) -> tuple[str, str]:
    canon = f"http://{target.host}{target.path}".rstrip("/")
    canon += f"?{target.query}" if target.query else ""
    scheme = "https" if target.https or epoch else "http"
    if dice.pick(10):
        scheme = "https" if scheme == "http" else "http"
    host = target.host
    if target.wwwable and dice.pick(40):
        host = "www." + host
    if dice.pick(3):
        host = host.upper()
    path = target.path or "/"
    written = f"{scheme}://{host}{path}" + (f"?{target.query}" if target.query else "")
    return written, canon
