"""The crawl comes home: what the library's crawlers fetched, imported back without a hand.

A pass (:func:`crawl_read_back`: RQ cron at ``HACS_CRAWL_READBACK_CRON``, every 15 minutes by
default, on the import queue; ``manage.py read_back``) reads:

1. **Heritrix**: the job directory of every Heritrix hand-off that has sent a list — its
   finished WARC files not read before (``handoff.heritrix_readback``);
2. **Browsertrix**: every crawl a hand-off started that HACS still follows, asked once: a
   finished crawl's WACZ files are downloaded and read, a failed one reported (never asked
   again), one still under way ``HACS_CRAWL_WAIT_HOURS`` after its hand-off given up
   (``handoff.browsertrix_readback``);
3. **The crawl inbox** (``HACS_CRAWL_INBOX``), for every other crawler (``wget --warc-file``,
   browsertrix-crawler on the command line, brozzler, warcprox, Zeno): each WARC or WACZ file
   dropped there is read, then moved to ``done/``, or to ``failed/`` with a sentence beside it
   (``NAME.txt``); also just before the nightly refresh (:func:`inbox_read_back`).

Each read-back that reads or refuses something is a job on the Jobs page ("Crawl read-back")
with its files read, captures added, captures outside every seed (counted, never stored),
captures already stored, files skipped (read before, still being written) and refused. The
captures are stored as observations with their source (``archive.sources``), the sites'
estimates recomputed (``operations.refresh.sites_refresh``), and the yields of recent lists
counted again (``handoff.crawl_yield``). An interrupted read-back leaves its file unread: the
next pass reads it again and stores nothing twice.
"""

from __future__ import annotations

import logging
import os
import stat
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import BinaryIO

from django.conf import settings
from django.db import connection
from django.utils import timezone

from archive.pipeline import FromWarcFiles
from archive.sources import crawl_source
from hacs.progress import Progress, inside_units
from handoff.browsertrix_readback import (
    CrawlCheck,
    DownloadRefused,
    Resource,
    crawl_check,
    resource_download,
)
from handoff.crawl_yield import list_yields_update
from handoff.heritrix_readback import heritrix_open, heritrix_scan
from handoff.models import CrawlFile, FollowedCrawl, HandOff
from jobs.models import JobRecord
from jobs.runner import JobRun
from operations.refresh import sites_refresh
from operations.stops import NO_SEED_MATCHED, sites_interrupt

logger = logging.getLogger(__name__)

QUEUE = "read-back"  # where read-backs run, as the Jobs page says (not an RQ queue's name)


@dataclass(frozen=True)
class CrawlerFile:
    """A file to read back: shown as ``label``, its captures named ``source``, opened by
    ``opener`` (never through a symbolic link)."""

    path: Path
    label: str
    source: str
    opener: Callable[[Path], BinaryIO] | None = None


@dataclass(frozen=True)
class Outcome:
    """One file read: why it failed (empty when it did not), captures added, and whether any
    capture in it fell under a seed."""

    failure: str
    added: int
    matched: bool


def crawl_read_back(*, now: datetime | None = None) -> int:
    """One pass over every source (see the module); returns how many read-back jobs it made.
    A pass finding another still running does nothing."""
    running = JobRecord.objects.filter(kind=JobRecord.Kind.READ_BACK, status__in=JobRecord.ACTIVE)
    if running.exists():
        logger.info("A crawl read-back is still under way; this pass waits for the next.")
        return 0
    now = now or timezone.now()
    with modest_cache():
        made = _read_back_pass(now)
    if made:
        list_yields_update(now=now)
    return made


def _read_back_pass(now: datetime) -> int:
    made = 0
    heritrix = HandOff.objects.filter(
        kind__in=HandOff.HERITRIX, runs__sites__gt=0, runs__job__status__in=JobRecord.DONE
    ).distinct()
    for hand_off in heritrix.order_by("pk"):
        made += heritrix_read_back(hand_off) is not None
    following = FollowedCrawl.objects.filter(status=FollowedCrawl.Status.FOLLOWING)
    for crawl in following.select_related("run__hand_off").order_by("pk"):
        made += browsertrix_read_back(crawl, now=now) is not None
    made += inbox_read_back() is not None
    return made


# --- Reading files ------------------------------------------------------------------------------


