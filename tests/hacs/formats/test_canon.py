"""hacs.formats.canon: urlkeys, homepage keys, seed checks, and a seed's scope (boundary, depth)."""

from __future__ import annotations

import socket

import pytest
import surt
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hacs.formats.canon import (
    INDEX_PAGES,
    MAX_SEED_LENGTH,
    SEED_INDEX_PAGES,
    SeedError,
    SeedScope,
    _fast_surt,
    canonical_url,
    homepage_key,
    is_urlkey,
    is_user_directory,
    seed_key,
    split_urlkey,
    validate_seed_url,
)

# --- canonical_url -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("url", "key"),
    [
        ("http://www.Foo.EDU/~bar/", "edu,foo)/~bar"),
        ("https://foo.edu/~bar", "edu,foo)/~bar"),
        ("HTTP://FOO.EDU:80/~bar", "edu,foo)/~bar"),
        ("https://foo.edu:443/~bar/#publications", "edu,foo)/~bar"),
        ("http://www2.foo.edu/x", "edu,foo)/x"),
        ("http://foo.edu", "edu,foo)/"),
        ("http://foo.edu/", "edu,foo)/"),
        ("http://foo.edu/a?b=2&a=1", "edu,foo)/a?a=1&b=2"),
        ("http://foo.edu/A/Paper.PDF", "edu,foo)/a/paper.pdf"),
        ("http://foo.edu/a/./b/../c/", "edu,foo)/a/c"),
        ("http://foo.edu/%7Ebar/", "edu,foo)/~bar"),
        ("http://user:secret@foo.edu/x", "edu,foo)/x"),
        ("http://bücher.example/", "example,xn--bcher-kva)/"),
        ("http://192.168.1.20/x", "20,1,168,192)/x"),
    ],
)
def test_it_gives_the_internet_archive_urlkey(url: str, key: str) -> None:
    assert canonical_url(url) == key


def test_http_https_www_and_default_port_variants_are_one_key() -> None:
    variants = [
        "http://www.x.edu/a/",
        "https://x.edu/a#top",
        "HTTP://X.EDU:80/a",
        "https://www.x.edu:443/a/",
        "  http://x.edu/a  ",
    ]
    assert {canonical_url(v) for v in variants} == {"edu,x)/a"}


def test_it_keeps_the_query_and_a_non_default_port() -> None:
    assert canonical_url("http://foo.edu:8080/x?id=3") == "edu,foo:8080)/x?id=3"
    assert canonical_url("https://foo.edu:80/x") == "edu,foo:80)/x"
    assert canonical_url("http://foo.edu/x?id=3") != canonical_url("http://foo.edu/x?id=4")


def test_it_reads_a_url_without_a_scheme_as_http() -> None:
    assert canonical_url("foo.edu/~bar/") == "edu,foo)/~bar"
    assert canonical_url("foo.edu:8080/~bar") == "edu,foo:8080)/~bar"
    assert canonical_url("//foo.edu/~bar") == "edu,foo)/~bar"


@pytest.mark.parametrize(
    "url",
    [
        "",
        "   ",
        "mailto:bar@foo.edu",
        "javascript:void(0)",
        "ftp://foo.edu/pub/",
        "data:text/html,hello",
        "http://",
        "http:///path",
        "http://foo.edu:port/",
        "http://foo.edu:99999/",
    ],
)
def test_it_rejects_what_is_not_an_http_url(url: str) -> None:
    with pytest.raises(ValueError):
        canonical_url(url)


def test_it_rejects_bogus_ip_hosts_without_asking_dns(monkeypatch: pytest.MonkeyPatch) -> None:
    def no_lookups(*args: object) -> None:
        raise AssertionError("canonical_url must not look names up")

    monkeypatch.setattr(socket, "gethostbyname_ex", no_lookups)
    monkeypatch.setattr(socket, "gethostbyname", no_lookups)
    with pytest.raises(ValueError, match="invalid IP"):
        canonical_url("http://999.1.1.1/")
    with pytest.raises(ValueError, match="invalid IP"):
        canonical_url("http://%39%39%39.1.1.1/")
    with pytest.raises(ValueError, match="invalid IP"):
        canonical_url("http://%2539%2539%2539.1.1.1/")


