"""hacs.formats.links: decoding archived pages and their canonical link sets (DESIGN.md rule 2)."""

from __future__ import annotations

from urllib.parse import urljoin, urlsplit

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hacs.formats.canon import canonical_url
from hacs.formats.links import _Base, decode_html, extract_links

PAGE = "http://www.cs.example.edu/~ada/index.html"


def links(body: str | bytes, base: str = PAGE) -> set[str]:
    return set(extract_links(body, base))


# --- decode_html -------------------------------------------------------------------------


def test_it_decodes_utf8_by_default() -> None:
    assert decode_html("<p>Café – “quoted”</p>".encode()) == "<p>Café – “quoted”</p>"


def test_it_decodes_an_undeclared_cp1252_page() -> None:
    body = "<p>Caf\xe9 \u201cquoted\u201d \u2013 \u20ac5</p>".encode("cp1252")
    assert decode_html(body, None) == "<p>Café “quoted” – €5</p>"


def test_it_follows_a_meta_declared_charset() -> None:
    html = '<html><head><meta charset="koi8-r"><title>Привет</title></head></html>'
    assert decode_html(html.encode("koi8-r")) == html
    old = '<meta http-equiv="Content-Type" content="text/html; charset=Shift_JIS"><p>東京大学</p>'
    assert decode_html(old.encode("shift_jis")) == old


def test_the_header_charset_wins_over_the_meta_charset() -> None:
    html = '<meta charset="utf-8"><p>Привет</p>'
    body = html.encode("koi8-r")
    assert decode_html(body, "text/html; charset=KOI8-R") == html
    assert decode_html(body, 'text/html;charset="koi8-r"') == html


def test_latin1_labels_are_read_as_windows_1252_like_browsers_do() -> None:
    body = b"<p>\x93quoted\x94</p>"
    assert decode_html(body, "text/html; charset=ISO-8859-1") == "<p>\u201cquoted\u201d</p>"


def test_a_wrong_declaration_falls_back_to_a_charset_that_works() -> None:
    body = "<p>Café</p>".encode("cp1252")
    assert decode_html(body, "text/html; charset=utf-8") == "<p>Café</p>"
    assert decode_html(body, "text/html; charset=no-such-charset") == "<p>Café</p>"


def test_undecodable_bytes_become_replacement_characters() -> None:
    text = decode_html(b"<p>\x81\x8d\x8f</p>", "text/html; charset=utf-8")
    assert text == "<p>\ufffd\ufffd\ufffd</p>"


def test_a_byte_order_mark_wins() -> None:
    assert decode_html("\ufeff<p>é</p>".encode("utf-16-le"), "text/html; charset=latin-1") == (
        "<p>é</p>"
    )
    assert decode_html(b"\xef\xbb\xbf<p>\xc3\xa9</p>") == "<p>é</p>"


def test_an_empty_body_is_empty_text() -> None:
    assert decode_html(b"") == ""


@settings(max_examples=300, suppress_health_check=list(HealthCheck), deadline=None)
@given(st.binary(max_size=300), st.none() | st.text(max_size=40))
def test_decode_html_never_raises(body: bytes, content_type: str | None) -> None:
    assert isinstance(decode_html(body, content_type), str)
    assert isinstance(decode_html(b"<meta charset=" + body[:20] + b">" + body), str)


# --- extract_links -----------------------------------------------------------------------


def test_the_same_link_written_several_ways_is_one_link() -> None:
    html = (
        '<a href="http://www.x.edu/a/">1</a>'
        '<a href="https://x.edu/a#top">2</a>'
        '<A HREF="HTTP://X.EDU:80/a">3</A>'
        '<a href="https://www.x.edu:443/a/?">4</a>'
    )
    assert extract_links(html, PAGE) == frozenset({"edu,x)/a"})


def test_it_resolves_relative_links_against_the_capture_url() -> None:
    html = (
        '<a href="papers/p1.pdf">p</a>'
        '<a href="./cv.html">cv</a>'
        '<a href="../~bob/">bob</a>'
        '<a href="/dept/">dept</a>'
        '<a href="//other.org/x">other</a>'
        '<a href="?lang=de">de</a>'
        '<a href="teaching">t</a>'
    )
    assert links(html) == {
        "edu,example,cs)/~ada/papers/p1.pdf",
        "edu,example,cs)/~ada/cv.html",
        "edu,example,cs)/~bob",
        "edu,example,cs)/dept",
        "org,other)/x",
        "edu,example,cs)/~ada/index.html?lang=de",
        "edu,example,cs)/~ada/teaching",
    }


