"""Debian's Chromium driven by Playwright, for the browser tests (``pytest -m browser``).

``tests/conftest.py`` loads this module as a plugin, so every test can ask for the
``browser_page`` fixture; ``log_in`` signs a user made with ``PASSWORD`` in through the login
page.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from typing import Any

import pytest
from django.db import connections

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
PASSWORD = "a long browser password"


@pytest.fixture(scope="module")
def chromium() -> Iterator[Any]:
    """One Chromium for a module's browser tests: starting Playwright's driver and the browser
    costs seconds a time on a loaded machine; each test still gets a context of its own, so no
    cookie, storage or cache passes from one test to the next."""
    from playwright.sync_api import sync_playwright

    # Playwright's synchronous API runs an event loop in this thread; the ORM calls the tests
    # make between browser steps are still plain synchronous code.
    os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"
    try:
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(
                executable_path=CHROMIUM,
                args=[
                    "--no-sandbox",
                    "--disable-gpu",
                    "--disable-background-networking",
                    "--disable-component-update",
                    "--disable-sync",
                    "--no-first-run",
                ],
            )
            yield browser
            browser.close()
    finally:
        os.environ.pop("DJANGO_ALLOW_ASYNC_UNSAFE", None)


@pytest.fixture()
def browser_page(chromium: Any) -> Iterator[Any]:
    """A fresh browser context and page for one test, on a 1366 × 768 laptop screen."""
    context = chromium.new_context(viewport={"width": 1366, "height": 768}, accept_downloads=True)
    page = context.new_page()
    page.set_default_timeout(30_000)
    yield page
    context.close()
    # The test's ORM calls, made while Playwright's event loop runs, hold connections that
    # the session's teardown does not reach: on PostgreSQL it could not drop the test
    # database ("being accessed by other users"). Browser tests are transactional (the live
    # server must see their data), so nothing is left open to roll back.
    connections.close_all()


def log_in(page: Any, base: str, username: str) -> None:
    page.goto(f"{base}/accounts/login/")
    page.get_by_label("Username").fill(username)
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Log in").click()
    page.wait_for_selector("text=Overview")
