"""The demo's captures link to the replay HACS serves of its own synthetic archive
(/demo-archive/<timestamp>/<url>), while a real collection's still link to its Wayback."""

from __future__ import annotations

import io
import json
import re
from html import unescape
from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command

from archive.models import Capture, Site
from hacs.formats.cdx import memento_url
from hacs_demo.archive import DemoArchiveReader, DemoCapture, OrphanRevisit
from tests.factories import make_capture, make_site

pytestmark = pytest.mark.django_db


@pytest.fixture()
def demo_dir(settings: Any, tmp_path: Path) -> Path:
    """``load_demo`` run as on a new installation, into a var directory of the test's own."""
    settings.VAR_DIR = tmp_path
    call_command("load_demo", sites=4, seed=3, stdout=io.StringIO())
    return tmp_path / "demo"


def every_capture(directory: Path) -> list[DemoCapture]:
    reader = DemoArchiveReader(directory)
    return [c for found in reader._by_key.values() for c in found]


def replay_path(capture: DemoCapture) -> str:
    return f"/demo-archive/{capture.timestamp}/{capture.url}"


def test_the_demos_capture_links_lead_to_its_own_archive(
    demo_dir: Path, logged_in_client: Any, settings: Any
) -> None:
    site = Site.objects.order_by("pk").first()
    assert site is not None
    page = logged_in_client.get(f"/sites/{site.pk}/").content.decode()
    links = [unescape(h) for h in re.findall(r'<a href="([^"]+)" rel="noopener', page)]
    links.remove(site.seed_url)  # the live homepage, linked once at the top
    assert links and all(h.startswith("/demo-archive/") for h in links)
    assert settings.HACS_WAYBACK_URL not in page
    # The captures table links each capture at its exact time in the demo archive.
    table = re.findall(r'<td class="when"><a href="([^"]+)"', page)
    held = {replay_path(c) for c in every_capture(demo_dir)}
    assert table and {unescape(h) for h in table} <= held
    assert logged_in_client.get(unescape(table[0])).status_code == 200


def test_an_archived_page_is_served_with_its_banner_inside_a_sandbox(
    demo_dir: Path, logged_in_client: Any
) -> None:
    truth = json.loads((demo_dir / "truth.json").read_text(encoding="utf-8"))
    author = next(site for site in truth["sites"] if site["author"].isascii())
    first, last = (
        author["author"].split(" ", 1)
        if ", " not in author["author"]
        else (author["author"].split(", ")[::-1])
    )
    home = next(
        c
        for c in every_capture(demo_dir)
        if c.status == 200 and re.fullmatch(rf"https?://[^/]+/~{author['user']}/", c.url)
    )
    response = logged_in_client.get(replay_path(home))
    assert response.status_code == 200
    assert response["Content-Security-Policy"].startswith("sandbox;")
    assert "default-src 'none'" in response["Content-Security-Policy"]
    assert response["X-Content-Type-Options"] == "nosniff"
    body = response.content.decode("latin-1")
    # The banner comes first in the body and says what this archive is.
    assert re.search(r'<body[^>]*>\s*<div id="hacs-demo-archive-banner"', body, re.I)
    banner = re.search(r'<div id="hacs-demo-archive-banner".*?</div>', body, re.S)[0]  # type: ignore[index]
    assert "HACS demo archive &#8212; synthetic." in banner
    assert "no real site or web archive ever held this page" in banner
    assert home.url in banner
    # The stored page follows, its links pointed back into the replay at the same time.
    assert f"{first} {last} - Home Page" in body
    hrefs = re.findall(r'<a href="(/demo-archive/[^"]+)"', body, re.I)
    assert hrefs and all(h.startswith(f"/demo-archive/{home.timestamp}/http") for h in hrefs)


def test_revisits_files_redirects_and_orphans_replay_as_an_archive_would(
    demo_dir: Path, logged_in_client: Any
) -> None:
    reader = DemoArchiveReader(demo_dir)
    captures = every_capture(demo_dir)
    revisit = next(c for c in captures if c.status is None and _has_original(reader, c))
    response = logged_in_client.get(replay_path(revisit))
    assert response.status_code == 200 and b"hacs-demo-archive-banner" in response.content
    pdf = next(c for c in captures if c.status == 200 and c.mimetype == "application/pdf")
    response = logged_in_client.get(replay_path(pdf))
    assert response["Content-Type"] == "application/pdf"
    assert response.content == reader.memento(pdf).body  # the stored file, untouched
    redirect = next(c for c in captures if c.status in (301, 302))
    page = logged_in_client.get(replay_path(redirect)).content.decode()
    target = reader.memento(redirect).header("Location")
    assert target and f"the server answered {redirect.status}" in page
    assert re.search(r'a redirect to <a href="/demo-archive/\d{14}/http[^"]+">', page)
    orphan = next(c for c in captures if c.status is None and not _has_original(reader, c))
    response = logged_in_client.get(replay_path(orphan))
    assert response.status_code == 404
    assert "is a revisit of a response the demo archive does not hold" in response.content.decode()


def _has_original(reader: DemoArchiveReader, capture: DemoCapture) -> bool:
    try:
        reader.memento(capture)
    except OrphanRevisit:
        return False
    return True


def test_a_moment_between_captures_gets_the_nearest_and_a_stranger_url_none(
    demo_dir: Path, logged_in_client: Any
) -> None:
    home = next(c for c in every_capture(demo_dir) if c.status == 200)
    earlier = f"/demo-archive/19990101000000/{home.url}"
    response = logged_in_client.get(earlier)
    assert response.status_code == 200
    missing = logged_in_client.get("/demo-archive/20170101000000/http://nowhere.example.org/")
    assert missing.status_code == 404
    assert "The demo archive holds no capture of this address." in missing.content.decode()
    bad = logged_in_client.get(f"/demo-archive/2017/{home.url}")
    assert bad.status_code == 404
    assert "is not a capture time" in bad.content.decode()


def test_without_the_demo_files_the_replay_says_what_to_do(
    settings: Any, tmp_path: Path, logged_in_client: Any
) -> None:
    settings.VAR_DIR = tmp_path
    response = logged_in_client.get("/demo-archive/20170101000000/http://cs.u.edu/~ana/")
    assert response.status_code == 404
    text = response.content.decode()
    assert "The demo archive cannot be read" in text and "Run load_demo again." in text


def test_a_real_collections_captures_still_link_to_its_wayback(
    logged_in_client: Any, settings: Any
) -> None:
    settings.HACS_WAYBACK_URL = "http://archive.test/web"
    site = make_site(seed_url="http://cs.u.edu/~ana/", author="Ana")
    capture = make_capture(site, source="cdx:web.archive.org")
    make_capture(
        site, source="warc:crawl-2020.warc.gz", timestamp=capture.timestamp.replace(year=2021)
    )
    page = logged_in_client.get(f"/sites/{site.pk}/").content.decode()
    for stored in Capture.objects.filter(site=site):
        expected = memento_url("http://archive.test/web", stored.timestamp, stored.url)
        assert f'<a href="{expected}" rel="noopener noreferrer">' in page
    assert "/demo-archive/" not in page