def test_relative_links_keep_the_capture_scheme_and_port() -> None:
    html = '<a href="//other.org/x">o</a><a href="a">a</a>'
    assert links(html, "https://example.edu:8443/~ada/") == {
        "org,other)/x",
        "edu,example:8443)/~ada/a",
    }


def test_it_honours_base_href() -> None:
    html = (
        '<html><head><base href="http://mirror.example.org/ada/"></head>'
        '<body><a href="pubs.html">p</a><a href="/root">r</a></body></html>'
    )
    assert links(html) == {"org,example,mirror)/ada/pubs.html", "org,example,mirror)/root"}


def test_a_relative_base_href_is_resolved_against_the_capture() -> None:
    assert links('<base href="/~ada/v2/"><a href="pubs.html">p</a>') == {
        "edu,example,cs)/~ada/v2/pubs.html"
    }


def test_only_the_first_base_href_counts() -> None:
    html = '<base target="_blank"><base href="http://a.org/1/"><base href="http://b.org/2/">'
    assert links(html + '<a href="x">x</a>') == {"org,a)/1/x"}


def test_a_non_http_base_href_is_ignored() -> None:
    assert links('<base href="javascript:void(0)"><a href="x">x</a>') == {"edu,example,cs)/~ada/x"}


def test_it_drops_fragments_and_in_page_anchors() -> None:
    html = (
        '<a href="#top">top</a><a href="">self</a><a href="pubs.html#2019">p</a>'
        '<a href="http://x.edu/a#b">x</a>'
    )
    assert links(html) == {"edu,example,cs)/~ada/pubs.html", "edu,x)/a"}


def test_it_keeps_only_http_and_https_links() -> None:
    html = (
        '<a href="mailto:ada@example.edu">m</a>'
        '<a href="javascript:toggle()">j</a>'
        '<a href="ftp://ftp.example.edu/pub/">f</a>'
        '<a href="data:text/html,hello">d</a>'
        '<a href="tel:+15551234">t</a>'
        '<a href="news:comp.lang.python">n</a>'
        '<a href="https://ok.example.org/">ok</a>'
    )
    assert links(html) == {"org,example,ok)/"}


def test_it_reads_area_hrefs_and_ignores_other_elements() -> None:
    html = (
        '<map><area shape="rect" href="map/a.html"><area nohref></map>'
        '<link rel="stylesheet" href="style.css"><img src="me.jpg"><script src="x.js"></script>'
        '<a name="anchor-only">no href</a><iframe src="frame.html"></iframe>'
    )
    assert links(html) == {"edu,example,cs)/~ada/map/a.html"}


def test_it_cleans_whitespace_around_and_inside_hrefs() -> None:
    html = '<a href="  \n papers/\tp1.pdf \r\n">p</a><a href="with space.html">s</a>'
    assert links(html) == {
        "edu,example,cs)/~ada/papers/p1.pdf",
        "edu,example,cs)/~ada/with%20space.html",
    }


def test_it_survives_broken_markup() -> None:
    html = (
        "<html><body><p>unclosed <b>bold <a href=one.html>one<a href='two.html'>two"
        "<table><tr><td><a href=three.html>three</td></table></div></div></span>"
        '<a href="four.html" <a href="five.html">x</a> <<< >>> & <a href=six.html>'
    )
    found = links(html)
    assert {
        "edu,example,cs)/~ada/one.html",
        "edu,example,cs)/~ada/two.html",
        "edu,example,cs)/~ada/three.html",
        "edu,example,cs)/~ada/six.html",
    } <= found


@pytest.mark.parametrize(
    "html", ["", "   \n", "<html></html>", "<!-- only a comment -->", "\x00\x00", "<", "plain"]
)
def test_empty_documents_have_no_links(html: str) -> None:
    assert extract_links(html, PAGE) == frozenset()
    assert extract_links(html.encode(), PAGE) == frozenset()


