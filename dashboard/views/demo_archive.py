"""The demo archive's replay: HACS serves the synthetic captures of its own demo itself.

``load_demo`` writes a synthetic archive under ``HACS_VAR_DIR/demo`` and imports it; no public
archive ever held those captures, so the Site page links them here instead of to a Wayback
machine (``dashboard.site_detail.capture_archive_url``).
``/demo-archive/<14-digit timestamp>/<url>`` answers with the capture of ``url`` nearest that
moment, as a Wayback machine does: an archived
page with a banner saying it is the synthetic demo archive and its links pointed back into the
replay, another file as it was stored, a redirect or a missing capture as a HACS page.

The archived bytes are served under a Content-Security-Policy ``sandbox``: a page runs no
script, has no access to HACS's own origin and loads nothing from the web.
"""

from __future__ import annotations

from pathlib import Path
from urllib.parse import urljoin

from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.template.loader import render_to_string
from django.urls import reverse
from django.views.decorators.http import require_GET

from hacs_demo.archive import (
    DemoArchiveError,
    DemoArchiveReader,
    OrphanRevisit,
    insert_banner,
    rewrite_links,
)
from hacs_demo.files import CDX_NAME

#: What an archived page may do in the browser: nothing but show itself and its images.
SANDBOX = (
    "sandbox; default-src 'none'; img-src 'self' data:; style-src 'self' 'unsafe-inline'; "
    "font-src 'self'; media-src 'self'"
)
_HTML_TYPES = ("text/html", "application/xhtml+xml")
_readers: dict[Path, tuple[float, DemoArchiveReader]] = {}


def demo_directory() -> Path:
    """Where ``load_demo`` writes the demo archive HACS replays."""
    return Path(settings.VAR_DIR) / "demo"


@require_GET
def replay(request: HttpRequest, timestamp: str, url: str) -> HttpResponse:
    url = _original_url(url, request.META.get("QUERY_STRING", ""))
    context: dict[str, object] = {"url": url, "timestamp": timestamp}
    if len(timestamp) != 14 or not timestamp.isdigit():
        context["problem"] = (
            f"“{timestamp}” is not a capture time: the demo archive's addresses read "
            "/demo-archive/YYYYMMDDhhmmss/URL (14 digits, UTC)."
        )
        return render(request, "dashboard/demo_archive.html", context, status=404)
    try:
        reader = _reader(demo_directory())
        capture = reader.nearest(url, timestamp)
        if capture is None:
            context["problem"] = "The demo archive holds no capture of this address."
            return render(request, "dashboard/demo_archive.html", context, status=404)
        memento = reader.memento(capture)
    except OrphanRevisit as error:
        context["problem"] = f"In the demo archive, {error}."
        return render(request, "dashboard/demo_archive.html", context, status=404)
    except DemoArchiveError as error:
        context["problem"] = f"The demo archive cannot be read: {error}. Run load_demo again."
        return render(request, "dashboard/demo_archive.html", context, status=404)

    def replayed(target: str) -> str:
        return reverse("demo-archive", args=[capture.timestamp, target])

    context.update(capture=capture, memento=memento)
    location = memento.header("Location")
    if 300 <= memento.status < 400 and location:
        target = urljoin(capture.url, location)
        context.update(location=target, location_href=replayed(target))
        return render(request, "dashboard/demo_archive.html", context)
    body = memento.body
    content_type = memento.content_type
    if content_type.split(";")[0].strip().lower() in _HTML_TYPES:
        banner = render_to_string("dashboard/demo_archive_banner.html", context, request)
        # ASCII with character references reads the same in whatever charset the page has.
        body = insert_banner(
            rewrite_links(body, capture.url, replayed), banner.encode("ascii", "xmlcharrefreplace")
        )
    response = HttpResponse(body, content_type=content_type)
    response["Content-Security-Policy"] = SANDBOX
    response["X-Content-Type-Options"] = "nosniff"
    response["Link"] = f'<{capture.url}>; rel="original"'
    return response


def _original_url(url: str, query: str) -> str:
    """The archived URL as asked for: ``http:/x`` (a slash lost on the way) reads ``http://x``,
    and the request's query string belongs to it."""
    for scheme in ("http:/", "https:/"):
        if url.startswith(scheme) and not url.startswith(scheme + "/"):
            url = scheme + "/" + url[len(scheme) :]
    return f"{url}?{query}" if query else url


def _reader(directory: Path) -> DemoArchiveReader:
    """The demo archive's index, read again when ``load_demo`` has rewritten it."""
    index = directory / CDX_NAME
    try:
        changed = index.stat().st_mtime
    except OSError:
        changed = -1.0
    cached = _readers.get(directory)
    if cached is None or cached[0] != changed:
        cached = (changed, DemoArchiveReader(directory))
        _readers[directory] = cached
    return cached[1]
