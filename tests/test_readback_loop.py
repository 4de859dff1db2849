"""The loop closed in production, with no command run by hand: the scheduler's daily job builds
the list and hands it off, the crawler crawls it, the scheduler's read-back brings the crawl
home, and tomorrow's list knows it — for Heritrix, Browsertrix and the crawl inbox.

The periodic jobs are enqueued exactly as ``rqcron operations.cron`` enqueues them and run by a
real worker process over the test's database and Redis; the crawlers are the fakes of
``tests.support`` (a Heritrix job directory in which WARC files appear, ``.open`` first; a
Browsertrix API whose crawl moves through its states and whose WACZ files a storage host on a
second loopback address serves; a plain crawler that drops its WARC into the inbox).
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import redis
from rq.cron import CronScheduler

from archive.models import Capture, Site
from archive.pipeline import FromWarcFiles
from hacs_site.clock import today
from handoff.models import FollowedCrawl, HandOff, ListYield
from jobs.models import JobRecord
from operations.refresh import sites_refresh
from scheduling.daily import daily_list_build, daily_run_claim
from scheduling.models import CrawlList
from testbed.browsertrix_server import ORG_ID, TOKEN, WORKFLOW_ID, BrowsertrixServer, StorageServer
from testbed.crawls import HeritrixJob, Page, wacz_bytes, warc_bytes
from tests.factories import make_site

pytestmark = pytest.mark.django_db(transaction=True)
LINKS = ["http://doi.org/10.5/a", "http://doi.org/10.5/b", "http://doi.org/10.5/c"]
TOKEN_VAR = "HACS_BROWSERTRIX_TOKEN_LOOP"


def seed(n: int) -> str:
    return f"http://www.cs.example.edu/~loop{n}/"


@pytest.fixture()
def four_sites(tmp_path: Path, settings: Any) -> list[Site]:
    """Four seeds with the same history (copies 90, 60 and 30 days ago, each adding a link),
    imported from a WARC file; the daily list takes two a day (HACS_BUDGET)."""
    settings.HACS_BUDGET, settings.HACS_THETA = 2, None
    sites = [
        make_site(seed_url=seed(n), canonical_key=f"edu,example,cs)/~loop{n}") for n in range(4)
    ]
    now = datetime.now(UTC)
    history = [
        Page(seed(n), now - timedelta(days=days), LINKS[:k])
        for n in range(4)
        for k, days in ((1, 90), (2, 60), (3, 30))
    ]
    path = tmp_path / "history.warc.gz"
    path.write_bytes(warc_bytes(history))
    sites_refresh(FromWarcFiles([path]))
    return sites


@pytest.fixture()
def env(worker_env: dict[str, str], tmp_path: Path) -> dict[str, str]:
    """The workers' settings: the same list defaults as the test's."""
    worker_env.update({"HACS_BUDGET": "2", "HACS_HERITRIX_ROOT": str(tmp_path)})
    worker_env.pop("HACS_THETA", None)
    return worker_env


def fire(redis_url: str, name: str) -> None:
    """Enqueue the periodic job ``name`` as the cron scheduler does when it is due."""
    connection = redis.Redis.from_url(redis_url)
    scheduler = CronScheduler(connection=connection)
    scheduler.load_config_from_file("operations.cron")
    [job] = [j for j in scheduler.get_jobs() if j.name == name]
    job.enqueue(connection)


def crawled(urls: list[str], *, changed: str) -> list[Page]:
    """The crawl of ``urls``, a moment after the hand-off; only ``changed`` added a link.

    A WARC date has whole seconds: the crawl's is the next second after now (after the
    hand-off), and this returns once that second has passed, so that the crawl lies in the
    list's window however fast the read-back comes next."""
    at = datetime.now(UTC).replace(microsecond=0) + timedelta(seconds=1)
    while datetime.now(UTC) <= at:
        time.sleep(0.05)
    pages = [
        Page(u, at, [*LINKS, *(["http://doi.org/10.5/new"] if u == changed else [])]) for u in urls
    ]
    return [*pages, Page("http://other.example.org/", at, ["http://x.org/"])]


def tomorrows_list() -> list[str]:
    """The list the daily job builds tomorrow, by its own code path."""
    run = daily_run_claim(day=today() + timedelta(days=1))
    assert run is not None
    with run:
        crawl_list = daily_list_build(run=run.record)
    return list(crawl_list.entries.order_by("rank").values_list("site__seed_url", flat=True))


def todays_list() -> CrawlList:
    return CrawlList.objects.get(date=today())


def listed(crawl_list: CrawlList) -> list[str]:
    return list(crawl_list.entries.order_by("rank").values_list("site__seed_url", flat=True))


