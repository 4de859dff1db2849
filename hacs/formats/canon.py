"""URLs, urlkeys and seeds: the one place that decides when two URLs are the same page.

Pure module (stdlib and ``surt`` only): no Django, no network.

Everything is compared in SURT form, the urlkey that the Internet Archive's and pywb's CDX
servers print in their first column (``http://www.Foo.EDU:80/~bar/`` -> ``edu,foo)/~bar``).
``surt.surt`` already drops the scheme, ``www.`` (and ``www2.`` ...), user info, the default port,
the fragment and a trailing slash, lower-cases host, path *and* query (the Internet Archive's
default), sorts query arguments and strips session ids. What this module adds:

* input checks (http(s) only, a host, a valid port) with a ``ValueError`` instead of surt's
  best-effort garbage (``surt("mailto:x")`` is ``"mailto:x"``);
* no name lookups: surt resolves dotted-decimal-looking hosts with ``gethostbyname_ex``, so
  hosts like ``999.1.1.1`` are rejected before they reach it;
* a fast path for plain ASCII URLs that gives exactly surt's answer in a fraction of the time
  (link extraction canonicalises hundreds of links per page; the equivalence is property-tested
  against ``surt.surt`` in ``tests/hacs/formats/test_canon.py``);
* the homepage equivalence of DESIGN.md (``index.html`` & co. are the directory itself);
* ``seed_key``, the identity of a seed site, which differs from the archive's urlkey in two
  ways (see its docstring): the path keeps its case, and a few more directory page names
  (``home.html`` & co.) are the directory itself;
* seed validation and a ``SeedScope`` with the path boundary and depth of DESIGN.md.
"""

from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass
from functools import lru_cache
from urllib.parse import quote, unquote, urlsplit

import surt
from surt.IAURLCanonicalizer import alphaReorderQuery
from surt.URLRegexTransformer import stripPathSessionID, stripQuerySessionID

__all__ = [
    "INDEX_PAGES",
    "MAX_SEED_LENGTH",
    "SEED_INDEX_PAGES",
    "SeedError",
    "SeedScope",
    "canonical_url",
    "clear_caches",
    "homepage_key",
    "is_urlkey",
    "is_user_directory",
    "seed_key",
    "split_urlkey",
    "validate_seed_url",
]

#: Final path segments that name the directory's own page (DESIGN.md, "Method").
INDEX_PAGES = frozenset({"index.html", "index.htm", "index.php", "default.htm", "default.html"})

#: Final path segments of a seed that name its directory's page, so that the seed and its
#: directory are one site (``seed_key``). The names web servers serve for a directory by
#: default (Apache's ``DirectoryIndex``, nginx's ``index``, IIS's default documents) plus
#: ``home.html``/``home.htm``, which many scholarly homepages use; compared without regard to
#: case, because IIS serves ``Default.htm`` and ``default.htm`` alike. A longer list would
#: merge pages that are not the directory's (``main.html``, ``welcome.html`` are often pages
#: of their own).
SEED_INDEX_PAGES = INDEX_PAGES | {
    "index.shtml",
    "default.asp",
    "default.aspx",
    "home.html",
    "home.htm",
}

#: Longest seed URL accepted. Browsers and crawlers cope with more, but a seed longer than
#: this is in practice a pasted search result or tracking link, not a homepage.
MAX_SEED_LENGTH = 2048

# A seed whose last segment ends like this names a page, not a directory; its scope is the
# directory that holds it (``/~bar/home.html`` -> ``/~bar``).
_PAGE_SUFFIXES = (
    ".html",
    ".htm",
    ".shtml",
    ".xhtml",
    ".php",
    ".asp",
    ".aspx",
    ".jsp",
    ".cfm",
    ".cgi",
)

_SCHEME = re.compile(r"([A-Za-z][A-Za-z0-9+.-]*):")
_DEFAULT_PORTS = {"http": 80, "https": 443}
_DIGITS_AND_DOTS = re.compile(r"[0-9.]+")
_LABEL = re.compile(r"[a-z0-9_](?:[a-z0-9_-]{0,61}[a-z0-9_])?")
_WWW = re.compile(r"www\d*\.")
# A urlkey has no scheme and its host part ends with ")" before the first "/".
_URLKEY = re.compile(r"[^/?#:]*(?::[0-9]+)?\)/")

