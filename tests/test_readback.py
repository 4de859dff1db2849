"""Reading the library's crawls back: Heritrix job directories and the crawl inbox, in the
process (Browsertrix in ``test_readback_browsertrix.py``, the whole loop through a worker in
``test_readback_loop.py``).

What a crawl fetched becomes observations with their source; a file is read once (again when
it grows or is rewritten), never while it is written, never through a symbolic link; other
people's pages are counted, never stored; each read-back is a job with its counts.
"""

from __future__ import annotations

import os
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from archive.models import Capture, Site
from archive.pipeline import FromWarcFiles
from handoff.models import CrawlFile, HandOff
from jobs.models import JobRecord
from operations.readback import crawl_read_back, heritrix_read_back, inbox_read_back
from operations.refresh import sites_refresh
from testbed.crawls import HeritrixJob, Page, wacz_bytes, warc_bytes
from tests.factories import make_site
from tests.support.runs import hand_off_run_sent

pytestmark = pytest.mark.django_db

NOW = datetime.now(UTC).replace(microsecond=0)
LINKS = ["http://doi.org/10.1/a", "http://doi.org/10.1/b"]


def seed(n: int) -> str:
    return f"http://www.cs.example.edu/~s{n}/"


@pytest.fixture()
def sites(tmp_path: Path) -> list[Site]:
    """Three seeds with a history of three copies each, imported from a WARC file (so their
    pages' links are known)."""
    made = [make_site(seed_url=seed(n), canonical_key=f"edu,example,cs)/~s{n}") for n in range(3)]
    history = [
        Page(seed(n), NOW - timedelta(days=days), LINKS[: 1 + (days < 50)])
        for n in range(3)
        for days in (90, 60, 30)
    ]
    path = tmp_path / "history.warc.gz"
    path.write_bytes(warc_bytes(history))
    sites_refresh(FromWarcFiles([path]))
    return made


def crawl(n: int, *, new: bool, at: timedelta = timedelta(0)) -> Page:
    """The library's crawl of site ``n``'s homepage: a new link when ``new``."""
    return Page(seed(n), NOW + at, [*LINKS, *(["http://doi.org/10.1/new"] if new else [])])


OTHERS = Page("http://elsewhere.example.org/~x/", NOW, ["http://doi.org/10.9/x"])


@pytest.fixture()
def job(tmp_path: Path, settings: Any) -> HeritrixJob:
    settings.HACS_HERITRIX_ROOT = str(tmp_path)
    return HeritrixJob(tmp_path / "jobs" / "scholars")


@pytest.fixture()
def hand_off(job: HeritrixJob) -> HandOff:
    """A Heritrix hand-off that has sent a list: HACS follows its job directory."""
    made = HandOff.objects.create(
        name="Scholars", kind=HandOff.Kind.HERITRIX_ACTION, job_dir=str(job.path)
    )
    hand_off_run_sent(hand_off=made, sites=3)
    return made


def crawl_captures() -> list[tuple[str, str]]:
    return list(
        Capture.objects.filter(source__startswith="crawl:")
        .order_by("url")
        .values_list("url", "source")
    )


# --- Heritrix ------------------------------------------------------------------------------------


def test_a_finished_warc_is_read_once_as_observations_with_its_source(
    sites: list[Site], job: HeritrixJob, hand_off: HandOff
) -> None:
    job.launch("20261124050000")
    written = job.write_warc([crawl(0, new=True), crawl(1, new=False), OTHERS])
    record = heritrix_read_back(hand_off)
    assert record is not None and record.kind == "read_back" and record.status == "finished"
    label = f"20261124050000/warcs/{written.name}"
    source = f"crawl:heritrix:{hand_off.pk}:{label}"
    assert crawl_captures() == [(seed(0), source), (seed(1), source)]
    counts = record.counts
    assert counts["files read"] == 1 and counts["captures added"] == 2
    assert counts["captures outside every seed"] == 1  # counted on the job, not stored
    assert not Capture.objects.filter(url__contains="elsewhere").exists()
    changed = Capture.objects.get(url=seed(0), source=source)
    same = Capture.objects.get(url=seed(1), source=source)
    assert changed.is_observation and changed.link_floor == -1  # a new link: an update
    assert same.is_observation and same.link_floor is not None and same.link_floor >= 0
    remembered = CrawlFile.objects.get()
    assert (remembered.name, remembered.size, remembered.captures) == (
        written.name,
        written.stat().st_size,
        2,
    )

    assert heritrix_read_back(hand_off) is None  # seen before: no job, nothing read


