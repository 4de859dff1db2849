"""The Upload seeds page: every bad line explained, check before adding, imports started."""

from __future__ import annotations

import os
import re
import time
from pathlib import Path
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


@pytest.fixture(autouse=True)
def held_files_in(tmp_path: Any, settings: Any) -> Any:
    """Checked files are held under this test's own VAR_DIR."""
    settings.VAR_DIR = tmp_path
    return tmp_path / "uploads"


def upload(client: Any, action: str, data: bytes = SEEDS.encode(), **extra: Any) -> Any:
    form = {
        "file": SimpleUploadedFile("seeds.csv", data, "text/csv"),
        "action": action,
        "import_history": "on",
        **extra,
    }
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
    assert "seeds.csv added" in page and "follow its progress" in page
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
    assert b"Not a URL: a seed is a web address" in response.content  # line 2's reason


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
    from jobs.services import JobQueue

    queue = JobQueue("import", connection=redis.Redis.from_url(redis_url))
    [job] = queue.jobs
    return list(job.args[1])


@pytest.mark.django_db(transaction=True)
def test_an_upload_that_cannot_queue_its_import_says_so_and_leaves_no_record(
    logged_in_client: Any, settings: Any
) -> None:
    from scripts.localservers import free_port

    url = f"redis://127.0.0.1:{free_port()}/0"  # nothing listens: Redis is down
    settings.RQ_QUEUES = {name: {**c, "URL": url} for name, c in settings.RQ_QUEUES.items()}
    response = upload(logged_in_client, "import")
    assert response.status_code == 200
    page = response.content.decode()
    assert "The seeds are stored, but their import could not be queued." in page
    assert "import_archive --failed" in page and "follow its progress" not in page
    assert not JobRecord.objects.exists()
    # The seeds stay stored, failed with the reason, so that a retry imports them.
    assert Site.objects.count() == 2
    assert set(Site.objects.values_list("import_status", flat=True)) == {"failed"}
    assert "could not be reached" in Site.objects.first().import_error


@pytest.mark.django_db
def test_adding_a_line_that_outgrows_its_column_rejects_that_line_only(
    logged_in_client: Any,
) -> None:
    # Within the form's 2,048 characters as typed; 2,400 once each é is percent-encoded.
    long_url = "http://a.edu/~bar/" + "é" * 100 + "x" * 1782
    data = f"url,author\n{long_url},Long\nhttp://b.edu/~baz/,Baz\n".encode()
    form = {"file": SimpleUploadedFile("seeds.csv", data, "text/csv"), "action": "import"}
    response = logged_in_client.post("/sites/upload/", form)
    assert response.status_code == 200
    page = response.content.decode()
    assert "The URL is too long once tidied (2,400 characters" in page
    assert '<td class="num">2</td>' in page
    assert list(Site.objects.values_list("author", flat=True)) == ["Baz"]


@pytest.mark.django_db
def test_a_tag_longer_than_its_column_is_explained(logged_in_client: Any) -> None:
    response = upload(logged_in_client, "import", tags="ok, " + "t" * 101)
    assert response.status_code == 400
    assert "is 101 characters long; a tag holds at most 100." in response.content.decode()
    assert Site.objects.count() == 0


def held_token(page: str) -> str:
    match = re.search(r'name="held" value="([^"]+)"', page)
    assert match, "the page carries no held file"
    return match.group(1)


@pytest.mark.django_db(transaction=True)
def test_a_checked_file_is_added_without_choosing_it_again(
    logged_in_client: Any, redis_url: str, held_files_in: Path, user: Any
) -> None:
    checked = upload(logged_in_client, "check").content.decode()
    assert "Check of seeds.csv — nothing stored yet" in checked
    assert re.search(r"Adding seeds.csv</strong>\s*\(\d+\sbytes, 4 seed lines\)", checked)
    token = held_token(checked)
    # Named by its owner too, so that each user's held files are bounded across sessions.
    assert [p.name for p in held_files_in.iterdir()] == [f"{user.pk}.{token}.seeds"]
    assert oct(held_files_in.joinpath(f"{user.pk}.{token}.seeds").stat().st_mode & 0o777) == (
        "0o600"
    )
    added = logged_in_client.post(
        "/sites/upload/",
        {"held": token, "action": "import", "import_history": "on", "tags": "chemistry; 2026"},
    )
    assert added.status_code == 200
    assert "seeds.csv added" in added.content.decode()
    assert 'name="held" value=' not in added.content.decode()
    assert Site.objects.count() == 2
    ada = Site.objects.get(author="Ada Lovelace")
    assert set(ada.tags.values_list("name", flat=True)) == {"ml", "chemistry", "2026"}
    assert list(held_files_in.iterdir()) == []  # added: no longer held
    again = logged_in_client.post("/sites/upload/", {"held": token, "action": "import"})
    assert again.status_code == 400
    assert "The file you checked is no longer held on the server" in again.content.decode()
    assert Site.objects.count() == 2