# URLs from pieces that exercise surt's rules: case, www prefixes, ports, dot segments, empty
# segments, percent escapes, spaces, session ids, query ordering, fragments.
_label = st.text(alphabet="abcXYZ019-", min_size=1, max_size=6)
_host = st.lists(_label, min_size=1, max_size=4).map(".".join) | st.sampled_from(
    ["www.foo.edu", "WWW2.x.org", "www.edu", "1.2.3.4", "wwwfoo.com", "www.www.a.b", "foo.edu."]
)
_segment = st.text(alphabet="aB~._-!$&'()*+,;=:@%0z/ \\", max_size=8)
_path = st.lists(_segment, max_size=5).map(lambda parts: "/" + "/".join(parts)) | st.sampled_from(
    ["", "/(S(abcdefghijklmnopqrstuvwx))/page.aspx", "/X/(a(abcdefghijklmnopqrstuvwx))/p.ASPX"]
)
_query = st.text(alphabet="aB=&;._~/?:@-%!$'()*+,", max_size=20) | st.sampled_from(
    [
        "jsessionid=0123456789abcdef0123456789abcdef",
        "a=1&PHPSESSID=0123456789abcdef0123456789ABCDEF&b=2",
        "cfid=1&cftoken=2&x=3",
        "b=2&a=1&a",
        "&&",
        "",
    ]
)
_urls = st.builds(
    lambda scheme, host, port, path, query, fragment: (
        f"{scheme}://{host}{port}{path}{query}{fragment}"
    ),
    st.sampled_from(["http", "https", "HTTP", "Https"]),
    _host,
    st.sampled_from(["", ":80", ":443", ":8080", ":0", ":080", ":99999", ":"]),
    _path,
    st.just("") | _query.map(lambda q: "?" + q),
    st.sampled_from(["", "#", "#top", "#a b"]),
)


@settings(max_examples=500, suppress_health_check=list(HealthCheck), deadline=None)
@given(_urls)
def test_the_fast_path_gives_exactly_what_surt_gives(url: str) -> None:
    fast = _fast_surt(url)
    if fast is not None:
        assert fast == surt.surt(url)


@settings(max_examples=500, suppress_health_check=list(HealthCheck), deadline=None)
@given(_urls | st.text(max_size=40))
def test_it_agrees_with_surt_or_raises_value_error(url: str) -> None:
    try:
        key = canonical_url(url)
    except ValueError:
        return
    assert key == surt.surt(url.strip() if "://" in url else "http://" + url.strip())


def test_the_fast_path_takes_ordinary_links() -> None:
    for url in [
        "https://www.cs.foo.edu/~bar/papers/p12.pdf",
        "http://scholar.example.com/citations?user=Ab12&hl=en",
        "https://doi.org/10.1145/1234.5678",
    ]:
        assert _fast_surt(url) is not None


# --- urlkeys and homepage keys -----------------------------------------------------------


def test_it_tells_urlkeys_from_urls() -> None:
    assert is_urlkey("edu,foo)/~bar")
    assert is_urlkey("edu,foo:8080)/x?y=1")
    assert not is_urlkey("http://foo.edu/~bar")
    assert not is_urlkey("foo.edu/~bar")
    assert split_urlkey("edu,foo)/a/b?x=1&y=2") == ("edu,foo", "/a/b", "x=1&y=2")
    assert split_urlkey("edu,foo)/") == ("edu,foo", "/", "")
    with pytest.raises(ValueError):
        split_urlkey("foo.edu/a")


def test_index_pages_are_the_directory_itself() -> None:
    keys = {
        homepage_key(url)
        for url in [
            "http://foo.edu/~bar/",
            "http://foo.edu/~bar",
            "https://www.foo.edu/~bar/index.html",
            "http://foo.edu/~bar/Index.HTM",
            "http://foo.edu/~bar/index.php",
            "http://foo.edu/~bar/default.htm",
            "http://foo.edu/~bar/default.html",
            "edu,foo)/~bar/index.html",
        ]
    }
    assert keys == {"edu,foo)/~bar"}
    assert len(INDEX_PAGES) == 5


def test_an_index_page_with_a_query_or_another_name_is_another_page() -> None:
    assert homepage_key("http://foo.edu/~bar/index.php?page=2") == "edu,foo)/~bar/index.php?page=2"
    assert homepage_key("http://foo.edu/~bar/home.html") == "edu,foo)/~bar/home.html"
    assert homepage_key("http://foo.edu/index.html") == "edu,foo)/"
    assert homepage_key("http://foo.edu/~bar/pubs/index.html") == "edu,foo)/~bar/pubs"