def test_a_file_still_being_written_is_not_read_until_it_is_renamed(
    sites: list[Site], job: HeritrixJob, hand_off: HandOff
) -> None:
    job.launch("20261124050000")
    open_file = job.open_warc([crawl(0, new=True)])
    assert heritrix_read_back(hand_off) is None
    assert crawl_captures() == []
    job.close_warc(open_file)
    record = heritrix_read_back(hand_off)
    assert record is not None and record.counts["captures added"] == 1


def test_a_file_that_grows_or_is_rewritten_is_read_again_and_stores_nothing_twice(
    sites: list[Site], job: HeritrixJob, hand_off: HandOff
) -> None:
    warcs = job.launch("20261124050000")
    path = job.write_warc([crawl(0, new=True)])
    heritrix_read_back(hand_off)
    path.write_bytes(path.read_bytes() + warc_bytes([crawl(1, new=True)]))  # it grew
    record = heritrix_read_back(hand_off)
    assert record is not None
    assert (record.counts["captures added"], record.counts["captures already stored"]) == (1, 1)
    # Rewritten at the same size, with the same time: only the size and time tell, so not read.
    data = path.read_bytes()
    stamp = path.stat().st_mtime_ns
    path.write_bytes(data)
    os.utime(path, ns=(stamp, stamp))
    assert heritrix_read_back(hand_off) is None
    # Touched but unchanged: hashed, found the same, not read.
    os.utime(path, ns=(stamp + 10**9, stamp + 10**9))
    assert heritrix_read_back(hand_off) is None
    # Rewritten with other content at the same size: read again.
    other = warc_bytes([crawl(2, new=True), crawl(1, new=True)])
    assert len(other) != len(data) or other != data
    path.write_bytes(other)
    assert heritrix_read_back(hand_off) is not None
    assert Capture.objects.filter(source__startswith="crawl:").count() == 3
    assert sorted(p.name for p in warcs.iterdir()) == [path.name]


def test_launches_are_read_and_latest_is_not_read_twice(
    sites: list[Site], job: HeritrixJob, hand_off: HandOff
) -> None:
    job.launch("20261120050000")
    job.write_warc([crawl(0, new=True)])
    job.launch("20261124050000")  # ``latest`` now points here
    job.write_warc([crawl(1, new=True, at=timedelta(seconds=5))])
    record = heritrix_read_back(hand_off)
    assert record is not None and record.counts["files read"] == 2
    assert {s.split(":", 3)[3].split("/")[0] for _u, s in crawl_captures()} == {
        "20261120050000",
        "20261124050000",
    }


def test_symbolic_links_are_refused_with_a_sentence_once(
    sites: list[Site], job: HeritrixJob, hand_off: HandOff, tmp_path: Path
) -> None:
    warcs = job.launch("20261124050000")
    outside = tmp_path / "outside.warc.gz"
    outside.write_bytes(warc_bytes([crawl(0, new=True)]))
    (warcs / "sneaky.warc.gz").symlink_to(outside)
    (job.path / "latest").unlink()
    (job.path / "latest").symlink_to(tmp_path)  # somewhere else altogether
    record = heritrix_read_back(hand_off)
    assert record is not None and record.status == "failed"
    reasons = " ".join(f["reason"] for f in record.failures)
    assert "sneaky.warc.gz is a symbolic link" in reasons
    assert "latest points to" in reasons and "not to a launch directory" in reasons
    assert crawl_captures() == []
    assert heritrix_read_back(hand_off) is None  # told once


