"""Every page writes a date one way, "22 May 2018", and a time "22 May 2018, 05:00 UTC"
(``dashboard/templatetags/hacs_format.py``, ``scheduling.cells``): no ISO date is left in the
text a librarian reads (``datetime`` attributes, chart data and downloads keep ISO 8601)."""

from __future__ import annotations

import io
import re
from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command

from archive.models import Site
from jobs.models import JobRecord
from scheduling.models import CrawlList
from tests.test_evaluation_views import done_run, real_results

ISO_DATE = re.compile(r"\b(?:19|20)\d\d-[01]\d-[0-3]\d\b")


def visible_text(page: str) -> str:
    """The page as read: no scripts, styles or tags (so no attribute either)."""
    page = re.sub(r"<(script|style)\b.*?</\1>", " ", page, flags=re.S)
    page = re.sub(r"<!--.*?-->", " ", page, flags=re.S)
    return re.sub(r"<[^>]+>", " ", page)


@pytest.mark.django_db
def test_no_page_shows_an_iso_date(logged_in_client: Any, settings: Any, tmp_path: Path) -> None:
    settings.VAR_DIR = tmp_path
    call_command("load_demo", sites=4, seed=3, stdout=io.StringIO())
    call_command("crawl_list", "--theta", "0", stdout=io.StringIO(), stderr=io.StringIO())
    done_run(real_results())
    site = Site.objects.order_by("pk").first()
    crawl = CrawlList.objects.get()
    assert JobRecord.objects.exists()
    pages = [
        "/",
        "/sites/",
        f"/sites/{site.pk}/",
        f"/crawl-list/?list={crawl.pk}",
        "/jobs/",
        "/evaluation/",
        "/feeds/",
    ]
    for path in pages:
        response = logged_in_client.get(path)
        assert response.status_code == 200, path
        found = ISO_DATE.findall(visible_text(response.content.decode()))
        assert found == [], (path, found[:5])