# --- seeds -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("typed", "tidied"),
    [
        ("  http://WWW.Foo.EDU/~Bar/  ", "http://www.foo.edu/~Bar/"),
        ("foo.edu/~bar", "http://foo.edu/~bar"),
        ("foo.edu", "http://foo.edu/"),
        ("HTTPS://foo.edu:443/~bar/#top", "https://foo.edu/~bar/"),
        ("http://foo.edu:8080/~bar", "http://foo.edu:8080/~bar"),
        ("http://bücher.example/~jö/", "http://xn--bcher-kva.example/~j%C3%B6/"),
        ("http://foo.edu/~bar/?lang=en", "http://foo.edu/~bar/?lang=en"),
        ("http://10.1.2.3/~bar/", "http://10.1.2.3/~bar/"),
        ("//foo.edu/~bar/", "http://foo.edu/~bar/"),
    ],
)
def test_it_tidies_a_good_seed(typed: str, tidied: str) -> None:
    assert validate_seed_url(typed) == tidied


@pytest.mark.parametrize(
    ("typed", "reason"),
    [
        ("", "empty"),
        ("   ", "empty"),
        ("ftp://foo.edu/~bar/", "only http and https"),
        ("mailto:bar@foo.edu", "only http and https"),
        ("javascript:alert(1)", "only http and https"),
        ("http:foo.edu/~bar", "'//' is missing"),
        ("http:///~bar", "no host"),
        ("http://localhost/~bar", "no domain"),
        ("http://foo.edu/~bar baz/", "whitespace"),
        ("http://foo.edu/~bar\tbaz", "whitespace"),
        ("http://foo.edu/" + "a" * MAX_SEED_LENGTH, "too long"),
        ("http://foo.edu:99999/", "malformed"),
        ("http://foo.edu:http/", "malformed"),
        ("http://bar:pw@foo.edu/", "user name or password"),
        ("http://foo..edu/", "not a valid host name"),
        ("http://-foo.edu/", "not a valid host name"),
        ("http://300.1.2.3/", "not a valid IP address"),
        ("http://[::1]/~bar", "IPv6"),
    ],
)
def test_it_explains_a_bad_seed(typed: str, reason: str) -> None:
    with pytest.raises(SeedError, match=reason):
        validate_seed_url(typed)


def test_a_seed_error_is_a_value_error() -> None:
    assert issubclass(SeedError, ValueError)


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("http://foo.edu/~bar/", True),
        ("http://foo.edu/people/~bar/pubs.html", True),
        ("http://foo.edu/%7Ebar/", True),
        ("foo.edu/~bar", True),
        ("edu,foo)/~bar", True),
        ("http://foo.edu/bar/", False),
        ("http://foo.edu/bar?user=~bar", False),
        ("http://foo.edu/", False),
        ("http://foo.edu/bar~/", False),
    ],
)
def test_it_recognises_user_directory_homepages(url: str, expected: bool) -> None:
    assert is_user_directory(url) is expected


# --- scope -------------------------------------------------------------------------------


def test_a_scope_has_the_seed_host_prefix_and_homepage() -> None:
    scope = SeedScope.from_url("http://www.foo.edu/~bar/")
    assert scope == SeedScope(host_key="edu,foo", path_prefix="/~bar", homepage="edu,foo)/~bar")
    assert SeedScope.from_url("https://foo.edu/~bar/index.html") == scope
    assert SeedScope.from_url("edu,foo)/~bar") == scope


def test_the_path_boundary_is_a_whole_segment() -> None:
    scope = SeedScope.from_url("http://foo.edu/~bar")
    assert scope.contains("http://foo.edu/~bar/baz")
    assert scope.contains("http://foo.edu/~bar")
    assert scope.contains("http://foo.edu/~bar?lang=de")
    assert not scope.contains("http://foo.edu/~barx")
    assert not scope.contains("http://foo.edu/~barx/baz")
    assert not scope.contains("http://foo.edu/~ba")
    assert not scope.contains("http://foo.edu/")


def test_scope_accepts_urls_and_urlkeys_alike() -> None:
    scope = SeedScope.from_url("http://foo.edu/~bar/")
    assert scope.contains("edu,foo)/~bar/pubs")
    assert not scope.contains("edu,foo)/~barx")
    assert scope.contains("https://www.foo.edu/~bar/pubs/")
    assert scope.contains("HTTP://FOO.EDU:80/~BAR/pubs")


