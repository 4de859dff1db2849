"""The pages around the dashboard: a refused request explained, the favicon, readable job errors.

Browser checks of the same pages (layout at 1366 px, a screenshot) are in
``tests/test_browser_pages.py``.
"""

from __future__ import annotations

import re
from typing import Any

import pytest
from django.contrib.staticfiles import finders

from archive.models import Site
from dashboard.views.jobs import SENTENCE_CHARS, explain
from jobs.models import JobRecord
from tests.factories import make_user

# --- the 403 page --------------------------------------------------------------------------


@pytest.mark.django_db
def test_a_viewer_who_tries_to_upload_is_told_what_the_role_allows(client: Any) -> None:
    make_user("head", role="admin")
    client.force_login(make_user("reader", role="viewer"))
    response = client.get("/sites/upload/")
    assert response.status_code == 403
    page = response.content.decode()
    assert '<h1 id="denied-heading">Your role cannot add seeds</h1>' in page
    assert (
        "Your role, <strong>Viewer</strong>, lets you look at the sites, their histories, crawl "
        "lists, evaluations and jobs, and download them, but not add seeds." in page
    )
    assert "ask an admin (head)" in page and "to make you a librarian" in page
    assert re.search(r'href="/static/css/base\.[0-9a-f]{12}\.css"', page)  # HACS's own page
    assert "Upload seeds</a>" not in page  # the menu still hides what the viewer cannot do


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("path", "action"),
    [
        ("/jobs/retry/", "retry failed sites"),
        ("/jobs/health/", "run a health check"),
        ("/crawl-list/build/", "build crawl lists"),
        ("/evaluation/start/", "start evaluations"),
    ],
)
def test_each_refused_action_is_named(client: Any, path: str, action: str) -> None:
    client.force_login(make_user("reader", role="viewer"))
    response = client.post(path)
    assert response.status_code == 403
    assert f"but not {action}." in response.content.decode()
    assert not JobRecord.objects.exists() and Site.objects.count() == 0


# --- the favicon ---------------------------------------------------------------------------


@pytest.mark.django_db
def test_the_favicon_is_linked_and_served(logged_in_client: Any) -> None:
    page = logged_in_client.get("/").content.decode()
    assert re.search(
        r'<link rel="icon" href="/static/favicon\.[0-9a-f]{12}\.svg" type="image/svg\+xml">', page
    )
    path = finders.find("favicon.svg")
    assert path is not None
    with open(path, encoding="utf-8") as svg:
        assert svg.read().startswith('<svg xmlns="http://www.w3.org/2000/svg"')


@pytest.mark.django_db
def test_favicon_ico_leads_to_the_svg_even_before_logging_in(client: Any) -> None:
    response = client.get("/favicon.ico")
    assert response.status_code == 302
    assert re.fullmatch(r"/static/favicon\.[0-9a-f]{12}\.svg", response["Location"])


# --- static files: hashed names, compressed, cached for a year ------------------------------


@pytest.mark.django_db
def test_static_files_are_named_by_content_compressed_and_cached_for_a_year(
    logged_in_client: Any,
) -> None:
    page = logged_in_client.get("/").content.decode()
    found = re.search(r'<script src="(/static/plotly/plotly\.min\.[0-9a-f]{12}\.js)"', page)
    assert found, "Plotly is not named by its content"
    response = logged_in_client.get(found.group(1), HTTP_ACCEPT_ENCODING="gzip, deflate")
    assert response.status_code == 200
    assert response["Content-Encoding"] == "gzip"
    assert "max-age=31536000" in response["Cache-Control"]
    assert "immutable" in response["Cache-Control"]
    body = b"".join(response.streaming_content)
    assert len(body) < 2_000_000  # plotly.min.js is 4.8 MB; gzipped it is about 1.4 MB
    plain = logged_in_client.get(found.group(1))
    assert "Content-Encoding" not in plain
    # The unhashed name is not served: only the collected, hashed copies are.
    assert logged_in_client.get("/static/plotly/plotly.min.js").status_code == 404


# --- errors on the Jobs page ---------------------------------------------------------------


def test_an_exception_type_gives_way_to_its_message() -> None:
    explained = explain("redis.exceptions.ConnectionError: the queue could not be reached")
    assert explained.sentence == "The queue could not be reached."
    assert explained.detail == "redis.exceptions.ConnectionError: the queue could not be reached"


def test_a_bare_exception_is_named_and_its_text_kept_behind_the_toggle() -> None:
    explained = explain("Traceback (most recent call last):\n  File ...\nKeyError: 'x'")
    assert explained.sentence == (
        "An unexpected error (KeyError); the details below are for whoever runs HACS."
    )
    assert explained.detail.startswith("Traceback (most recent call last):\n")
    told = explain("Traceback (most recent call last):\n  File ...\nOSError: the disk is full")
    assert told.sentence == "The disk is full."
    short = explain("KeyError: 'site_id'")
    assert short.sentence == (
        "An unexpected error (KeyError); the details below are for whoever runs HACS."
    )
    assert short.detail == "KeyError: 'site_id'"


def test_a_sentence_stays_a_sentence_and_a_long_text_is_cut() -> None:
    plain = "CDX server answered 503 for cs.uni.edu/~ada; retry later."
    assert explain(plain).sentence == "CDX server answered 503 for cs.uni.edu/~ada; retry later."
    assert explain(plain).detail == ""
    long = "The archive answered slowly. " + "x" * 2000
    cut = explain(long)
    assert cut.sentence == "The archive answered slowly."
    assert cut.detail == long
    words = explain("word " * 200)
    assert len(words.sentence) <= SENTENCE_CHARS + 1 and words.sentence.endswith("…")
    assert explain("").sentence == ""


@pytest.mark.django_db
def test_the_jobs_page_shows_sentences_with_the_raw_text_behind_a_toggle(
    logged_in_client: Any, redis_url: str
) -> None:
    JobRecord.objects.create(
        rq_id="job-1",
        kind="import",
        queue="import",
        status="partial",
        total=2,
        done=2,
        error="ValueError: the archive sent a page that is not HTML and cannot be parsed",
        failures=[{"item": "http://cs.uni.edu/~ada/", "reason": "OSError: disk full\nmore"}],
    )
    page = logged_in_client.get("/jobs/").content.decode()
    assert '<div class="error" data-field="error">The archive sent a page that is not HTML' in page
    assert "<summary>Details</summary><pre>ValueError: the archive sent a page" in page
    assert "http://cs.uni.edu/~ada/</span>: Disk full." in page
    assert "<pre>OSError: disk full\nmore</pre>" in page
    status = logged_in_client.get("/jobs/status.json").json()
    assert status["jobs"][0]["error"].startswith("The archive sent a page that is not HTML")


@pytest.mark.django_db
def test_every_page_a_viewer_is_refused_names_what_was_refused(client: Any) -> None:
    from django.urls import URLPattern, get_resolver

    client.force_login(make_user("reader", role="viewer"))
    refused = []
    for pattern in get_resolver("dashboard.urls").url_patterns:
        assert isinstance(pattern, URLPattern)
        path = "/" + re.sub(r"<(?:int|str|path):\w+>", "1", str(pattern.pattern))
        for method in (client.get, client.post):
            response = method(path)
            if response.status_code == 403:
                refused.append(pattern.name)
                assert "but not do this" not in response.content.decode(), pattern.name
    assert {"upload-seeds", "job-retry", "crawl-list-create"} <= set(refused)
