"""A crawl's WARC or WACZ file uploaded on the Upload page, beside seed lists: streamed to an
owner-only file within its cap, imported by a job, deleted after."""

from __future__ import annotations

import stat
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from archive.models import Capture
from jobs.models import JobRecord
from operations.jobs import import_uploaded_crawl
from testbed.crawls import Page, wacz_bytes, warc_bytes
from tests.factories import make_site, make_user

pytestmark = pytest.mark.django_db
WHEN = datetime(2024, 6, 1, tzinfo=UTC)


@pytest.fixture()
def uploads(settings: Any, tmp_path: Path) -> Path:
    settings.VAR_DIR = tmp_path / "var"
    return tmp_path / "var" / "crawl-uploads"


def crawl_file() -> bytes:
    pages = [
        Page("http://www.cs.example.edu/~up/", WHEN, ["http://doi.org/10.4/a"]),
        Page("http://elsewhere.example.org/", WHEN, []),
    ]
    return wacz_bytes({"data.warc.gz": warc_bytes(pages)})


def test_a_wacz_upload_is_imported_by_a_job_and_then_deleted(
    uploads: Path, logged_in_client: Any, redis_url: str
) -> None:
    make_site(seed_url="http://www.cs.example.edu/~up/", canonical_key="edu,example,cs)/~up")
    upload = SimpleUploadedFile("crawl-2024.wacz", crawl_file(), "application/wacz")
    response = logged_in_client.post("/sites/upload/crawl/", {"file": upload}, follow=True)
    assert "crawl-2024.wacz is being imported" in response.content.decode()
    record = JobRecord.objects.get(label="Uploaded crawl-2024.wacz")
    [held] = list(uploads.iterdir())
    assert stat.S_IMODE(held.stat().st_mode) == 0o600
    assert stat.S_IMODE(uploads.stat().st_mode) == 0o700

    import_uploaded_crawl(record.pk, str(held), "crawl-2024.wacz")  # what the worker runs
    capture = Capture.objects.get()
    assert capture.source == "wacz:crawl-2024.wacz" and capture.link_floor == -1
    record.refresh_from_db()
    assert record.status == "finished" and record.counts["captures outside every seed"] == 1
    assert list(uploads.iterdir()) == []


def test_an_upload_past_the_cap_is_stopped_and_nothing_kept(
    uploads: Path, logged_in_client: Any, settings: Any
) -> None:
    settings.HACS_MAX_CRAWL_UPLOAD_BYTES = 2000
    upload = SimpleUploadedFile("big.wacz", crawl_file() + b"\0" * 5000)
    response = logged_in_client.post("/sites/upload/crawl/", {"file": upload}, follow=True)
    assert "HACS_MAX_CRAWL_UPLOAD_BYTES" in response.content.decode()
    assert list(uploads.iterdir()) == []
    assert not JobRecord.objects.exists()


def test_a_file_that_is_no_crawl_by_its_name_is_refused(
    uploads: Path, logged_in_client: Any
) -> None:
    upload = SimpleUploadedFile("seeds.csv", b"url\nhttp://a.edu/~b/\n")
    response = logged_in_client.post("/sites/upload/crawl/", {"file": upload}, follow=True)
    assert "is not a WARC or WACZ file by its name" in response.content.decode()
    assert list(uploads.iterdir()) == []


def test_a_viewer_uploads_nothing(uploads: Path, client: Any) -> None:
    client.force_login(make_user("reader", role="viewer"))
    upload = SimpleUploadedFile("crawl.wacz", crawl_file())
    response = client.post("/sites/upload/crawl/", {"file": upload})
    assert response.status_code == 403
    assert "but not import crawl files." in response.content.decode()
    assert not uploads.exists() or list(uploads.iterdir()) == []


def test_the_upload_needs_its_csrf_token(uploads: Path, user: Any) -> None:
    from django.test import Client

    guarded = Client(enforce_csrf_checks=True)
    guarded.force_login(user)
    upload = SimpleUploadedFile("crawl.wacz", crawl_file())
    assert guarded.post("/sites/upload/crawl/", {"file": upload}).status_code == 403
    assert not JobRecord.objects.exists()


def test_the_upload_page_offers_the_crawl_upload(logged_in_client: Any) -> None:
    html = logged_in_client.get("/sites/upload/").content.decode()
    assert 'action="/sites/upload/crawl/"' in html and "Import a crawl (WARC or WACZ)" in html


def test_a_crawl_file_larger_than_a_form_is_taken_within_its_own_limit(
    uploads: Path, logged_in_client: Any, redis_url: str, settings: Any
) -> None:
    """The request limit of the crawl upload is its own setting, not a form's 2.5 MiB, and it is
    checked before the body is read like the seed list's."""
    settings.HACS_MAX_CRAWL_UPLOAD_BYTES = 8 * 1024 * 1024
    big = crawl_file() + b"\0" * (3 * 1024 * 1024)  # past any form's limit, within the file's
    upload = SimpleUploadedFile("big-crawl.wacz", big, "application/wacz")
    response = logged_in_client.post("/sites/upload/crawl/", {"file": upload}, follow=True)
    assert "big-crawl.wacz is being imported" in response.content.decode()
    settings.HACS_MAX_CRAWL_UPLOAD_BYTES = 2 * 1024 * 1024  # now the declared length is over it
    upload = SimpleUploadedFile("big-crawl.wacz", big, "application/wacz")
    refused = logged_in_client.post("/sites/upload/crawl/", {"file": upload})
    assert refused.status_code == 413
    assert "a crawl file (HACS_MAX_CRAWL_UPLOAD_BYTES) and its form" in refused.content.decode()