def test_a_job_directory_outside_the_root_reads_nothing(
    sites: list[Site], hand_off: HandOff, tmp_path: Path, settings: Any
) -> None:
    settings.HACS_HERITRIX_ROOT = str(tmp_path / "elsewhere")
    (tmp_path / "elsewhere").mkdir()
    record = heritrix_read_back(hand_off)
    assert record is not None and record.status == "failed"
    assert "outside HACS_HERITRIX_ROOT" in record.failures[0]["reason"]
    assert heritrix_read_back(hand_off) is None


def test_only_hand_offs_that_sent_a_list_are_followed(
    sites: list[Site], job: HeritrixJob, tmp_path: Path
) -> None:
    silent = HandOff.objects.create(
        name="Never sent", kind=HandOff.Kind.HERITRIX_ACTION, job_dir=str(job.path)
    )
    job.launch("20261124050000")
    job.write_warc([crawl(0, new=True)])
    assert crawl_read_back() == 0
    hand_off_run_sent(hand_off=silent, sites=1)
    assert crawl_read_back() == 1
    assert len(crawl_captures()) == 1


def test_the_same_capture_from_the_archive_and_a_crawl_counts_once(
    sites: list[Site], job: HeritrixJob, hand_off: HandOff, tmp_path: Path
) -> None:
    """A capture of one page at one instant is one capture, whichever source brought it
    first: the archive's copy of the library's own crawl adds nothing."""
    page = crawl(2, new=True)
    job.launch("20261124050000")
    job.write_warc([page])
    heritrix_read_back(hand_off)
    copy = tmp_path / "archive-copy.warc.gz"
    copy.write_bytes(warc_bytes([page]))
    report = sites_refresh(FromWarcFiles([copy]))
    assert report.captures.added == 0 and report.captures.skipped["already stored"] == 1
    site = Site.objects.get(seed_url=seed(2))
    assert site.captures.filter(timestamp=NOW).count() == 1


def test_a_truncated_warc_keeps_its_complete_records(
    sites: list[Site], job: HeritrixJob, hand_off: HandOff
) -> None:
    job.launch("20261124050000")
    whole = warc_bytes([crawl(0, new=True), crawl(1, new=True)])
    first = len(warc_bytes([crawl(0, new=True)]))
    path = job.write_warc([])
    path.write_bytes(whole[: first + 40])
    record = heritrix_read_back(hand_off)
    assert record is not None and record.status == "failed"
    assert "truncated" in record.failures[0]["reason"]
    assert [u for u, _s in crawl_captures()] == [seed(0)]
    assert CrawlFile.objects.get().status == "failed"


# --- The crawl inbox ------------------------------------------------------------------------------


@pytest.fixture()
def inbox(tmp_path: Path, settings: Any) -> Path:
    folder = tmp_path / "inbox"
    folder.mkdir()
    settings.HACS_CRAWL_INBOX = str(folder)
    settings.HACS_CRAWL_INBOX_SETTLE_SECONDS = 0
    return folder


def test_inbox_files_are_read_and_moved_to_done_or_failed_with_a_sentence(
    sites: list[Site], inbox: Path
) -> None:
    (inbox / "wget.warc.gz").write_bytes(warc_bytes([crawl(0, new=True)]))
    (inbox / "browsertrix-crawler.wacz").write_bytes(
        wacz_bytes({"data.warc.gz": warc_bytes([crawl(1, new=True)])})
    )
    (inbox / "strangers.warc.gz").write_bytes(warc_bytes([OTHERS]))
    (inbox / "notes.txt").write_text("not a crawl")
    (inbox / "brozzler.warc.gz.part").write_bytes(b"still arriving")
    record = inbox_read_back()
    assert record is not None and record.status == "partial"
    assert sorted(p.name for p in (inbox / "done").iterdir()) == [
        "browsertrix-crawler.wacz",
        "wget.warc.gz",
    ]
    failed = sorted(p.name for p in (inbox / "failed").iterdir())
    assert failed == ["notes.txt", "notes.txt.txt", "strangers.warc.gz", "strangers.warc.gz.txt"]
    note = (inbox / "failed/strangers.warc.gz.txt").read_text()
    assert "no capture in it belongs to a seed" in note
    assert "not a WARC or WACZ file" in (inbox / "failed/notes.txt.txt").read_text()
    assert (inbox / "brozzler.warc.gz.part").exists()  # still being written: left alone
    assert crawl_captures() == [
        (seed(0), "crawl:inbox:wget.warc.gz"),
        (seed(1), "crawl:inbox:browsertrix-crawler.wacz"),
    ]
    assert record.counts["files still being written"] == 1
    assert record.counts["captures outside every seed"] == 1
    assert inbox_read_back() is None  # nothing left to read