def test_other_hosts_ports_and_non_urls_are_outside() -> None:
    scope = SeedScope.from_url("http://foo.edu/~bar/")
    assert not scope.contains("http://cs.foo.edu/~bar/")
    assert not scope.contains("http://foo.edu:8080/~bar/")
    assert not scope.contains("http://foo.org/~bar/")
    assert not scope.contains("mailto:bar@foo.edu")
    assert not scope.contains("")


def test_depth_counts_segments_below_the_seed() -> None:
    scope = SeedScope.from_url("http://foo.edu/~bar/")
    assert scope.depth("http://foo.edu/~bar/") == 0
    assert scope.depth("https://www.foo.edu/~bar/index.html") == 0
    assert scope.depth("edu,foo)/~bar") == 0
    assert scope.depth("http://foo.edu/~bar/baz") == 1
    assert scope.depth("http://foo.edu/~bar/baz/") == 1
    assert scope.depth("http://foo.edu/~bar/baz/index.html") == 1
    assert scope.depth("http://foo.edu/~bar/a/b") == 2
    assert scope.depth("http://foo.edu/~bar/a/b?page=2") == 2
    assert scope.depth("http://foo.edu/~bar/baz/qux/quux") == 3
    assert scope.depth("http://foo.edu/~bar?lang=de") == 0


def test_depth_of_a_page_outside_the_scope_is_an_error() -> None:
    scope = SeedScope.from_url("http://foo.edu/~bar/")
    with pytest.raises(ValueError, match="not under"):
        scope.depth("http://foo.edu/~barx/")


def test_the_homepage_is_recognised_in_all_its_spellings() -> None:
    scope = SeedScope.from_url("http://foo.edu/~bar/")
    assert scope.is_homepage("https://www.foo.edu/~bar/index.html")
    assert scope.is_homepage("edu,foo)/~bar")
    assert not scope.is_homepage("http://foo.edu/~bar/?lang=de")
    assert not scope.is_homepage("http://foo.edu/~bar/pubs")
    assert not scope.is_homepage("not a url at all:")


def test_a_bare_host_seed_has_the_whole_host_in_scope() -> None:
    scope = SeedScope.from_url("http://foo.edu/")
    assert scope.path_prefix == ""
    assert scope.contains("http://foo.edu/anything/at/all")
    assert scope.depth("http://www.foo.edu/") == 0
    assert scope.depth("http://foo.edu/index.html") == 0
    assert scope.depth("http://foo.edu/a") == 1
    assert scope.depth("http://foo.edu/a/b") == 2
    assert not scope.contains("http://cs.foo.edu/")
    assert scope.cdx_query_url() == "foo.edu/"


def test_a_seed_naming_a_page_scopes_its_directory() -> None:
    scope = SeedScope.from_url("http://foo.edu/~bar/home.html")
    assert scope.homepage == "edu,foo)/~bar/home.html"
    assert scope.path_prefix == "/~bar"
    assert scope.depth("http://foo.edu/~bar/home.html") == 0
    assert scope.depth("http://foo.edu/~bar/pubs.html") == 1
    assert scope.depth("http://foo.edu/~bar/") == 1
    # A trailing slash says it is a directory after all.
    assert SeedScope.from_url("http://foo.edu/~bar/home.html/").path_prefix == "/~bar/home.html"
    # A user directory with a dot in its name is still a directory.
    assert SeedScope.from_url("http://foo.edu/~j.smith").path_prefix == "/~j.smith"


def test_the_cdx_query_is_the_dotted_host_and_prefix() -> None:
    assert SeedScope.from_url("http://www.foo.edu/~bar/").cdx_query_url() == "foo.edu/~bar"
    assert SeedScope.from_url("http://cs.foo.edu:8080/~bar").cdx_query_url() == (
        "cs.foo.edu:8080/~bar"
    )
    assert SeedScope.from_url("http://10.0.0.7/~bar/").cdx_query_url() == "10.0.0.7/~bar"


def test_the_cdx_prefix_matches_the_scope_urlkeys() -> None:
    # What a CDX server does with url=<prefix>&matchType=prefix: canonicalise, then match
    # urlkeys by string prefix. Everything in scope must match; the rest is filtered by contains.
    scope = SeedScope.from_url("https://www.foo.edu/~bar/index.html")
    prefix = canonical_url(scope.cdx_query_url())
    for url in ["http://foo.edu/~bar/", "http://foo.edu/~bar/a/b", "http://foo.edu/~barx/"]:
        assert canonical_url(url).startswith(prefix)
    assert [scope.contains(u) for u in ["foo.edu/~bar/a", "foo.edu/~barx"]] == [True, False]