@pytest.mark.django_db
def test_a_held_file_is_only_for_the_session_that_checked_it(logged_in_client: Any) -> None:
    from django.test import Client

    token = held_token(upload(logged_in_client, "check").content.decode())
    other = Client()
    other.force_login(make_user("other"))
    response = other.post("/sites/upload/", {"held": token, "action": "import"})
    assert response.status_code == 400
    assert "only for the session that checked it. Choose the file again." in (
        response.content.decode()
    )
    assert Site.objects.count() == 0


@pytest.mark.django_db
def test_an_expired_held_file_is_explained_by_name(
    logged_in_client: Any, held_files_in: Path, user: Any
) -> None:
    token = held_token(upload(logged_in_client, "check").content.decode())
    path = held_files_in / f"{user.pk}.{token}.seeds"
    day_and_more = time.time() - 25 * 3600
    os.utime(path, (day_and_more, day_and_more))
    response = logged_in_client.post("/sites/upload/", {"held": token, "action": "import"})
    assert response.status_code == 400
    page = response.content.decode()
    assert "The file you checked (seeds.csv) is no longer held on the server" in page
    assert "kept for 24 hours" in page
    assert not path.exists() and Site.objects.count() == 0


@pytest.mark.django_db
def test_a_form_error_keeps_the_chosen_file(logged_in_client: Any) -> None:
    response = upload(logged_in_client, "import", tags="t" * 101)
    assert response.status_code == 400
    page = response.content.decode()
    assert "a tag holds at most 100" in page
    token = held_token(page)
    fixed = logged_in_client.post("/sites/upload/", {"held": token, "action": "check"})
    assert '<strong data-count="added">2</strong>' in fixed.content.decode()


@pytest.mark.django_db
def test_the_tags_hint_names_the_separator_the_csv_uses(logged_in_client: Any) -> None:
    page = logged_in_client.get("/sites/upload/").content.decode()
    assert "several tags in one cell separated by semicolons (ml;theory)" in page
    assert "Separated by semicolons, as in the CSV&#x27;s tags column" in page
    response = logged_in_client.post(
        "/sites/upload/", {"text": "http://a.edu/~x/", "tags": "a; b|c", "action": "import"}
    )
    assert response.status_code == 200
    site = Site.objects.get()
    assert sorted(site.tags.values_list("name", flat=True)) == ["a", "b", "c"]


@pytest.mark.django_db
def test_upload_tags_reach_stored_sites_and_the_report_says_so(logged_in_client: Any) -> None:
    """Tags given with an upload (and on a line) are added to a site already stored, and the
    check says which tags each stored site would gain before anything is written."""
    carl = make_site(
        seed_url="http://cs.uni.edu/~carl/", canonical_key="edu,uni,cs)/~carl", author="C. F. Gauss"
    )
    checked = upload(logged_in_client, "check", tags="chemistry").content.decode()
    assert '<strong data-count="already">1</strong> already stored' in checked
    assert '(<strong data-count="tagged">1</strong> of them would gain tags)' in checked
    assert re.search(r"~carl/</a></td><td>chemistry</td>", checked)
    assert not carl.tags.exists()  # a check writes nothing
    added = upload(logged_in_client, "import", tags="chemistry").content.decode()
    assert "of them gained tags" in added
    assert set(carl.tags.values_list("name", flat=True)) == {"chemistry"}
    again = upload(logged_in_client, "check", tags="chemistry").content.decode()
    assert 'data-count="tagged"' not in again  # nothing left to gain
    assert "gain the tags given here" in again


@pytest.mark.django_db
def test_the_upload_page_says_which_archive_an_import_will_ask(
    logged_in_client: Any, settings: Any
) -> None:
    settings.HACS_CDX_URL_CHOSEN = False
    page = logged_in_client.get("/sites/upload/").content.decode()
    assert "asks the archive at web.archive.org, HACS&#x27;s default: no archive has been" in page
    settings.HACS_CDX_URL = "http://127.0.0.1:8080/coll/cdx"
    settings.HACS_CDX_URL_CHOSEN = True
    page = logged_in_client.get("/sites/upload/").content.decode()
    assert "asks the archive at 127.0.0.1:8080 (HACS_CDX_URL) for each new seed" in page