def test_a_file_changed_moments_ago_waits_for_the_next_pass(
    sites: list[Site], inbox: Path, settings: Any
) -> None:
    settings.HACS_CRAWL_INBOX_SETTLE_SECONDS = 60
    path = inbox / "zeno.warc.gz"
    path.write_bytes(warc_bytes([crawl(0, new=True)]))
    assert inbox_read_back() is None
    assert path.exists()
    assert inbox_read_back(now=datetime.now(UTC) + timedelta(minutes=2)) is not None
    assert not path.exists() and (inbox / "done" / "zeno.warc.gz").exists()


def test_a_damaged_inbox_file_keeps_its_records_and_says_why_beside_it(
    sites: list[Site], inbox: Path
) -> None:
    whole = warc_bytes([crawl(0, new=True), crawl(1, new=True)])
    first = len(warc_bytes([crawl(0, new=True)]))
    (inbox / "cut.warc.gz").write_bytes(whole[: first + 30])
    record = inbox_read_back()
    assert record is not None and record.status == "failed"
    note = (inbox / "failed" / "cut.warc.gz.txt").read_text()
    assert "truncated" in note and "cut.warc.gz" in note
    assert [u for u, _s in crawl_captures()] == [seed(0)]


def test_a_symbolic_link_in_the_inbox_is_not_followed(
    sites: list[Site], inbox: Path, tmp_path: Path
) -> None:
    secret = tmp_path / "secret.warc.gz"
    secret.write_bytes(warc_bytes([crawl(0, new=True)]))
    (inbox / "link.warc.gz").symlink_to(secret)
    record = inbox_read_back()
    assert record is not None and "is a symbolic link" in record.failures[0]["reason"]
    assert crawl_captures() == []
    assert (inbox / "failed" / "link.warc.gz").is_symlink() and secret.exists()


def test_a_file_dropped_twice_stores_nothing_twice(sites: list[Site], inbox: Path) -> None:
    data = warc_bytes([crawl(0, new=True)])
    (inbox / "again.warc.gz").write_bytes(data)
    inbox_read_back()
    (inbox / "again.warc.gz").write_bytes(data)
    record = inbox_read_back()
    assert record is not None and record.counts.get("captures added", 0) == 0
    assert record.counts["captures already stored"] == 1
    assert len(crawl_captures()) == 1
    done = sorted(p.name for p in (inbox / "done").iterdir())
    assert len(done) == 2 and "again.warc.gz" in done  # the second beside the first


def test_a_refused_wacz_goes_to_failed_with_its_reason(sites: list[Site], inbox: Path) -> None:
    bomb = wacz_bytes(
        {"a.warc.gz": warc_bytes([crawl(0, new=True)])}, extra={"../../escape.warc.gz": b"x"}
    )
    (inbox / "hostile.wacz").write_bytes(bomb)
    record = inbox_read_back()
    assert record is not None and record.status == "failed"
    note = (inbox / "failed" / "hostile.wacz.txt").read_text()
    assert "refused" in note and "'..'" in note and "nothing in it was stored" in note
    assert crawl_captures() == []


def test_the_inbox_is_read_before_the_nightly_refresh(
    sites: list[Site], inbox: Path, settings: Any, redis_url: str
) -> None:
    from operations.jobs import nightly_refresh

    (inbox / "night.warc.gz").write_bytes(warc_bytes([crawl(0, new=True)]))
    nightly_refresh()  # no site came from the archive: only the inbox has work
    assert (inbox / "done" / "night.warc.gz").exists()
    assert JobRecord.objects.filter(kind="read_back").count() == 1