def test_a_scope_is_frozen() -> None:
    scope = SeedScope.from_url("http://foo.edu/~bar/")
    with pytest.raises(AttributeError):
        scope.path_prefix = "/"  # type: ignore[misc]


def test_surt_links_become_readable_urls() -> None:
    from hacs.formats.canon import surt_to_url

    assert surt_to_url("com,github)/a/b") == "http://github.com/a/b"
    assert surt_to_url("edu,example,cs:8080)/~bar") == "http://cs.example.edu:8080/~bar"
    assert surt_to_url("org,example)") == "http://example.org/"
    assert surt_to_url("not a surt") == "not a surt"


# --- seed keys: which seeds are one site ---------------------------------------------------


def test_a_seed_keys_path_keeps_its_case_and_its_host_does_not() -> None:
    assert seed_key("http://www.Foo.EDU/~Alice/") == "edu,foo)/~Alice"
    assert seed_key("http://foo.edu/~Alice/") != seed_key("http://foo.edu/~alice/")
    assert seed_key("HTTPS://FOO.edu:443/~alice") == seed_key("http://www.foo.edu/~alice/")
    # The archive's urlkey still lower-cases the path: captures are matched with it.
    assert homepage_key("http://foo.edu/~Alice/") == homepage_key("http://foo.edu/~alice/")


@pytest.mark.parametrize("page", sorted(SEED_INDEX_PAGES))
def test_a_directory_page_of_a_seed_is_the_directory(page: str) -> None:
    assert seed_key(f"http://foo.edu/~dmitri/{page}") == "edu,foo)/~dmitri"
    assert seed_key(f"http://foo.edu/~dmitri/{page.upper()}") == "edu,foo)/~dmitri"
    assert seed_key(f"http://foo.edu/{page}") == "edu,foo)/"


def test_the_list_of_directory_pages_is_short_and_covers_the_archives_own() -> None:
    assert INDEX_PAGES <= SEED_INDEX_PAGES
    assert {"home.html", "home.htm"} <= SEED_INDEX_PAGES
    assert "main.html" not in SEED_INDEX_PAGES and "welcome.html" not in SEED_INDEX_PAGES
    assert seed_key("http://foo.edu/~dmitri/main.html") == "edu,foo)/~dmitri/main.html"
    assert seed_key("http://foo.edu/~dmitri/home.html?lang=en") == (
        "edu,foo)/~dmitri/home.html?lang=en"
    )


@settings(max_examples=500, suppress_health_check=list(HealthCheck), deadline=None)
@given(_urls)
def test_the_seed_keys_fast_path_gives_what_surt_gives_keeping_case(url: str) -> None:
    fast = _fast_surt(url, keep_case=True)
    if fast is not None:
        assert fast == surt.surt(url, path_lowercase=False, query_lowercase=False)


_seed_path = st.text(alphabet="abcXYZ~_-0", min_size=1, max_size=8)


@settings(max_examples=300, suppress_health_check=list(HealthCheck), deadline=None)
@given(
    st.sampled_from(["foo.edu", "cs.Uni.EDU", "x.org"]),
    _seed_path,
    st.sampled_from(["", "/", "/index.html", "/home.html", "/Default.htm"]),
)
def test_seed_variants_are_one_site_and_case_changes_make_another(
    host: str, path: str, page: str
) -> None:
    key = seed_key(f"http://{host}/{path}/")
    for variant in [
        f"https://www.{host.upper()}/{path}{page}",
        f"HTTP://{host}:80/{path}{page}",
        f"{host}/{path}{page}",
    ]:
        assert seed_key(variant) == key
    if path.swapcase() != path:
        assert seed_key(f"http://{host}/{path.swapcase()}/") != key
    # Lower-cased, the seed key is the archive's homepage key: the archive sees one page.
    assert seed_key(f"http://{host}/{path}/").lower() == homepage_key(f"http://{host}/{path}/")


@pytest.mark.parametrize("text", ["not a url at all", "Ada Lovelace", "hello", "see below"])
def test_text_that_is_no_web_address_is_not_a_url(text: str) -> None:
    with pytest.raises(SeedError, match=r"^not a URL: a seed is a web address such as "):
        validate_seed_url(text)


def test_a_url_with_a_space_still_says_so() -> None:
    with pytest.raises(SeedError, match="whitespace"):
        validate_seed_url("a.edu/~x y/")