def read_file(job: JobRun, crawled: CrawlerFile) -> Outcome:
    """Import one file as a library crawl, its counts added to ``job`` (see the module)."""
    source = FromWarcFiles(
        [crawled.path],
        max_body=settings.HACS_MAX_MEMENTO_BYTES,
        sources=[crawled.source],
        opener=crawled.opener,
    )
    report = sites_refresh(source, report=inside_units(job.report))
    failure = next((reason for _name, reason in report.failed_files), "")
    captures = report.captures
    counts = {
        "files read": 1,
        "captures added": captures.added,
        "captures outside every seed": captures.skipped["outside every seed"],
        "captures deeper than depth 2": captures.skipped["deeper than 2"],
        "captures already stored": captures.skipped["already stored"],
        "records skipped": report.bad_lines,
        "pages parsed": report.snapshots,
    }
    counted = {k: v for k, v in counts.items() if v}
    job.report(Progress(done=1, item=crawled.label, failure=failure, counts=counted))
    return Outcome(failure, captures.added, bool(captures.sites))


def _read_back_job(label: str, total: int) -> JobRun:
    return JobRun.start(
        kind=JobRecord.Kind.READ_BACK,
        label=label,
        queue=QUEUE,
        total=total,
        on_stop=sites_interrupt,
    )


#: The SQLite page cache a read-back keeps, in KiB (PRAGMA cache_size takes it negative).
READ_BACK_CACHE_KIB = 8 * 1024


@contextmanager
def modest_cache() -> Iterator[None]:
    """On SQLite, a read-back keeps an 8 MiB page cache instead of the 64 MiB of HACS's other
    processes (``hacs_site.env``): it writes a crawl's rows once and seldom reads them again,
    so a larger cache only holds memory (``bench.wacz_import``: it filled as a 1 GiB WACZ was
    read)."""
    if connection.vendor != "sqlite":
        yield
        return
    with connection.cursor() as cursor:
        cursor.execute("PRAGMA cache_size")
        (before,) = cursor.fetchone()
        cursor.execute(f"PRAGMA cache_size=-{READ_BACK_CACHE_KIB}")
    try:
        yield
    finally:
        with connection.cursor() as cursor:
            cursor.execute(f"PRAGMA cache_size={int(before)}")


# --- Heritrix -----------------------------------------------------------------------------------


def heritrix_read_back(hand_off: HandOff) -> JobRecord | None:
    """Read the hand-off's job's finished WARC files not read before; None when there was
    nothing to read or to refuse (a problem with the directory is reported once)."""
    scan = heritrix_scan(hand_off)
    if scan.problem:
        key = f"heritrix:{hand_off.pk}:"
        told = CrawlFile.objects.filter(key=key, message=scan.problem).exists()
        if told:
            return None
        scan.refused.append((key, hand_off.job_dir, scan.problem))
    if not scan.files and not scan.refused:
        return None
    files = f"{len(scan.files)} WARC file{'s' * (len(scan.files) != 1)}"
    label = f'Heritrix "{hand_off.name}": {files} from {hand_off.job_dir}'
    with _read_back_job(label, len(scan.files)) as job:
        for key, where, sentence in scan.refused:
            job.report(Progress(item=where, failure=sentence))
            _remember(
                key,
                hand_off,
                where,
                status=CrawlFile.Status.REFUSED,
                message=sentence,
                job=job.record,
            )
        skipped = {f"files {why}": n for why, n in scan.skipped.items()}
        refused = {"files refused": len(scan.refused)} if scan.refused else {}
        job.report(Progress(counts={**skipped, **refused}))
        for found in scan.files:

            def opener(_path: Path, label: str = found.label) -> BinaryIO:
                return heritrix_open(hand_off, label)

            source = crawl_source("heritrix", found.label, hand_off_id=hand_off.pk)
            outcome = read_file(job, CrawlerFile(found.path, found.label, source, opener))
            _remember(
                found.key,
                hand_off,
                found.label,
                size=found.size,
                mtime_ns=found.mtime_ns,
                digest=found.digest,
                captures=outcome.added,
                message=outcome.failure,
                status=CrawlFile.Status.FAILED if outcome.failure else CrawlFile.Status.READ,
                job=job.record,
            )
    return job.record