def test_unusable_urls_are_skipped_not_raised() -> None:
    html = (
        '<a href="http://[broken/">a</a><a href="http://x.edu:99999/">b</a>'
        '<a href="http://999.1.1.1/">c</a><a href="http:///nohost">d</a>'
        '<a href="good.html">ok</a>'
    )
    assert links(html) == {"edu,example,cs)/~ada/good.html"}


def test_bytes_are_decoded_by_their_meta_charset() -> None:
    page = (
        '<html><head><meta http-equiv="Content-Type" content="text/html; charset=windows-1252">'
        '</head><body><a href="caf\xe9.html">\u201ccafé\u201d</a></body></html>'
    ).encode("cp1252")
    assert links(page) == {"edu,example,cs)/~ada/caf%c3%a9.html"}


def test_an_xhtml_page_with_an_xml_declaration_is_read() -> None:
    page = (
        '<?xml version="1.0" encoding="iso-8859-1"?>\n'
        '<!DOCTYPE html PUBLIC "-//W3C//DTD XHTML 1.0 Strict//EN" '
        '"http://www.w3.org/TR/xhtml1/DTD/xhtml1-strict.dtd">\n'
        '<html xmlns="http://www.w3.org/1999/xhtml"><body>'
        '<p><a href="pubs.html">Publications</a></p></body></html>'
    )
    assert links(page) == {"edu,example,cs)/~ada/pubs.html"}
    assert links(page.encode("latin-1")) == {"edu,example,cs)/~ada/pubs.html"}


def test_a_capture_url_that_is_not_http_keeps_only_absolute_links() -> None:
    html = '<a href="rel.html">r</a><a href="https://x.edu/abs">a</a>'
    assert links(html, "some/not/even/url/thing") == {"edu,x)/abs"}
    assert links(html, "") == {"edu,x)/abs"}


def test_the_link_set_is_a_frozenset_of_urlkeys() -> None:
    result = extract_links('<a href="https://www.x.edu/A/">a</a>', PAGE)
    assert isinstance(result, frozenset)
    assert result == {canonical_url("http://x.edu/a")}


# The string joins of _Base against urllib's RFC 3986 resolution, compared after
# canonicalisation (which is how they are used): an independent slow implementation.
_hrefs = st.text(alphabet="ab./?#=&:~-_%", max_size=16) | st.sampled_from(
    ["", ".", "./", "..", "../", "../../..", "/", "//", "//h.org", "?", "#", "a/../b", "./a/./b"]
)
_bases = st.sampled_from(
    [
        PAGE,
        "http://example.edu",
        "http://example.edu/",
        "https://example.edu:8443/~ada/pubs/?q=1#frag",
        "http://example.edu/~ada",
        "http://example.edu/a/b/c/",
    ]
)


@settings(max_examples=1000, suppress_health_check=list(HealthCheck), deadline=None)
@given(_bases, _hrefs)
def test_fast_resolution_agrees_with_urljoin(base: str, href: str) -> None:
    mine = _Base(base).resolve(href)
    if href.strip() == "" or href.strip().startswith("#"):
        assert mine is None  # in-page anchors are not links
        return
    reference: str | None = urljoin(base, href)
    if href.startswith("//") and not urlsplit("http:" + href).netloc:
        reference = None  # "//" with no host: urljoin returns the base, browsers give up
    if href.startswith("?") and not urlsplit(href).query:
        # RFC 3986 5.2.2: "?" sets an empty query; urljoin keeps the base's query instead.
        reference = base.partition("#")[0].partition("?")[0]

    def key(url: str | None) -> str | None:
        if url is None or not url.lower().startswith(("http://", "https://")):
            return None
        try:
            return canonical_url(url)
        except ValueError:
            return None

    assert key(mine) == key(reference)


@settings(max_examples=200, suppress_health_check=list(HealthCheck), deadline=None)
@given(st.text(alphabet="<>a href=\"=/ #:x\x00\n'&;!-", max_size=120))
def test_extract_links_never_raises_on_junk(html: str) -> None:
    assert isinstance(extract_links(html, PAGE), frozenset)
    assert isinstance(extract_links(html.encode("utf-8", "surrogatepass"), PAGE), frozenset)
