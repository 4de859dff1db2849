"""The Upload seeds page: every bad line explained, check before adding, imports started."""

from __future__ import annotations

from typing import Any

import pytest
import redis
from django.core.files.uploadedfile import SimpleUploadedFile

from archive.models import Site
from jobs.models import JobRecord
from tests.factories import make_site, make_user

SEEDS = (
    "url,author,tags\n"
    "http://www.cs.uni.edu/~ada/,Ada Lovelace,ml\n"
    "ftp://cs.uni.edu/~bob/,Bob,\n"
    "https://cs.uni.edu/~ada/index.html,Ada again,\n"
    "http://cs.uni.edu/~carl/,<script>alert(1)</script>,\n"
)


def upload(client: Any, action: str, data: bytes = SEEDS.encode(), **extra: Any) -> Any:
    form = {"file": SimpleUploadedFile("seeds.csv", data, "text/csv"), "action": action,
            "import_history": "on", **extra}  # fmt: skip
    return client.post("/sites/upload/", form)


@pytest.mark.django_db
def test_checking_reports_every_line_and_stores_nothing(logged_in_client: Any) -> None:
    response = upload(logged_in_client, "check")
    assert response.status_code == 200
    page = response.content.decode()
    assert "nothing stored yet" in page
    assert "Only http and https URLs can be crawled (this one is ftp:)" in page
    assert '<td class="num">3</td>' in page  # the rejected line's number
    assert '<strong data-count="merged">1</strong>' in page
    assert '<strong data-count="added">2</strong>' in page
    assert "&lt;script&gt;" in page and "<script>alert" not in page
    assert Site.objects.count() == 0


@pytest.mark.django_db(transaction=True)
def test_adding_stores_the_good_lines_and_starts_the_import(
    logged_in_client: Any, redis_url: str
) -> None:
    response = upload(logged_in_client, "import", tags="chemistry, 2026")
    page = response.content.decode()
    assert "Seed list added" in page and "follow its progress" in page
    assert Site.objects.count() == 2
    ada = Site.objects.get(author="Ada Lovelace")
    assert set(ada.tags.values_list("name", flat=True)) == {"ml", "chemistry", "2026"}
    record = JobRecord.objects.get(kind="import")
    assert record.total == 2
    assert redis.Redis.from_url(redis_url).llen("rq:queue:import") == 1


@pytest.mark.django_db
def test_pasted_urls_work_too(logged_in_client: Any) -> None:
    response = logged_in_client.post(
        "/sites/upload/", {"text": "http://a.edu/~x/\nnot a url\n", "action": "check"}
    )
    assert b"would be added" in response.content
    assert b"whitespace" in response.content  # line 2's reason


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b"\xff\xfe\x00b", b"not UTF-8 text"),
        (b"name,author\nx,y\n", b"has no &#x27;url&#x27; column"),
        (b"   \n", b"The file is empty"),
    ],
)
def test_unreadable_files_are_explained(logged_in_client: Any, data: bytes, message: bytes) -> None:
    make_site()
    response = upload(logged_in_client, "import", data)
    assert response.status_code == 400
    assert message in response.content
    assert Site.objects.count() == 1  # nothing stored is lost or added


@pytest.mark.django_db
def test_the_size_limit_is_explained(logged_in_client: Any, settings: Any) -> None:
    settings.HACS_MAX_UPLOAD_BYTES = 2048
    response = upload(logged_in_client, "check", b"http://a.edu/~x/\n" * 200)
    assert response.status_code == 400
    assert b"the limit is 2,048" in response.content


@pytest.mark.django_db
def test_an_empty_form_asks_for_a_file(logged_in_client: Any) -> None:
    response = logged_in_client.post("/sites/upload/", {"action": "check"})
    assert response.status_code == 400
    assert b"Choose a file or paste some URLs" in response.content


@pytest.mark.django_db
def test_viewers_cannot_upload(client: Any) -> None:
    client.force_login(make_user("reader", role="viewer"))
    assert client.get("/sites/upload/").status_code == 403
    assert upload(client, "import").status_code == 403
    assert Site.objects.count() == 0


@pytest.mark.django_db(transaction=True)
def test_failed_sites_can_be_retried_from_the_jobs_page(
    logged_in_client: Any, redis_url: str
) -> None:
    failed = make_site(import_status="failed", import_error="HTTP 503")
    make_site(import_status="done")
    page = logged_in_client.get("/jobs/")
    assert b"Retry all 1 failed site" in page.content
    response = logged_in_client.post("/jobs/retry/")
    assert response.status_code == 302
    record = JobRecord.objects.get(kind="import")
    assert record.total == 1 and "retry" in record.label
    assert failed.pk in record_site_ids(redis_url)


def record_site_ids(redis_url: str) -> list[int]:
    from rq import Queue

    queue = Queue("import", connection=redis.Redis.from_url(redis_url))
    [job] = queue.jobs
    return list(job.args[1])