def _remember(
    key: str,
    hand_off: HandOff,
    where: str,
    *,
    status: str,
    job: JobRecord,
    message: str = "",
    size: int = 0,
    mtime_ns: int | None = None,
    digest: str = "",
    captures: int = 0,
) -> None:
    CrawlFile.objects.update_or_create(
        key=key,
        defaults={
            "hand_off": hand_off,
            "name": where.rsplit("/", 1)[-1][:300],
            "size": size,
            "mtime_ns": mtime_ns,
            "digest": digest,
            "status": status,
            "message": message,
            "captures": captures,
            "job": job,
        },
    )


# --- Browsertrix ----------------------------------------------------------------------------------


def browsertrix_read_back(crawl: FollowedCrawl, *, now: datetime) -> JobRecord | None:
    """Ask Browsertrix about a crawl HACS follows and act on its state (see the module)."""
    hand_off = crawl.run.hand_off
    check = crawl_check(hand_off=hand_off, crawl_id=crawl.crawl_id)
    crawl.checked_at = now
    crawl.state = check.state or crawl.state
    crawl.message = check.problem
    waited = now - crawl.run.created_at
    record = None
    if check.failed:
        record = _crawl_ended(
            crawl,
            FollowedCrawl.Status.FAILED,
            f'Browsertrix crawl {crawl.crawl_id} of hand-off "{hand_off.name}" ended '
            f'"{check.state}": there is nothing to read back. HACS does not start it again; '
            "run the hand-off again once the cause is fixed.",
        )
    elif check.finished:
        record = _crawl_files(crawl, check)
    # Still followed past the wait (not finished, or its files never all downloaded): given up.
    if crawl.status == FollowedCrawl.Status.FOLLOWING:
        if waited > timedelta(hours=settings.HACS_CRAWL_WAIT_HOURS):
            record = _crawl_ended(crawl, FollowedCrawl.Status.GIVEN_UP, _given_up(crawl, check))
    crawl.save()
    return record


def _given_up(crawl: FollowedCrawl, check: CrawlCheck) -> str:
    hand_off = crawl.run.hand_off
    hours = f"{settings.HACS_CRAWL_WAIT_HOURS:g} hours after its hand-off (HACS_CRAWL_WAIT_HOURS"
    by_hand = (
        "HACS stopped following it. To read what it fetched, download its WACZ files from "
        "Browsertrix into the crawl inbox, or import them with import_warc."
    )
    if check.finished:
        return (
            f'Browsertrix crawl {crawl.crawl_id} of hand-off "{hand_off.name}" finished, but its '
            f"files could not all be downloaded {hours}; the last reason: "
            f"{crawl.message or 'unknown'}); {by_hand}"
        )
    last = f'its last state "{crawl.state}"' if crawl.state else "no state known"
    said = f" ({check.problem})" if check.problem else ""
    return (
        f'Browsertrix crawl {crawl.crawl_id} of hand-off "{hand_off.name}" had not finished '
        f"{hours}; {last}){said}; {by_hand}"
    )


def _crawl_ended(crawl: FollowedCrawl, status: str, sentence: str) -> JobRecord:
    """Report a crawl that ended without files to read (failed, or given up) as a failed job."""
    label = f'Browsertrix "{crawl.run.hand_off.name}": crawl {crawl.crawl_id}'
    with _read_back_job(label, 1) as job, job.ending(error=sentence):
        crawl.status, crawl.message, crawl.ended_at = status, sentence, timezone.now()
        crawl.job = job.record
    return job.record


def _crawl_files(crawl: FollowedCrawl, check: CrawlCheck) -> JobRecord:
    """Download and read a finished crawl's WACZ files not read before. A download that may
    succeed later (an address expired, a host slow) leaves the crawl followed, asked again at
    the next pass; otherwise the crawl is read back."""
    hand_off = crawl.run.hand_off
    count = len(check.resources)
    label = (
        f'Browsertrix "{hand_off.name}": crawl {crawl.crawl_id}, {count} WACZ '
        f"file{'s' * (count != 1)}"
    )
    again = False
    with _read_back_job(label, count) as job:
        for name, sentence in check.refused:
            sentence = f'Hand-off "{hand_off.name}": the crawl\'s {name}: {sentence}'
            job.report(Progress(item=name, failure=sentence))
        for resource in check.resources:
            key = f"browsertrix:{hand_off.pk}:{crawl.crawl_id}/{resource.name}"[:700]
            known = CrawlFile.objects.filter(key=key, status=CrawlFile.Status.READ).first()
            if known is not None and (not resource.sha256 or known.digest == resource.sha256):
                job.report(Progress(done=1, counts={"files read before": 1}))
                continue
            again |= _crawl_file(job, crawl, resource, key)
        crawl.job = job.record
        if not again:
            crawl.status, crawl.ended_at = FollowedCrawl.Status.READ, timezone.now()
            crawl.message = ""
    return job.record