# The URLs the fast path handles: http(s), a host of ASCII letters/digits/hyphens with at
# least one non-digit label character, an optional port, and a path and query made only of
# characters that surt leaves alone (no "%", no spaces, no backslashes, no dot segments, no
# "//"); anything else goes through surt itself.
_FAST_URL = re.compile(
    r"(?P<scheme>[Hh][Tt][Tt][Pp][Ss]?)://"
    r"(?P<host>[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*)"
    r"(?::(?P<port>[0-9]{1,5}))?"
    r"(?P<path>/[-A-Za-z0-9._~!$&'()*+,;=:@/]*)?"
    r"(?:\?(?P<query>[-A-Za-z0-9._~!$&'()*+,;=:@/?]*))?"
    r"(?:#.*)?",
    re.DOTALL,
)


class SeedError(ValueError):
    """A seed URL that cannot be used; ``str(error)`` is a reason a librarian can act on."""


def canonical_url(url: str) -> str:
    """Return the SURT urlkey of an http(s) URL, as the Internet Archive's CDX server prints it.

    A URL without a scheme is read as http (``foo.edu/~bar``). Raises ``ValueError`` for an
    empty string, another scheme (``mailto:``, ``ftp:``, ...), a missing host or a bad port.
    """
    return _canonical_url(url.strip())


@lru_cache(maxsize=32768)
def _canonical_url(url: str) -> str:
    # Cached because the same links recur across a site's captures and pages; the cache holds
    # only successful results (exceptions are not cached by lru_cache).
    fast = _fast_surt(url)
    if fast is not None:
        return fast
    return _checked_surt(url)


def _fast_surt(url: str, *, keep_case: bool = False) -> str | None:
    """surt.surt(url) for plain ASCII http(s) URLs, or None when the URL needs the full surt.

    ``keep_case``: the path and query keep their case, as with surt's ``path_lowercase=False,
    query_lowercase=False``.
    """
    m = _FAST_URL.fullmatch(url)
    if m is None:
        return None
    path = m["path"]
    if path and ("//" in path or "/." in path):
        return None  # dot segments and empty segments: surt normalises them
    key = _fast_host_key(m["scheme"].lower(), m["host"], m["port"])
    if key is None:
        return None

    path = path or "/"
    if not keep_case:
        path = path.lower()
    if ".aspx" in path.lower():
        path = stripPathSessionID(path.encode("ascii")).decode("ascii")
    if len(path) > 1 and path.endswith("/"):
        path = path[:-1]
    key += ")" + path

    query = m["query"]
    if query:
        q = stripQuerySessionID(query.encode("ascii"))
        q = alphaReorderQuery(q if keep_case else q.lower())
        if q:
            key += "?" + q.decode("ascii")
    return key


@lru_cache(maxsize=4096)
def _fast_host_key(scheme: str, host: str, port_text: str | None) -> str | None:
    """The urlkey's host part (``edu,foo`` or ``edu,foo:8080``) for the fast path, or None.

    Cached: a page's hundreds of links point to a few dozen hosts.
    """
    host = host.lower()
    if _DIGITS_AND_DOTS.fullmatch(host):
        return None  # IP-address forms: surt has its own rules for them
    port = int(port_text) if port_text else None
    if port is not None:
        if port == 0 or port > 65535:
            return None
        if _DEFAULT_PORTS[scheme] == port:
            port = None
    www = _WWW.match(host)
    if www:
        host = host[www.end() :]
    key = ",".join(reversed(host.split(".")))
    return key if port is None else f"{key}:{port}"


def clear_caches() -> None:
    """Empty the canonicalisation caches (for benchmarks that measure cold performance)."""
    _canonical_url.cache_clear()
    _fast_host_key.cache_clear()