def test_heritrix_the_list_the_crawl_the_read_back_and_tomorrows_list(
    four_sites: list[Site],
    env: dict[str, str],
    redis_url: str,
    run_worker: Any,
    tmp_path: Path,
    settings: Any,
    logged_in_client: Any,
) -> None:
    settings.HACS_HERITRIX_ROOT = str(tmp_path)
    job = HeritrixJob(tmp_path / "scholars")
    hand_off = HandOff.objects.create(
        name="Scholars", kind=HandOff.Kind.HERITRIX_ACTION, job_dir=str(job.path)
    )
    fire(redis_url, "daily-crawl-list")
    run_worker("estimation")
    first = listed(todays_list())
    assert first == [seed(0), seed(1)]
    [seeds_file] = list((job.path / "action").glob("*.seeds"))
    urls = [u for u in seeds_file.read_text().splitlines() if not u.startswith("#")]
    assert urls == first

    # Heritrix launches, crawls, writes its WARC (".open" until it is closed).
    job.launch(datetime.now(UTC).strftime("%Y%m%d%H%M%S"))
    writing = job.open_warc(crawled(urls, changed=seed(0)))
    fire(redis_url, "crawl-read-back")
    run_worker("import")
    assert not Capture.objects.filter(source__startswith="crawl:").exists()
    job.close_warc(writing)
    fire(redis_url, "crawl-read-back")
    run_worker("import")

    record = JobRecord.objects.get(kind="read_back")
    assert record.status == "finished" and record.counts["captures added"] == 2
    assert record.counts["captures outside every seed"] == 1
    crawl_copies = Capture.objects.filter(source__startswith=f"crawl:heritrix:{hand_off.pk}:")
    assert sorted(crawl_copies.values_list("url", flat=True)) == first
    assert tomorrows_list() == [seed(2), seed(3)]  # the crawled sites' newest copy moved
    counted = ListYield.objects.get(crawl_list=todays_list())
    assert (counted.listed, counted.reached, counted.changed) == (2, 2, 1)
    page = logged_in_client.get(f"/sites/{Site.objects.get(seed_url=seed(0)).pk}/")
    assert "Library crawl: Heritrix hand-off “Scholars”" in page.content.decode()
    jobs = logged_in_client.get("/jobs/").content.decode()
    assert "Crawl read-back" in jobs and "Heritrix &quot;Scholars&quot;: 1 WARC file" in jobs


@pytest.fixture()
def browsertrix(
    env: dict[str, str], monkeypatch: pytest.MonkeyPatch, settings: Any
) -> Iterator[tuple[BrowsertrixServer, StorageServer]]:
    monkeypatch.setenv(TOKEN_VAR, TOKEN)
    with BrowsertrixServer() as server, StorageServer() as storage:
        allowed = f"{server.url.removeprefix('http://')},{storage.where}"
        env.update(
            {
                "HACS_BROWSERTRIX_ALLOWED_HOSTS": allowed,
                TOKEN_VAR: TOKEN,
                "HACS_BROWSERTRIX_STORAGE_HOSTS": storage.where,
            }
        )
        settings.HACS_BROWSERTRIX_ALLOWED_HOSTS = allowed.split(",")
        settings.HACS_BROWSERTRIX_STORAGE_HOSTS = [storage.where]
        yield server, storage


def test_browsertrix_the_list_the_crawl_followed_its_wacz_read_and_tomorrows_list(
    four_sites: list[Site],
    browsertrix: tuple[BrowsertrixServer, StorageServer],
    redis_url: str,
    run_worker: Any,
) -> None:
    server, storage = browsertrix
    HandOff.objects.create(
        name="Scholars on Browsertrix",
        kind=HandOff.Kind.BROWSERTRIX,
        api_url=server.url,
        org_id=ORG_ID,
        workflow_id=WORKFLOW_ID,
        token_env=TOKEN_VAR,
    )
    fire(redis_url, "daily-crawl-list")
    run_worker("estimation")
    crawl = FollowedCrawl.objects.get()
    [(_name, uploaded)] = server.state.files.values()
    urls = uploaded.decode().split()
    assert urls == listed(todays_list()) == [seed(0), seed(1)]

    server.crawl_set(crawl.crawl_id, "running")
    fire(redis_url, "crawl-read-back")
    run_worker("import")
    crawl.refresh_from_db()
    assert (crawl.status, crawl.state) == ("following", "running")

    archive = wacz_bytes({"data.warc.gz": warc_bytes(crawled(urls, changed=seed(1)))})
    server.crawl_set(crawl.crawl_id, "complete", {"crawl-1.wacz": archive}, storage=storage)
    fire(redis_url, "crawl-read-back")
    run_worker("import")
    crawl.refresh_from_db()
    assert crawl.status == "read"
    assert [r.path for r in storage.requests] == ["/btrix-data/crawl-1.wacz"]
    assert (
        sorted(
            Capture.objects.filter(source__startswith="crawl:browsertrix:").values_list(
                "url", flat=True
            )
        )
        == urls
    )
    assert tomorrows_list() == [seed(2), seed(3)]
    counted = ListYield.objects.get(crawl_list=todays_list())
    assert (counted.reached, counted.changed) == (2, 1)


def test_the_inbox_a_plain_crawler_drops_its_warc_and_tomorrows_list_knows(
    four_sites: list[Site],
    env: dict[str, str],
    redis_url: str,
    run_worker: Any,
    tmp_path: Path,
    settings: Any,
    logged_in_client: Any,
) -> None:
    inbox = tmp_path / "inbox"
    inbox.mkdir()
    env.update({"HACS_CRAWL_INBOX": str(inbox), "HACS_CRAWL_INBOX_SETTLE_SECONDS": "0"})
    fire(redis_url, "daily-crawl-list")
    run_worker("estimation")
    url_list = logged_in_client.get(f"/crawl-list/{todays_list().pk}.txt")
    urls = b"".join(url_list.streaming_content).decode().split()
    assert urls == [seed(0), seed(1)]
    (inbox / "wget-crawl.warc.gz").write_bytes(warc_bytes(crawled(urls, changed=seed(0))))
    (inbox / "half.warc.gz.tmp").write_bytes(b"still being written")

    fire(redis_url, "crawl-read-back")
    run_worker("import")
    assert (inbox / "done" / "wget-crawl.warc.gz").exists()
    assert (inbox / "half.warc.gz.tmp").exists()
    record = JobRecord.objects.get(kind="read_back")
    assert record.counts["captures added"] == 2 and record.counts["files still being written"] == 1
    assert tomorrows_list() == [seed(2), seed(3)]