def _crawl_file(job: JobRun, crawl: FollowedCrawl, resource: Resource, key: str) -> bool:
    """Download one WACZ file into ``HACS_VAR_DIR/crawls`` (owner-only), read it, and delete
    it; returns whether it should be tried again at the next pass."""
    hand_off = crawl.run.hand_off
    directory = Path(settings.VAR_DIR) / "crawls"
    directory.mkdir(mode=0o700, parents=True, exist_ok=True)
    path = directory / f"{hand_off.pk}-{crawl.crawl_id}-{os.getpid()}-{resource.name}"
    flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC
    try:
        with os.fdopen(os.open(path, flags, 0o600), "wb") as sink:
            digest = resource_download(hand_off=hand_off, resource=resource, sink=sink)
            size = sink.tell()
        source = crawl_source(
            "browsertrix", f"{crawl.crawl_id}/{resource.name}", hand_off_id=hand_off.pk
        )
        outcome = read_file(job, CrawlerFile(path, resource.name, source))
    except DownloadRefused as refused:
        job.report(Progress(done=1, item=resource.name, failure=refused.sentence))
        crawl.message = refused.sentence
        return True
    finally:
        path.unlink(missing_ok=True)
    _remember(
        key,
        hand_off,
        resource.name,
        size=size,
        digest=digest,
        captures=outcome.added,
        message=outcome.failure,
        job=job.record,
        status=CrawlFile.Status.FAILED if outcome.failure else CrawlFile.Status.READ,
    )
    return False


# --- The crawl inbox ------------------------------------------------------------------------------

INBOX_SUFFIXES = (".warc.gz", ".warc", ".wacz")
WRITING_SUFFIXES = (".open", ".tmp", ".part", ".partial", ".crdownload", ".download", ".filepart")
_DIRECTORY = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
LINK_REFUSED = (
    "{name} is a symbolic link; HACS reads no file of the crawl inbox through a link, so copy "
    "the file itself there."
)
NOT_A_CRAWL = (
    "{name} is not a WARC or WACZ file by its name (….warc.gz, ….warc or ….wacz); HACS did not "
    "read it."
)


def inbox_read_back(*, now: datetime | None = None) -> JobRecord | None:
    """Read the files dropped into ``HACS_CRAWL_INBOX`` and move each to ``done/`` or to
    ``failed/`` with a sentence beside it; None when the inbox is unset or holds nothing to
    read. A file still being written (a temporary name, a dot-file, or changed within
    ``HACS_CRAWL_INBOX_SETTLE_SECONDS``) is left for a later pass."""
    inbox = settings.HACS_CRAWL_INBOX
    if not inbox:
        return None
    with modest_cache():
        return _inbox_pass(inbox, (now or timezone.now()).timestamp())


def _inbox_pass(inbox: str, moment: float) -> JobRecord | None:
    try:
        inbox_fd = os.open(os.path.realpath(inbox), _DIRECTORY)
    except OSError as error:
        logger.warning("The crawl inbox %s cannot be read: %s", inbox, error.strerror or error)
        return None
    try:
        chosen, refused, waiting = _inbox_files(inbox_fd, moment)
        if not chosen and not refused:
            return None
        opened: list[int] = []
        try:
            for name in ("done", "failed"):
                opened.append(_subdirectory(inbox_fd, name))
        except OSError as error:
            logger.warning(
                "The crawl inbox %s: done/ or failed/ cannot be opened (a symbolic link?): %s",
                inbox,
                error.strerror or error,
            )
            return None
        else:
            return _inbox_job(inbox_fd, opened[0], opened[1], chosen, refused, waiting)
        finally:
            for fd in opened:
                os.close(fd)
    finally:
        os.close(inbox_fd)