def _checked_surt(url: str, **options: bool) -> str:
    """surt.surt(url, **options) after the input checks of ``canonical_url``."""
    if not url:
        raise ValueError("empty URL")
    scheme = _SCHEME.match(url)
    if url.startswith("//"):
        url = "http:" + url
    elif scheme is None or not url[scheme.end() :].startswith("//"):
        # No scheme ("foo.edu/x"), or a host with a port that looks like one ("foo.edu:80/x").
        if scheme is not None and not url[scheme.end() :][:1].isdigit():
            if scheme[1].lower() in _DEFAULT_PORTS:
                raise ValueError(f"malformed URL, '//' missing after the scheme: {url[:80]!r}")
            raise ValueError(f"not an http(s) URL: {url[:80]!r}")
        url = "http://" + url
    elif scheme[1].lower() not in _DEFAULT_PORTS:
        raise ValueError(f"not an http(s) URL: {url[:80]!r}")
    try:
        parts = urlsplit(url)
        _ = parts.port  # raises ValueError for a bad port
    except ValueError as exc:
        raise ValueError(f"malformed URL {url[:80]!r}: {exc}") from None
    host = parts.hostname or ""
    if not host:
        raise ValueError(f"URL has no host: {url[:80]!r}")
    bare = host
    while (unquoted := unquote(bare)) != bare:  # surt unescapes repeatedly, so do we
        bare = unquoted
    bare = bare.replace("..", ".").strip(".")
    if _DIGITS_AND_DOTS.fullmatch(bare) and not bare.isdigit():
        # surt would hand this to gethostbyname_ex, which asks DNS when it is not a valid
        # dotted quad; a pure module does no network I/O, and such a host is bogus anyway.
        try:
            ipaddress.IPv4Address(bare)
        except ValueError:
            raise ValueError(f"URL has an invalid IP address as host: {url[:80]!r}") from None
    try:
        key: str = surt.surt(url, **options)
    except (ValueError, UnicodeError) as exc:
        raise ValueError(f"malformed URL {url[:80]!r}: {exc}") from None
    if key.startswith(")") or ")" not in key:
        raise ValueError(f"URL has no host: {url[:80]!r}")
    return key


def is_urlkey(text: str) -> bool:
    """True when ``text`` is already a SURT urlkey (``edu,foo)/~bar``) rather than a URL."""
    return "://" not in text and _URLKEY.match(text) is not None


def split_urlkey(urlkey: str) -> tuple[str, str, str]:
    """Split a urlkey into host key, path and query.

    ``edu,foo)/a?b=1`` -> ``("edu,foo", "/a", "b=1")``.
    """
    host, sep, rest = urlkey.partition(")")
    if not sep:
        raise ValueError(f"not a urlkey: {urlkey[:80]!r}")
    path, _, query = rest.partition("?")
    return host, path or "/", query


def _as_urlkey(url_or_urlkey: str) -> str:
    text = url_or_urlkey.strip()
    return text if is_urlkey(text) else canonical_url(text)


def _strip_index(urlkey: str, pages: frozenset[str] = INDEX_PAGES) -> str:
    host, path, query = split_urlkey(urlkey)
    if query:
        return urlkey  # index.php?page=2 is not the directory's page
    head, _, last = path.rpartition("/")
    if last.lower() in pages:
        return f"{host})" + (head or "/")
    return urlkey


def homepage_key(url: str) -> str:
    """The key of a homepage: its urlkey with a final ``index.html``-like segment removed.

    ``http://www.foo.edu/~bar/``, ``https://foo.edu/~bar`` and ``foo.edu/~bar/index.html`` all
    give ``edu,foo)/~bar``. Accepts a URL or a urlkey. Raises ``ValueError`` like
    ``canonical_url``.
    """
    return _strip_index(_as_urlkey(url))


def seed_key(url: str) -> str:
    """The identity of a seed site: two seeds with the same key are one site.

    Like ``homepage_key`` (http/https, ``www.``, default port, fragment and trailing slash do
    not count; the host is compared without regard to case), with two differences:

    * the path and query keep their case: on most web servers ``/~Alice/`` and ``/~alice/``
      are different directories, and so different people;
    * a final segment in ``SEED_INDEX_PAGES`` (``index.html``, ``home.html``, ...) is the
      directory itself: ``foo.edu/~dmitri/home.html`` and ``foo.edu/~dmitri/`` are one site.

    ``homepage_key`` stays the archive's view (CDX servers lower-case their urlkeys) and is what
    captures are matched with. Raises ``ValueError`` like ``canonical_url``.
    """
    text = url.strip()
    key = _fast_surt(text, keep_case=True)
    if key is None:
        if "://" not in text:
            text = "http://" + text.removeprefix("//")
        key = _checked_surt(text, path_lowercase=False, query_lowercase=False)
    return _strip_index(key, SEED_INDEX_PAGES)


