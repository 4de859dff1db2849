"""The HTML of one page version, and the set of links it truly holds.

The HTML is written the way academics' homepages were: HTML 4 in upper case with unclosed
``<li>``, XHTML 1.0 served as ``application/xhtml+xml``, unquoted attributes, ``<base href>``,
``<area>`` links in an image map. Next to the real links it holds things a link extractor must
not count (DESIGN.md rule 2): ``mailto:``, ``javascript:`` and ``ftp:`` anchors, ``<link>`` and
``<img>`` URLs, and a commented-out anchor. Every real link goes through ``HrefWriter``, which
returns its canonical form, so the link set recorded in the truth is exactly what a correct
reader finds in these bytes.
"""

from __future__ import annotations

import html

from hacs_demo.hashing import stable_hash
from hacs_demo.model import XHTML, Page, Target, Version, external, internal
from hacs_demo.site import Site

_NAV_LABELS = {"pubs": "Publications", "teaching": "Teaching", "project": "Projects", "cv": "CV"}
_HEADINGS = {
    "home": "News and selected publications",
    "pubs": "Publications",
    "teaching": "Courses",
    "course": "Schedule",
    "project": "Releases",
    "subproject": "Downloads",
}


class _Markup:
    """How one page version writes tags and attributes, and the canonical links it has written."""

    def __init__(self, site: Site, page: Page, epoch: int) -> None:
        self.site = site
        self.page = page
        self.epoch = epoch
        self.xhtml = page.mime == XHTML
        self.upper = site.style.upper and not self.xhtml
        self.quote = '"' if self.xhtml else site.style.quote
        self.end = " />\n" if self.xhtml else ">\n"  # closes an empty element's line
        self.links: set[str] = set()

    def tag(self, name: str) -> str:
        return name.upper() if self.upper else name

    def attr(self, name: str, value: str) -> str:
        name = name.upper() if self.upper else name
        value = html.escape(value, quote=True)
        if self.quote == "" and value and all(c.isalnum() or c in "./:-_~%#" for c in value):
            return f"{name}={value}"
        q = self.quote or '"'
        return f"{name}={q}{value}{q}"

    def href(self, target: Target, slot: str) -> str:
        """How the page writes a link to ``target``; the link joins the page's link set."""
        written, canon = self.site.hrefs.href(self.page, target, slot, self.epoch)
        self.links.add(canon)
        return written

    def a(self, target: Target, label: str, slot: str) -> str:
        tag = self.tag("a")
        return f"<{tag} {self.attr('href', self.href(target, slot))}>{label}</{tag}>"


def render_html(site: Site, page: Page, ver: Version) -> tuple[str, set[str]]:
    """The page's HTML at version ``ver`` and its canonical links (DESIGN.md rule 2)."""
    m = _Markup(site, page, ver.epoch)
    title = _title(site, page)
    out = _head(m, title)
    out.append(_nav(m))
    out.append(f"<{m.tag('h1')}>{title}</{m.tag('h1')}>\n")
    if page.role == "home":
        out += _home_intro(m, ver)
    out += _pointers(m)
    out += _item_list(m, ver)
    out += _footer(m, ver)
    return "".join(out), m.links


def _title(site: Site, page: Page) -> str:
    name_html = html.escape(f"{site.author.first} {site.author.last}")
    segments = page.path.strip("/").split("/")
    return {
        "home": f"{name_html} - Home Page",
        "pubs": f"Publications of {name_html}",
        "teaching": f"Teaching - {name_html}",
        "course": f"{segments[-1].upper()} - {name_html}",
        "project": f"Project {segments[-1]} - {name_html}",
        "subproject": f"Data - {segments[-2 if len(segments) > 1 else -1]} - {name_html}",
    }[page.role]


