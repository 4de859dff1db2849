"""Every page of HACS is behind a login."""

from __future__ import annotations

import re
from typing import Any

import pytest
from django.urls import URLPattern, URLResolver, get_resolver

pytestmark = pytest.mark.django_db

# The login page, and the icon browsers ask for before anyone has logged in.
PUBLIC = {"login", "favicon"}
# The feeds a feed reader opens with a user's secret token in the address instead of a login:
# any other token answers 404 (tests/test_feeds.py).
TOKEN_ADDRESSED = {"feed-updates", "feed-tag", "feed-list"}


def all_paths(public: set[str] = PUBLIC | TOKEN_ADDRESSED) -> list[tuple[str, str]]:
    """Every URL HACS serves (admin and django-rq included) but ``public``, with sample
    arguments filled in."""
    found: list[tuple[str, str]] = []

    def walk(patterns: list[Any], prefix: str) -> None:
        for pattern in patterns:
            text = prefix + str(pattern.pattern)
            if isinstance(pattern, URLResolver):
                walk(pattern.url_patterns, text)
            elif isinstance(pattern, URLPattern):
                if pattern.name in public:
                    continue
                path = re.sub(r"<int:\w+>|\(\?P<\w+>\\d\+\)", "1", text)
                path = re.sub(r"<(?:str:|slug:|path:)?\w+>|\(\?P<\w+>[^)]*\)", "x", path)
                path = path.replace("^", "").replace("$", "").replace("\\", "")
                found.append((pattern.name or text, "/" + path))

    walk(get_resolver().url_patterns, "")
    return found


def test_the_url_list_covers_the_dashboard() -> None:
    names = {name for name, _ in all_paths()}
    assert {"home", "jobs", "job-status", "site-list", "upload-seeds", "crawl-list"} <= names


@pytest.mark.parametrize(("name", "path"), all_paths())
def test_anonymous_visitors_are_sent_to_login(client: Any, name: str, path: str) -> None:
    response = client.get(path)
    assert response.status_code in (301, 302), f"{name} {path} answered {response.status_code}"
    assert "/login/" in response["Location"]


def test_feeds_without_their_users_token_are_not_found(client: Any) -> None:
    token_addressed = [(name, path) for name, path in all_paths(PUBLIC) if name in TOKEN_ADDRESSED]
    assert {name for name, _path in token_addressed} == TOKEN_ADDRESSED
    for name, path in token_addressed:
        assert client.get(path).status_code == 404, name


def test_the_login_page_itself_is_public(client: Any) -> None:
    response = client.get("/accounts/login/")
    assert response.status_code == 200
    assert b"Log in to HACS" in response.content


def test_a_logged_in_librarian_sees_the_dashboard_shell(logged_in_client: Any) -> None:
    response = logged_in_client.get("/")
    assert response.status_code == 200
    for label in (b"Sites", b"Upload seeds", b"Crawl list", b"Evaluation", b"Jobs"):
        assert label in response.content


def test_logging_in_with_the_form_works(client: Any, user: Any) -> None:
    response = client.post(
        "/accounts/login/", {"username": user.username, "password": "correct horse battery staple"}
    )
    assert response.status_code == 302
    assert client.get("/").status_code == 200