def validate_seed_url(url: str) -> str:
    """Check a seed URL as a librarian typed it and return it tidied, or raise ``SeedError``.

    Tidied: surrounding whitespace removed, ``http://`` added when no scheme is given, scheme
    and host lower-cased (international names in punycode), default port and fragment dropped,
    ``/`` as the path when there is none, non-ASCII characters percent-encoded. The path's case
    and trailing slash are kept: this is the URL handed to crawlers.
    """
    text = url.strip()
    if not text:
        raise SeedError("the URL is empty")
    if len(text) > MAX_SEED_LENGTH:
        raise SeedError(
            f"the URL is too long ({len(text)} characters; the limit is {MAX_SEED_LENGTH})"
        )
    if not _looks_like_a_url(text):
        raise SeedError("not a URL: a seed is a web address such as http://www.cs.uni.edu/~name/")
    if any(ch.isspace() or ord(ch) < 32 or ord(ch) == 127 for ch in text):
        raise SeedError("the URL contains whitespace or control characters")
    if text.startswith("//"):
        text = "http:" + text
    scheme = _SCHEME.match(text)
    if scheme is not None and text[scheme.end() :].startswith("//"):
        name = scheme[1].lower()
        if name not in _DEFAULT_PORTS:
            raise SeedError(f"only http and https URLs can be crawled (this one is {name}:)")
    elif scheme is not None and not text[scheme.end() :][:1].isdigit():
        name = scheme[1].lower()
        if name in _DEFAULT_PORTS:
            raise SeedError(f"malformed URL: '//' is missing after '{name}:'")
        raise SeedError(f"only http and https URLs can be crawled (this one is {name}:)")
    else:
        text = "http://" + text
    try:
        parts = urlsplit(text)
        port = parts.port
    except ValueError as exc:
        raise SeedError(f"malformed URL ({exc})") from None
    if "@" in parts.netloc:
        raise SeedError("the URL contains a user name or password")
    host = _seed_host(parts.hostname or "")
    if port is not None and port != _DEFAULT_PORTS[parts.scheme.lower()]:
        host += f":{port}"
    safe = "/:@!$&'()*+,;=-._~%"
    path = quote(parts.path, safe=safe) or "/"
    query = quote(parts.query, safe=safe + "?")
    return f"{parts.scheme.lower()}://{host}{path}" + (f"?{query}" if query else "")


def _looks_like_a_url(text: str) -> bool:
    """False for text that is no web address at all (``not a url at all``, ``Ada Lovelace``).

    A URL either names its scheme (``http:``, ``mailto:``; those get their own reasons) or
    starts with a host that has a dot or a port (``foo.edu/~bar``, ``localhost:8080``).
    """
    if _SCHEME.match(text) or text.startswith("//"):
        return True
    first = re.split(r"[\s/?#]", text, maxsplit=1)[0]
    return "." in first or ":" in first


def _seed_host(host: str) -> str:
    if not host:
        raise SeedError("the URL has no host name")
    if ":" in host:
        # urlkeys and CDX queries have no agreed form for IPv6 literals.
        raise SeedError("IPv6 addresses are not supported as seed hosts")
    if _DIGITS_AND_DOTS.fullmatch(host):
        try:
            return str(ipaddress.IPv4Address(host))
        except ValueError:
            raise SeedError(f"'{host}' is not a valid IP address") from None
    try:
        ascii_host = host.rstrip(".").encode("idna").decode("ascii").lower()
    except UnicodeError:
        raise SeedError(f"'{host}' is not a valid host name") from None
    labels = ascii_host.split(".")
    if len(labels) < 2:
        raise SeedError(f"the host name '{host}' has no domain (like .edu or .org)")
    if len(ascii_host) > 253 or not all(_LABEL.fullmatch(label) for label in labels):
        raise SeedError(f"'{host}' is not a valid host name")
    return ascii_host


def is_user_directory(url: str) -> bool:
    """True for a homepage in a user directory (a path segment starting with ``~``).

    The HACS paper keeps only such seeds ("URLs with a tilde (~) in them, e.g.
    foo.edu/~bar/") to leave out organisational sites. ``%7E`` counts as ``~``.
    """
    text = url.strip()
    if is_urlkey(text):
        path = split_urlkey(text)[1]
    else:
        if "://" not in text:
            text = "http://" + text.removeprefix("//")
        try:
            path = urlsplit(text).path
        except ValueError:
            return False
    return any(segment.startswith("~") for segment in unquote(path).split("/"))