def _inbox_job(
    inbox_fd: int,
    done_fd: int,
    failed_fd: int,
    chosen: list[str],
    refused: list[tuple[str, str]],
    waiting: int,
) -> JobRecord:
    files = f"{len(chosen)} file{'s' * (len(chosen) != 1)}"
    with _read_back_job(f"Crawl inbox {settings.HACS_CRAWL_INBOX}: {files}", len(chosen)) as job:
        if waiting:
            job.report(Progress(counts={"files still being written": waiting}))
        for name, sentence in refused:
            job.report(Progress(item=name, failure=sentence))
            _inbox_move(inbox_fd, name, failed_fd, sentence)
        for name in chosen:
            _inbox_read(job, inbox_fd, name, done_fd, failed_fd)
    return job.record


def _inbox_files(inbox_fd: int, moment: float) -> tuple[list[str], list[tuple[str, str]], int]:
    """The files to read, the entries refused (name, sentence) and how many are still being
    written."""
    chosen: list[str] = []
    refused: list[tuple[str, str]] = []
    waiting = 0
    for name in sorted(os.listdir(inbox_fd)):
        if name in ("done", "failed") or name.startswith("."):
            continue
        try:
            found = os.stat(name, dir_fd=inbox_fd, follow_symlinks=False)
        except FileNotFoundError:
            continue
        lower = name.lower()
        if stat.S_ISLNK(found.st_mode):
            refused.append((name, LINK_REFUSED.format(name=name)))
        elif not stat.S_ISREG(found.st_mode):
            continue  # a directory of the operator's: not HACS's to read
        elif lower.endswith(WRITING_SUFFIXES) or (
            moment - found.st_mtime < settings.HACS_CRAWL_INBOX_SETTLE_SECONDS
        ):
            waiting += 1
        elif not lower.endswith(INBOX_SUFFIXES):
            refused.append((name, NOT_A_CRAWL.format(name=name)))
        else:
            chosen.append(name)
    return chosen, refused, waiting


def _inbox_read(job: JobRun, inbox_fd: int, name: str, done_fd: int, failed_fd: int) -> None:
    def opener(_path: Path) -> BinaryIO:
        return os.fdopen(os.open(name, os.O_RDONLY | os.O_NOFOLLOW, dir_fd=inbox_fd), "rb")

    path = Path(settings.HACS_CRAWL_INBOX) / name
    outcome = read_file(job, CrawlerFile(path, name, crawl_source("inbox", name), opener))
    if outcome.failure:
        _inbox_move(inbox_fd, name, failed_fd, f"{name}: {outcome.failure}")
    elif not outcome.matched:
        job.report(Progress(item=name, failure=NO_SEED_MATCHED))
        _inbox_move(inbox_fd, name, failed_fd, f"{name}: {NO_SEED_MATCHED}")
    else:
        _inbox_move(inbox_fd, name, done_fd, "")


def _subdirectory(inbox_fd: int, name: str) -> int:
    try:
        os.mkdir(name, 0o750, dir_fd=inbox_fd)
    except FileExistsError:
        pass
    return os.open(name, _DIRECTORY, dir_fd=inbox_fd)


def _inbox_move(inbox_fd: int, name: str, target_fd: int, sentence: str) -> None:
    """Move ``name`` into ``done/`` or ``failed/`` (a name already there gets a time stamp
    first), with the sentence beside it in ``NAME.txt`` when there is one."""
    moved = name
    if _exists(moved, target_fd) or (sentence and _exists(f"{moved}.txt", target_fd)):
        moved = f"{datetime.now(UTC):%Y%m%dT%H%M%S%fZ}-{name}"
    os.rename(name, moved, src_dir_fd=inbox_fd, dst_dir_fd=target_fd)
    if sentence:
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
        fd = os.open(f"{moved}.txt", flags, 0o640, dir_fd=target_fd)
        with os.fdopen(fd, "w", encoding="utf-8") as note:
            note.write(f"{datetime.now(UTC):%Y-%m-%dT%H:%M:%SZ} HACS: {sentence}\n")


def _exists(name: str, directory_fd: int) -> bool:
    try:
        os.stat(name, dir_fd=directory_fd, follow_symlinks=False)
    except FileNotFoundError:
        return False
    return True