# --- import_warc takes WACZ too ---------------------------------------------------------------


def test_import_warc_reads_a_wacz(sites: list[Site], tmp_path: Path) -> None:
    from django.core.management import call_command

    path = tmp_path / "crawl.wacz"
    path.write_bytes(wacz_bytes({"data.warc.gz": warc_bytes([crawl(0, new=True), OTHERS])}))
    call_command("import_warc", str(path))
    capture = Capture.objects.get(source="wacz:crawl.wacz")
    assert capture.url == seed(0) and capture.link_floor == -1


def test_a_read_back_loads_neither_scikit_learn_nor_scipy_stats() -> None:
    """A worker reading a crawl back stays small: the libraries only learning and the
    evaluation need are not imported by the import path (bench.wacz_import measures it)."""
    import subprocess
    import sys

    code = (
        "import sys, django; django.setup(); import operations.readback, operations.jobs; "
        "print(sorted(m for m in ('sklearn', 'scipy.stats', 'plotly') "
        "if m in sys.modules))"
    )
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "hacs_site.settings"}
    out = subprocess.run(
        [sys.executable, "-c", code],
        env=env,
        capture_output=True,
        text=True,
        cwd=Path(__file__).resolve().parent.parent,
        check=True,
    )
    assert out.stdout.strip() == "[]"


def test_a_read_back_stopped_mid_file_reads_it_again_and_stores_nothing_twice(
    sites: list[Site], job: HeritrixJob, hand_off: HandOff, monkeypatch: pytest.MonkeyPatch
) -> None:
    import operations.readback as readback

    job.launch("20261124050000")
    job.write_warc([crawl(0, new=True), crawl(1, new=False)])
    real = readback.sites_refresh

    def stopped(*args: Any, **kwargs: Any) -> Any:
        real(*args, **kwargs)  # the captures are stored, then Ctrl-C before the file is noted
        raise KeyboardInterrupt

    monkeypatch.setattr(readback, "sites_refresh", stopped)
    with pytest.raises(KeyboardInterrupt):
        heritrix_read_back(hand_off)
    record = JobRecord.objects.get(kind="read_back")
    assert record.status == "interrupted"
    assert not CrawlFile.objects.exists()  # not remembered: the next pass reads it again
    monkeypatch.setattr(readback, "sites_refresh", real)
    again = heritrix_read_back(hand_off)
    assert again is not None and again.status == "finished"
    assert again.counts["captures already stored"] == 2 and "captures added" not in again.counts
    assert len(crawl_captures()) == 2
    assert set(
        Site.objects.filter(pk__in=[s.pk for s in sites[:2]]).values_list(
            "import_status", flat=True
        )
    ) == {"done"}


def test_the_site_page_shows_each_captures_source_and_the_crawls_on_the_timeline(
    sites: list[Site], inbox: Path, logged_in_client: Any, settings: Any
) -> None:
    from dashboard.sites import site_history

    (inbox / "wget.warc.gz").write_bytes(warc_bytes([crawl(0, new=True)]))
    inbox_read_back()
    site = Site.objects.get(seed_url=seed(0))
    history = site_history(site=site, wayback_url=settings.HACS_WAYBACK_URL)
    assert history.timeline is not None
    stars = [t for t in history.timeline["data"] if t["legendgroup"] == "crawl"]
    assert stars and all(
        " · Library crawl: crawl inbox (wget.warc.gz)" in text
        for t in stars
        for text in t["customdata"]
    )
    newest = history.recent_captures[0]
    assert (newest.crawl, newest.replay_url) == (True, "")  # no archive holds the library's copy
    assert history.recent_captures[-1].source == "File history.warc.gz"
    html = logged_in_client.get(f"/sites/{site.pk}/").content.decode()
    assert "Library crawl: crawl inbox (wget.warc.gz)" in html and 'class="library-crawl"' in html