@dataclass(frozen=True)
class SeedScope:
    """The pages of one seed's website: its host and everything under its path.

    ``host_key`` is the urlkey's host part (``edu,foo``, with ``:port`` when not default);
    ``path_prefix`` the directory every page lies under (``/~bar``; ``""`` when the whole
    host is in scope); ``homepage`` the homepage's key (``edu,foo)/~bar``).
    """

    host_key: str
    path_prefix: str
    homepage: str

    @classmethod
    def from_url(cls, url: str) -> SeedScope:
        """Build the scope of a seed URL (or urlkey). Raises ``ValueError`` for a bad URL.

        A seed naming a directory (``foo.edu/~bar/``, ``foo.edu/~bar/index.html``) has that
        directory as its prefix; a seed naming another page (``foo.edu/~bar/home.html``) has
        the directory holding it; a bare host (``http://foo.edu/``) has the whole host.
        """
        home = homepage_key(url)
        host, path, _query = split_urlkey(home)
        prefix = "" if path == "/" else path
        last = prefix.rpartition("/")[2]
        if last.endswith(_PAGE_SUFFIXES) and not last.startswith("~"):
            original_path = path if is_urlkey(url.strip()) else _raw_path(url)
            if not original_path.endswith("/"):
                prefix = prefix.rpartition("/")[0]
        return cls(host_key=host, path_prefix=prefix, homepage=home)

    def _path_of(self, url_or_urlkey: str) -> str | None:
        """The page's path (index page removed) when it is in scope, else None."""
        try:
            key = _strip_index(_as_urlkey(url_or_urlkey))
        except ValueError:
            return None
        host, path, _query = split_urlkey(key)
        if host != self.host_key or _DOT_SEGMENT.search(path):
            # A urlkey is canonical: its dot segments are resolved. One that still holds
            # them (``/~ann/../~zed``) names another page than its prefix says.
            return None
        prefix = self.path_prefix
        if not prefix or path == prefix or path.startswith(prefix + "/"):
            return path
        return None

    def contains(self, url_or_urlkey: str) -> bool:
        """True when the URL or urlkey lies under the seed's path on the seed's host.

        The boundary is a whole path segment: ``foo.edu/~bar/baz`` is under ``foo.edu/~bar``,
        ``foo.edu/~barx`` is not. ``www.`` and http/https variants are the same host; other
        subdomains are not. Never raises: anything that is not an http(s) URL is outside.
        """
        return self._path_of(url_or_urlkey) is not None

    def is_homepage(self, url_or_urlkey: str) -> bool:
        """True when the URL or urlkey is the homepage itself (or an index.html variant)."""
        try:
            return homepage_key(url_or_urlkey) == self.homepage
        except ValueError:
            return False

    def depth(self, url_or_urlkey: str) -> int:
        """Path segments below the seed: 0 for the homepage (and its ``index.html``), 1 for
        ``foo.edu/~bar/baz``, 2 for ``foo.edu/~bar/a/b``. The query does not count.

        Raises ``ValueError`` for a URL outside the scope.
        """
        path = self._path_of(url_or_urlkey)
        if path is None:
            raise ValueError(f"{url_or_urlkey[:80]!r} is not under {self.homepage!r}")
        if path == split_urlkey(self.homepage)[1]:
            return 0
        rest = path[len(self.path_prefix) :]
        # max(1, ...): the directory of a seed like /~bar/home.html is a sibling, not depth 0.
        return max(1, sum(1 for segment in rest.split("/") if segment))

    def cdx_query_url(self) -> str:
        """The ``url`` to send to a CDX server with ``matchType=prefix`` (``foo.edu/~bar``).

        The prefix match also returns ``foo.edu/~barx``; filter the rows with ``contains``.
        """
        host, _, port = self.host_key.partition(":")
        dotted = ".".join(reversed(host.split(","))) + (f":{port}" if port else "")
        return dotted + (self.path_prefix or "/")


_DOT_SEGMENT = re.compile(r"(?:^|/)(?:\.|%2e){1,2}(?:/|$)", re.IGNORECASE)


def _raw_path(url: str) -> str:
    text = url.strip()
    if "://" not in text:
        text = "http://" + text.removeprefix("//")
    try:
        return urlsplit(text).path
    except ValueError:
        return ""


def surt_to_url(key: str) -> str:
    """A readable URL for a SURT-form link (``com,github)/a/b`` → ``http://github.com/a/b``).

    Links are stored in SURT form (DESIGN rule 2), which drops the scheme and ``www.``; the
    result is the same page as far as an archive's lookup is concerned.
    """
    host, sep, rest = key.partition(")")
    if not sep:
        return key
    name, colon, port = host.partition(":")
    netloc = ".".join(reversed(name.split(","))) + (f":{port}" if colon else "")
    return f"http://{netloc}{rest or '/'}"