def _head(m: _Markup, title: str) -> list[str]:
    """Doctype, charset, title, ``<base href>`` and the stylesheet (a URL, not a link)."""
    site, page, tag = m.site, m.page, m.tag
    out: list[str] = []
    if m.xhtml:
        out.append('<?xml version="1.0" encoding="UTF-8"?>\n')
        out.append(
            '<!DOCTYPE html PUBLIC "-//W3C//DTD XHTML 1.0 Strict//EN" '
            '"http://www.w3.org/TR/xhtml1/DTD/xhtml1-strict.dtd">\n'
            '<html xmlns="http://www.w3.org/1999/xhtml">\n<head>\n'
        )
    else:
        out.append(
            '<!DOCTYPE HTML PUBLIC "-//W3C//DTD HTML 4.01 Transitional//EN">\n'
            if m.upper
            else "<!DOCTYPE html>\n"
        )
        out.append(f"<{tag('html')}>\n<{tag('head')}>\n")
    if site.style.declare_charset or m.xhtml:
        charset = "utf-8" if m.xhtml else site.style.charset
        out.append(
            f'<meta http-equiv="Content-Type" content="text/html; charset={charset}"' + m.end
        )
    out.append(f"<{tag('title')}>{title}</{tag('title')}>\n")
    if page.base_href:
        www = "www." if site.style.www else ""
        host = site.author.host.upper() if site.index % 3 == 0 else site.author.host
        base = f"{site.urls.scheme_at(m.epoch)}://{www}{host}{site.urls.root_path}"
        out.append(f"<{tag('base')} {m.attr('href', base)}" + m.end)
    style = ("../" * page.path.count("/") if not page.base_href else "") + "style.css"
    out.append(f"<{tag('link')} {m.attr('rel', 'stylesheet')} {m.attr('href', style)}" + m.end)
    out.append(f"</{tag('head')}>\n<{tag('body')}>\n")
    return out


def _nav(m: _Markup) -> str:
    """The navigation bar: the same on every page of the site."""
    nav = [m.a(internal(""), "Home", "nav")]
    for other in m.site.pages:
        if other.role in _NAV_LABELS:
            nav.append(m.a(internal(other.path), _NAV_LABELS[other.role], "nav"))
    return f"<{m.tag('div')} {m.attr('id', 'nav')}>" + " | ".join(nav) + f"</{m.tag('div')}>\n"


def _home_intro(m: _Markup, ver: Version) -> list[str]:
    """The homepage's photo, introduction, e-mail address and profile links."""
    site, tag, attr = m.site, m.tag, m.attr
    author = site.author
    out: list[str] = []
    if any(p.role == "photo" for p in site.pages):
        out.append(_photo(m))
    name_html = html.escape(f"{author.first} {author.last}")
    out.append(
        f"<{tag('p')}>{name_html} is a professor of computer science at "
        f"{author.uni.upper()}. Research interests: {html.escape(', '.join(author.tags))}."
        + (f"</{tag('p')}>\n" if m.xhtml or not m.upper else "\n")
    )
    email = f"{author.user}@{author.host}"
    out.append(
        f"<{tag('p')}>Email: <{tag('a')} {attr('href', 'mailto:' + email)}>{email}"
        f"</{tag('a')}>. Office hours: Tuesday 2-{3 + ver.cosmetic % 4}pm"
        f" (room {100 + ver.cosmetic}).</{tag('p')}>\n"
    )
    profiles = [
        (
            external(
                "scholar.google.com",
                "/citations",
                query=f"user={stable_hash(author.user) % 10**8:08d}&hl=en",
            ),
            "Scholar",
        ),
        (external("dblp.org", f"/pid/{site.index}/{stable_hash(author.user) % 9000}.html"), "DBLP"),
        (external("github.com", f"/{author.user}", www=True), "GitHub"),
    ]
    out.append(
        f"<{tag('p')}>Profiles: "
        + ", ".join(m.a(t, label, "profile") for t, label in profiles)
        + f". <{tag('a')} {attr('href', 'javascript:void(0)')}>Show more</{tag('a')}>"
        + f"</{tag('p')}>\n"
    )
    return out


