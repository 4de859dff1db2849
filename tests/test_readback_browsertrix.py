"""Reading a Browsertrix crawl back: the crawl a hand-off started is followed through the API
until it finishes, fails or is given up; its WACZ files are downloaded from the addresses the
API gives (a storage host on a second loopback address, or Browsertrix's own ``/data/``), within
the address rules, and read.

The fake Browsertrix (``testbed.browsertrix_server``) answers as Browsertrix's backend
does: ``replay.json`` with the crawl's state and its ``resources`` (name, signed address,
SHA-256, size).
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from django.utils import timezone

from archive.models import Capture, Site
from handoff.models import CrawlFile, FollowedCrawl, HandOff
from handoff.services import hand_off_run
from jobs.models import JobRecord
from operations.readback import crawl_read_back
from testbed.browsertrix_server import ORG_ID, TOKEN, WORKFLOW_ID, BrowsertrixServer, StorageServer
from testbed.crawls import Page, wacz_bytes, warc_bytes
from tests.factories import make_site
from tests.test_handoff import make_list

pytestmark = pytest.mark.django_db
TOKEN_VAR = "HACS_BROWSERTRIX_TOKEN_TEST"
NOW = datetime.now(UTC).replace(microsecond=0)


def seed(n: int) -> str:
    return f"http://www.cs.example.edu/~b{n}/"


@pytest.fixture()
def sites() -> list[Site]:
    return [make_site(seed_url=seed(n), canonical_key=f"edu,example,cs)/~b{n}") for n in range(3)]


@pytest.fixture()
def browsertrix(monkeypatch: pytest.MonkeyPatch, settings: Any, tmp_path: Path) -> Iterator[Any]:
    monkeypatch.setenv(TOKEN_VAR, TOKEN)
    settings.VAR_DIR = tmp_path / "var"
    with BrowsertrixServer() as server, StorageServer() as storage:
        settings.HACS_BROWSERTRIX_ALLOWED_HOSTS = [
            server.url.removeprefix("http://"),
            storage.where,
        ]
        settings.HACS_BROWSERTRIX_STORAGE_HOSTS = [storage.where]
        server.storage = storage  # type: ignore[attr-defined]
        yield server


def started(server: BrowsertrixServer, sites: list[Site]) -> FollowedCrawl:
    """The daily list handed off to Browsertrix, which started a crawl HACS now follows."""
    hand_off = HandOff.objects.create(
        name="Scholars on Browsertrix",
        kind=HandOff.Kind.BROWSERTRIX,
        api_url=server.url,
        org_id=ORG_ID,
        workflow_id=WORKFLOW_ID,
        token_env=TOKEN_VAR,
    )
    run = hand_off_run(hand_off=hand_off, crawl_list=make_list(sites))
    assert run.status == "sent"
    return FollowedCrawl.objects.get(run=run)


def wacz(*ns: int) -> bytes:
    pages = [Page(seed(n), NOW, [f"http://doi.org/10.2/{n}"]) for n in ns]
    pages.append(Page("http://elsewhere.example.org/", NOW, ["http://x.org/"]))
    return wacz_bytes({"data.warc.gz": warc_bytes(pages)})


def test_the_crawl_is_followed_until_it_finishes_then_its_wacz_files_are_read(
    browsertrix: Any, sites: list[Site]
) -> None:
    crawl = started(browsertrix, sites)
    assert (crawl.status, crawl.state) == ("following", "")
    storage = browsertrix.storage

    assert crawl_read_back() == 0  # "starting": nothing to read, no job
    crawl.refresh_from_db()
    assert crawl.state == "starting" and crawl.checked_at is not None
    browsertrix.crawl_set(crawl.crawl_id, "running", {"a.wacz": wacz(0)}, storage=storage)
    assert crawl_read_back() == 0
    browsertrix.crawl_set(
        crawl.crawl_id, "complete", {"a.wacz": wacz(0), "b.wacz": wacz(1, 2)}, storage=storage
    )
    assert crawl_read_back() == 1
    crawl.refresh_from_db()
    assert (crawl.status, crawl.state) == ("read", "complete")
    record = crawl.job
    assert record is not None and record.kind == "read_back" and record.status == "finished"
    assert record.counts["files read"] == 2 and record.counts["captures added"] == 3
    assert record.counts["captures outside every seed"] == 2
    sources = set(Capture.objects.values_list("source", flat=True))
    hand_off_id = crawl.run.hand_off_id
    assert sources == {
        f"crawl:browsertrix:{hand_off_id}:{crawl.crawl_id}/a.wacz",
        f"crawl:browsertrix:{hand_off_id}:{crawl.crawl_id}/b.wacz",
    }
    # The token went to Browsertrix only, never to the storage host; nothing is left on disk.
    assert all("authorization" not in r.headers for r in storage.requests)
    assert not list((Path(browsertrix.storage and crawl_dir())).glob("*"))
    assert crawl_read_back() == 0  # read back: not asked again


def crawl_dir() -> Path:
    from django.conf import settings

    return Path(settings.VAR_DIR) / "crawls"


def test_files_on_browsertrix_itself_are_read_too(browsertrix: Any, sites: list[Site]) -> None:
    crawl = started(browsertrix, sites)
    browsertrix.crawl_set(crawl.crawl_id, "stopped_by_user", {"a.wacz": wacz(0)}, storage=None)
    crawl_read_back()
    crawl.refresh_from_db()
    assert crawl.status == "read"
    assert Capture.objects.filter(url=seed(0)).count() == 1
    downloads = [r for r in browsertrix.requests if r.path.startswith("/data/")]
    assert downloads and all("authorization" not in r.headers for r in downloads)


def test_a_failed_crawl_is_reported_once_and_not_asked_again(
    browsertrix: Any, sites: list[Site]
) -> None:
    crawl = started(browsertrix, sites)
    browsertrix.crawl_set(crawl.crawl_id, "failed")
    assert crawl_read_back() == 1
    crawl.refresh_from_db()
    assert crawl.status == "failed" and crawl.job is not None
    assert crawl.job.status == "failed"
    assert f"crawl {crawl.crawl_id}" in crawl.job.error and 'ended "failed"' in crawl.job.error
    asked = len(browsertrix.requests)
    assert crawl_read_back() == 0
    assert len(browsertrix.requests) == asked  # never asked again


def test_a_crawl_that_never_finishes_is_given_up_after_the_wait(
    browsertrix: Any, sites: list[Site], settings: Any
) -> None:
    settings.HACS_CRAWL_WAIT_HOURS = 6
    crawl = started(browsertrix, sites)
    browsertrix.crawl_set(crawl.crawl_id, "running")
    assert crawl_read_back(now=timezone.now() + timedelta(hours=5)) == 0
    assert crawl_read_back(now=timezone.now() + timedelta(hours=7)) == 1
    crawl.refresh_from_db()
    assert crawl.status == "given_up"
    assert "had not finished 6 hours after its hand-off" in crawl.message
    assert 'last state "running"' in crawl.message and "crawl inbox" in crawl.message
    assert crawl.job is not None and crawl.job.status == "failed"


def test_browsertrix_unreachable_is_asked_again_until_the_wait_runs_out(
    browsertrix: Any, sites: list[Site], settings: Any
) -> None:
    settings.HACS_CRAWL_WAIT_HOURS = 6
    crawl = started(browsertrix, sites)
    browsertrix.fail("replay", 503)
    assert crawl_read_back() == 0
    crawl.refresh_from_db()
    assert crawl.status == "following" and "failed with 503" in crawl.message
    browsertrix.crawl_set(
        crawl.crawl_id, "complete", {"a.wacz": wacz(0)}, storage=browsertrix.storage
    )
    assert crawl_read_back() == 1
    crawl.refresh_from_db()
    assert crawl.status == "read"


def test_a_storage_host_not_listed_is_refused_and_nothing_is_downloaded(
    browsertrix: Any, sites: list[Site], settings: Any
) -> None:
    settings.HACS_BROWSERTRIX_STORAGE_HOSTS = []
    crawl = started(browsertrix, sites)
    browsertrix.crawl_set(
        crawl.crawl_id, "complete", {"a.wacz": wacz(0)}, storage=browsertrix.storage
    )
    crawl_read_back()
    record = JobRecord.objects.get(kind="read_back")
    reason = record.failures[0]["reason"]
    assert "HACS_BROWSERTRIX_STORAGE_HOSTS does not list" in reason
    assert browsertrix.storage.where in reason
    assert "X-Amz-Signature" not in reason and "Credential" not in reason  # no signed address
    assert browsertrix.storage.requests == []
    assert not Capture.objects.exists()


def test_a_listed_storage_host_still_obeys_the_address_rules(
    browsertrix: Any, sites: list[Site], settings: Any
) -> None:
    """Listed as a storage host but not as a trusted one: plain http to a loopback address is
    refused, as for Browsertrix itself."""
    settings.HACS_BROWSERTRIX_ALLOWED_HOSTS = [browsertrix.url.removeprefix("http://")]
    crawl = started(browsertrix, sites)
    browsertrix.crawl_set(
        crawl.crawl_id, "complete", {"a.wacz": wacz(0)}, storage=browsertrix.storage
    )
    crawl_read_back()
    reason = JobRecord.objects.get(kind="read_back").failures[0]["reason"]
    assert "only over https" in reason and "HACS_BROWSERTRIX_ALLOWED_HOSTS" in reason
    assert browsertrix.storage.requests == []


def test_a_file_larger_than_the_cap_is_not_downloaded(
    browsertrix: Any, sites: list[Site], settings: Any
) -> None:
    settings.HACS_MAX_CRAWL_FILE_BYTES = 2 * 1024 * 1024
    crawl = started(browsertrix, sites)
    big = wacz_bytes({"data.warc.gz": warc_bytes([Page(seed(0), NOW, body=b"x")])})
    browsertrix.crawl_set(
        crawl.crawl_id,
        "complete",
        {"big.wacz": big},
        storage=browsertrix.storage,
        sizes={"big.wacz": 5 * 1024**3},
    )
    crawl_read_back()
    reason = JobRecord.objects.get(kind="read_back").failures[0]["reason"]
    assert "more than HACS_MAX_CRAWL_FILE_BYTES" in reason
    assert browsertrix.storage.requests == []


def test_a_download_past_the_cap_is_cut_whatever_the_size_browsertrix_said(
    browsertrix: Any, sites: list[Site], settings: Any
) -> None:
    settings.HACS_MAX_CRAWL_FILE_BYTES = 1024 * 1024
    crawl = started(browsertrix, sites)
    noise = random.Random(0).randbytes(2_000_000)  # 2 MB that do not compress
    padding = Page(seed(1), NOW, body=noise)
    big = wacz_bytes({"data.warc.gz": warc_bytes([padding])})
    browsertrix.crawl_set(
        crawl.crawl_id,
        "complete",
        {"big.wacz": big},
        storage=browsertrix.storage,
        sizes={"big.wacz": 1000},
    )
    crawl_read_back()
    reason = JobRecord.objects.get(kind="read_back").failures[0]["reason"]
    assert "sent more than HACS_MAX_CRAWL_FILE_BYTES" in reason
    assert not Capture.objects.exists() and not list(crawl_dir().glob("*"))


def test_a_file_not_matching_its_hash_is_not_read(browsertrix: Any, sites: list[Site]) -> None:
    crawl = started(browsertrix, sites)
    record = browsertrix.crawl_set(
        crawl.crawl_id, "complete", {"a.wacz": wacz(0)}, storage=browsertrix.storage
    )
    browsertrix.storage.files["a.wacz"] = wacz(1)  # the storage holds another file
    record.files["a.wacz"] = wacz(0)
    crawl_read_back()
    reason = JobRecord.objects.get(kind="read_back").failures[0]["reason"]
    assert "came with" in reason or "does not match the SHA-256" in reason
    assert not Capture.objects.exists()


def test_an_expired_address_is_asked_again_and_files_read_before_are_not(
    browsertrix: Any, sites: list[Site]
) -> None:
    crawl = started(browsertrix, sites)
    storage = browsertrix.storage
    first = wacz(0)
    browsertrix.crawl_set(crawl.crawl_id, "complete", {"a.wacz": first}, storage=storage)
    crawl_read_back()
    browsertrix.crawl_set(
        crawl.crawl_id, "complete", {"a.wacz": first, "b.wacz": wacz(1)}, storage=storage
    )
    crawl.refresh_from_db()
    crawl.status = "following"  # as if b.wacz had failed the first time
    crawl.save()
    storage.expire()
    crawl_read_back()
    crawl.refresh_from_db()
    assert crawl.status == "following"  # asked again at the next pass
    last = JobRecord.objects.filter(kind="read_back").order_by("-pk").first()
    assert last is not None and "answered 403" in last.failures[0]["reason"]
    assert last.counts["files read before"] == 1  # a.wacz, not downloaded again
    storage.expired = False
    crawl_read_back()
    crawl.refresh_from_db()
    assert crawl.status == "read"
    assert set(CrawlFile.objects.values_list("name", flat=True)) == {"a.wacz", "b.wacz"}
    assert Capture.objects.filter(url=seed(1)).count() == 1


def test_files_that_never_download_are_given_up_after_the_wait(
    browsertrix: Any, sites: list[Site], settings: Any
) -> None:
    settings.HACS_CRAWL_WAIT_HOURS = 6
    crawl = started(browsertrix, sites)
    browsertrix.crawl_set(
        crawl.crawl_id, "complete", {"a.wacz": wacz(0)}, storage=browsertrix.storage
    )
    browsertrix.storage.expire()
    crawl_read_back()
    crawl.refresh_from_db()
    assert crawl.status == "following" and "answered 403" in crawl.message
    crawl_read_back(now=timezone.now() + timedelta(hours=7))
    crawl.refresh_from_db()
    assert crawl.status == "given_up"
    assert "files could not all be downloaded" in crawl.message
    assert "answered 403" in crawl.message