def _photo(m: _Markup) -> str:
    """The author's photo; on some sites an image map whose ``<area>`` elements are links."""
    tag, attr = m.tag, m.attr
    author = m.site.author
    img = f"<{tag('img')} {attr('src', 'photo.jpg')} {attr('alt', 'photo')}"
    if not (m.site.style.image_map and not m.xhtml):
        return img + m.end
    img += f" {attr('usemap', '#logos')}>\n<{tag('map')} {attr('name', 'logos')}>"
    for target, coords, slot in (
        (external(author.host, "/", https=False, www=True), "0,0,60,30", "area1"),
        (external(f"{author.uni}.edu", "/", https=False, www=True), "60,0,120,30", "area2"),
    ):
        img += (
            f"<{tag('area')} {attr('shape', 'rect')} {attr('coords', coords)} "
            f"{attr('href', m.href(target, slot))}>"
        )
    return img + f"</{tag('map')}>\n"


def _pointers(m: _Markup) -> list[str]:
    """Links down the site: from ``teaching/`` to the course, from a project to its data."""
    tag = m.tag
    out: list[str] = []
    for other in m.site.pages:
        if m.page.role == "teaching" and other.role == "course":
            code = other.path.strip("/").split("/")[-1].upper()
            link = m.a(internal(other.path), code, "body")
            out.append(f"<{tag('p')}>Current course: {link}</{tag('p')}>\n")
        if m.page.role == "project" and other.role == "subproject":
            link = m.a(internal(other.path), "data", "body")
            out.append(f"<{tag('p')}>Datasets: {link}</{tag('p')}>\n")
    return out


def _item_list(m: _Markup, ver: Version) -> list[str]:
    """The page's items, newest first as people write them."""
    page, tag = m.page, m.tag
    li_close = f"</{tag('li')}>" if (m.xhtml or not m.upper) else ""
    out = [f"<{tag('h2')}>{_HEADINGS[page.role]}</{tag('h2')}>\n<{tag('ul')}>\n"]
    for item_id in reversed(ver.items):
        parts = []
        for seg in page.items[item_id].segments:
            if isinstance(seg, tuple):
                parts.append(m.a(seg[0], seg[1], f"item{item_id}"))
            else:
                parts.append(seg)  # our own markup (<i>, <b>)
        if page.role == "pubs" and not m.xhtml:
            js = m.attr("href", f"javascript:toggle({item_id})")
            parts.append(f" [<{tag('a')} {js}>bibtex</{tag('a')}>]")
        out.append(f"<{tag('li')}>" + "".join(parts) + li_close + "\n")
    out.append(f"</{tag('ul')}>\n")
    return out


def _footer(m: _Markup, ver: Version) -> list[str]:
    """A commented-out link, the FTP mirror, and the address with its changing revision."""
    site, page, tag = m.site, m.page, m.tag
    out: list[str] = []
    if not m.xhtml:
        out.append(
            f'<!-- old link, kept for reference: <a href="old/{page.role}.html">old</a> -->\n'
        )
    if page.role == "home" and not m.xhtml:
        mirror = f"ftp://ftp.{site.author.host}/pub/{site.author.user}/"
        out.append(
            f"<{tag('p')}>Software mirror: <{tag('a')} {m.attr('href', mirror)}>ftp</{tag('a')}>"
            f"</{tag('p')}>\n"
        )
    out.append("<hr" + (" />" if m.xhtml else ">") + "\n")
    stamp = ""
    if site.style.dated_footer:
        stamp = f"Last modified: {site.span.at(ver.sec).strftime('%B %d, %Y')}. "
    out.append(
        f"<{tag('address')}>{stamp}{html.escape(site.author.uni.upper())} Department of Computer "
        f"Science. Revision {ver.cosmetic}.</{tag('address')}>\n"
    )
    out.append(f"</{tag('body')}>\n</{tag('html')}>\n")
    return out
