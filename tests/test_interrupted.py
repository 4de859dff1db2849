"""Work whose worker, Redis or terminal stopped ends interrupted, and its sites can be retried.

Every case stops a real process (a worker, Redis, a command) the way an operator meets it and
then waits — with a generous timeout, never a timed assertion — for the sweep to find it. A file
import is stopped mid-file by feeding it through a named pipe that stops after its first batch.
"""

from __future__ import annotations

import io
import os
import signal
import socket
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Callable, Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import psutil
import pytest
import redis
from django.core.management import call_command
from django.utils import timezone

from archive.models import Capture, LinkSnapshot, Site
from archive.pipeline import WARC_BATCH
from hacs_demo import DemoArchive, build_demo_archive
from jobs.models import JobRecord
from jobs.runner import INTERRUPTED_REASON, job_heartbeat_beat
from jobs.services import JobQueue
from operations.jobs import enqueue_files, enqueue_import, import_sites, sweep_interrupted
from scheduling.models import Estimate
from scripts.localservers import free_port, start_redis
from testbed.ia_server import IAArchive, ia_rows_and_bodies
from tests.factories import make_site, stored_captures, stored_estimates

ROOT = Path(__file__).resolve().parent.parent
pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.integration]


@pytest.fixture()
def stalling_archive() -> Iterator[str]:
    """An archive on 127.0.0.1 that accepts every connection and never answers."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(16)
    held: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        server.settimeout(0.2)
        while not stop.is_set():
            try:
                held.append(server.accept()[0])
            except OSError:
                continue

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.getsockname()[1]}"
    stop.set()
    thread.join()
    for conn in held:
        conn.close()
    server.close()


def wait_for(check: Callable[[], Any], what: str, timeout: float = 90) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = check()
        if value:
            return value
        time.sleep(0.2)
    raise AssertionError(f"timed out waiting for {what}")


def archive_env(env: dict[str, str], archive: str) -> dict[str, str]:
    return {
        **env,
        "HACS_CDX_URL": f"{archive}/cdx",
        "HACS_WAYBACK_URL": f"{archive}/web",
        "HACS_HTTP_TIMEOUT": "600",
        "HACS_HTTP_DEADLINE": "3600",
        "HACS_HTTP_RETRIES": "0",
        "HACS_JOB_HEARTBEAT_SECONDS": "0.2",
        "HACS_JOB_LEASE_SECONDS": "2",
        "PYTHONUNBUFFERED": "1",
    }


def queued_site_ids(redis_url: str, queue: str = "import") -> list[int]:
    [job] = JobQueue(queue, connection=redis.Redis.from_url(redis_url)).jobs
    return list(job.args[1])


def ctrl_c_as_in_a_terminal() -> None:
    """In the child, before it runs: Ctrl-C does what it does in a terminal. A shell that
    starts a job in the background without job control (``cmd &``) makes it ignore SIGINT, and
    a Python started that way installs no KeyboardInterrupt handler."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def start_quietly(args: list[str], env: dict[str, str]) -> subprocess.Popen[bytes]:
    """A process of the test's (a worker, a command), its output thrown away."""
    return subprocess.Popen(
        args, env=env, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )


def import_worker(env: dict[str, str]) -> subprocess.Popen[bytes]:
    return start_quietly([sys.executable, str(ROOT / "manage.py"), "rqworker", "import"], env)


def kill_with_its_work_horse(worker: subprocess.Popen[bytes]) -> None:
    """SIGKILL the worker and its work-horse (which RQ puts in a process group of its own)."""
    family = [psutil.Process(worker.pid), *psutil.Process(worker.pid).children(True)]
    for process in family:
        process.kill()


def wait_until_running(site: Site, what: str) -> None:
    wait_for(lambda: Site.objects.get(pk=site.pk).import_status == Site.ImportStatus.RUNNING, what)


def wait_until_interrupted(record: JobRecord, what: str) -> None:
    """Sweep until the sweep marks ``record`` interrupted."""

    def interrupted() -> bool:
        sweep_interrupted()
        return JobRecord.objects.get(pk=record.pk).status == JobRecord.Status.INTERRUPTED

    wait_for(interrupted, what)


def test_a_killed_worker_leaves_its_job_and_site_interrupted_and_retryable(
    settings: Any,
    worker_env: dict[str, str],
    redis_url: str,
    stalling_archive: str,
    logged_in_client: Any,
) -> None:
    settings.HACS_JOB_LEASE_SECONDS = 2
    site = make_site()
    done = make_site(import_status="done")
    record = enqueue_import([site.pk])
    worker = import_worker(archive_env(worker_env, stalling_archive))
    try:
        # The fan-out ran and the site's import is stuck in its CDX request.
        wait_until_running(site, "the site's import to start")
        first = JobRecord.objects.get(pk=record.pk).heartbeat_at
        wait_for(
            lambda: JobRecord.objects.get(pk=record.pk).heartbeat_at != first,
            "a heartbeat from the running work",
        )
        sweep_interrupted()
        assert JobRecord.objects.get(pk=record.pk).status == JobRecord.Status.RUNNING
        kill_with_its_work_horse(worker)
    finally:
        worker.kill()
        worker.wait()

    wait_until_interrupted(record, "the sweep to mark the job interrupted")
    site.refresh_from_db()
    assert site.import_status == Site.ImportStatus.FAILED
    assert site.import_error.startswith("Interrupted: its worker, Redis or terminal stopped")
    record.refresh_from_db()
    assert [f["item"] for f in record.failures] == [site.seed_url]
    assert record.elapsed_seconds is not None and record.elapsed_seconds > 0

    page = logged_in_client.get("/jobs/").content.decode()
    assert "Interrupted" in page and "Retry all 1 failed site" in page
    # "Retry these sites" of the interrupted job queues exactly the interrupted site.
    response = logged_in_client.post("/jobs/retry/", {"job": record.pk})
    assert response.status_code == 302
    assert queued_site_ids(redis_url) == [site.pk]
    redis.Redis.from_url(redis_url).flushdb()
    # And the command's --failed selects it too, not the imported one.
    call_command("import_archive", "--failed", "--enqueue")
    assert queued_site_ids(redis_url) == [site.pk]
    assert done.pk not in queued_site_ids(redis_url)


def test_a_work_horse_outliving_its_killed_worker_keeps_its_job_until_it_stops(
    settings: Any, worker_env: dict[str, str], redis_url: str, stalling_archive: str
) -> None:
    settings.HACS_JOB_LEASE_SECONDS = 2
    site = make_site()
    record = enqueue_import([site.pk])
    worker = import_worker(archive_env(worker_env, stalling_archive))
    horses: list[psutil.Process] = []
    try:
        wait_until_running(site, "the site's import to start")
        horses = psutil.Process(worker.pid).children(recursive=True)
        assert horses
    finally:
        worker.kill()  # SIGKILL the worker only; RQ's work-horse has its own process group
        worker.wait()
    try:
        # The work-horse goes on, and its heartbeat keeps the job's lease.
        killed_at = timezone.now()
        wait_for(
            lambda: (
                JobRecord.objects.get(pk=record.pk).heartbeat_at
                > killed_at + timedelta(seconds=settings.HACS_JOB_LEASE_SECONDS)
            ),
            "a heartbeat from the work-horse a lease after its worker died",
        )
        assert sweep_interrupted() == 0
        assert JobRecord.objects.get(pk=record.pk).status == JobRecord.Status.RUNNING
        assert Site.objects.get(pk=site.pk).import_status == Site.ImportStatus.RUNNING
    finally:
        for horse in horses:
            horse.kill()

    wait_until_interrupted(record, "the sweep to mark the job interrupted once the work-horse died")
    assert Site.objects.get(pk=site.pk).import_status == Site.ImportStatus.FAILED


def test_redis_dying_mid_fan_out_leaves_the_job_and_its_sites_interrupted(
    settings: Any, logged_in_client: Any
) -> None:
    private = start_redis()
    url = private.url()
    settings.REDIS_URL = url
    settings.RQ_QUEUES = {name: {**c, "URL": url} for name, c in settings.RQ_QUEUES.items()}
    settings.HACS_JOB_LEASE_SECONDS = 1
    sites = [make_site() for _ in range(3)]
    ids = [s.pk for s in sites]
    try:
        record = enqueue_import(ids)
    finally:
        private.stop()
    # The worker's fan-out meets a dead Redis: the job and its unqueued sites say so at once.
    with pytest.raises(redis.ConnectionError):
        import_sites(record.pk, ids)
    record.refresh_from_db()
    assert record.status == JobRecord.Status.INTERRUPTED
    assert "Redis stopped while the import was being queued (0 of 3" in record.error
    assert set(Site.objects.values_list("import_status", flat=True)) == {"failed"}
    assert sorted(f["item"] for f in record.failures) == sorted(s.seed_url for s in sites)
    assert record.done == 0


def test_a_job_silent_while_redis_is_down_is_interrupted_with_its_sites(
    settings: Any, logged_in_client: Any
) -> None:
    private = start_redis()
    url = private.url()
    settings.RQ_QUEUES = {name: {**c, "URL": url} for name, c in settings.RQ_QUEUES.items()}
    settings.HACS_JOB_LEASE_SECONDS = 1
    sites = [make_site() for _ in range(2)]
    ids = [s.pk for s in sites]
    try:
        record = enqueue_import(ids)
        import_sites(record.pk, ids)  # fanned out; then Redis dies before any site ran
    finally:
        private.stop()
    assert set(Site.objects.values_list("import_status", flat=True)) == {"queued"}

    wait_until_interrupted(record, "the sweep to mark the job interrupted")
    assert set(Site.objects.values_list("import_status", flat=True)) == {"failed"}
    record.refresh_from_db()
    assert sorted(f["item"] for f in record.failures) == sorted(s.seed_url for s in sites)
    page = logged_in_client.get("/jobs/")
    assert page.status_code == 200
    assert "Background jobs are stopped." in page.content.decode()
    assert logged_in_client.get("/jobs/status.json").json()["jobs"][0]["status"] == "interrupted"


def test_a_job_still_waiting_in_redis_or_beating_is_not_interrupted(
    settings: Any, redis_url: str
) -> None:
    settings.HACS_JOB_LEASE_SECONDS = 60
    waiting = enqueue_import([make_site().pk])  # queued, nobody has started it
    beating = JobRecord.objects.create(
        rq_id="beating", kind="import", queue="import", status="running"
    )
    silent = JobRecord.objects.create(
        rq_id="silent", kind="health", queue="default", status="running"
    )
    # Every lease ran out long ago; then one job beats again.
    long_ago = timezone.now() - timedelta(hours=1)
    JobRecord.objects.update(created_at=long_ago, heartbeat_at=long_ago)
    job_heartbeat_beat(beating.pk)
    assert sweep_interrupted() == 1
    statuses = dict(JobRecord.objects.values_list("rq_id", "status"))
    assert statuses == {waiting.rq_id: "queued", "beating": "running", silent.rq_id: "interrupted"}
    # A record whose job never reached Redis is interrupted too.
    redis.Redis.from_url(redis_url).flushdb()
    assert sweep_interrupted() == 1
    assert JobRecord.objects.get(pk=waiting.pk).status == JobRecord.Status.INTERRUPTED


def test_ctrl_c_on_a_command_in_a_terminal_marks_its_job_and_site_interrupted(
    worker_env: dict[str, str], stalling_archive: str
) -> None:
    site = make_site()
    command = subprocess.Popen(
        [sys.executable, "manage.py", "import_archive"],
        env=archive_env(worker_env, stalling_archive),
        cwd=ROOT,
        preexec_fn=ctrl_c_as_in_a_terminal,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        wait_until_running(site, "the command's import to start")
        record = JobRecord.objects.get(queue="terminal")
        assert record.status == JobRecord.Status.RUNNING
        assert record.label == "1 site from the terminal"
        os.kill(command.pid, signal.SIGINT)
        output, _ = command.communicate(timeout=60)
    finally:
        command.kill()
    assert "KeyboardInterrupt" in output
    record.refresh_from_db()
    assert record.status == JobRecord.Status.INTERRUPTED
    site.refresh_from_db()
    assert site.import_status == Site.ImportStatus.FAILED
    assert site.import_error.startswith("Interrupted")


def test_a_closed_terminal_is_found_by_its_silent_heartbeat(
    settings: Any, worker_env: dict[str, str], stalling_archive: str
) -> None:
    settings.HACS_JOB_LEASE_SECONDS = 2
    site = make_site()
    script = textwrap.dedent(
        f"""
        import django
        django.setup()
        from archive.pipeline import FromArchive
        from jobs.runner import JobRun
        from operations.stops import sites_interrupt
        from operations.refresh import archive_client, sites_refresh
        with JobRun.start(kind="import", label="from a terminal", queue="terminal",
                          total=1, items=[{site.pk}], on_stop=sites_interrupt) as run:
            sites_refresh(FromArchive([{site.pk}]), client=archive_client(), report=run.report)
        """
    )
    command = start_quietly(
        [sys.executable, "-c", script], archive_env(worker_env, stalling_archive)
    )
    try:
        wait_until_running(site, "the command's import to start")
    finally:
        command.kill()  # SIGKILL: nothing runs on the way out
        command.wait()
    record = JobRecord.objects.get(queue="terminal")

    wait_until_interrupted(record, "the sweep to mark the job interrupted")
    assert Site.objects.get(pk=site.pk).import_status == Site.ImportStatus.FAILED


def test_a_command_that_needs_redis_says_so_in_one_line(worker_env: dict[str, str]) -> None:
    make_site()
    env = {**worker_env, "REDIS_URL": f"redis://127.0.0.1:{free_port()}/0"}
    result = subprocess.run(
        [sys.executable, str(ROOT / "manage.py"), "import_archive", "--enqueue"],
        env=env,
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 1
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert "cannot be reached" in lines[0] and "REDIS_URL" in lines[0]
    assert not JobRecord.objects.exists()


# --- File imports: progress inside a file, no site left waiting -----------------------------------


def load_demo_seeds(demo: DemoArchive) -> None:
    quiet = open(os.devnull, "w")
    call_command("import_seeds", str(demo.seeds_path), stdout=quiet, stderr=quiet)


StoredState = tuple[list[Any], list[Any], list[Any], dict[str, str]]


def stored() -> StoredState:
    """Everything an import leaves: captures with their update data, snapshots, estimates, and
    each site's import status."""
    captures = stored_captures("source")
    snapshots = sorted(LinkSnapshot.objects.values_list("urlkey", "digest", "status", "links"))
    estimates = stored_estimates()
    statuses = dict(Site.objects.values_list("canonical_key", "import_status"))
    return captures, snapshots, estimates, statuses


def forget_imports() -> None:
    Capture.objects.all().delete()
    LinkSnapshot.objects.all().delete()
    Estimate.objects.all().delete()
    JobRecord.objects.all().delete()
    Site.objects.update(import_status=Site.ImportStatus.PENDING, import_error="")


def imported_then_forgotten(tmp_path: Path) -> tuple[DemoArchive, StoredState]:
    """A 12-site demo's WARC imported cleanly, what that stored, then the import forgotten."""
    demo = build_demo_archive(tmp_path / "demo", sites=12, seed=3)
    load_demo_seeds(demo)
    call_command("import_warc", str(demo.warc_path), stdout=io.StringIO())
    clean = stored()
    assert set(clean[3].values()) == {"done"}
    forget_imports()
    return demo, clean


def capture_end(warc: Path, captures: int) -> int:
    """The byte offset where the WARC's response or revisit number ``captures`` ends."""
    from warcio.archiveiterator import ArchiveIterator

    seen = 0
    with open(warc, "rb") as stream:
        iterator = ArchiveIterator(stream)
        for record in iterator:
            iterator.read_to_end(record)
            if record.rec_type in ("response", "revisit"):
                seen += 1
                if seen == captures:
                    return int(iterator.get_record_offset() + iterator.get_record_length())
    raise AssertionError(f"{warc} holds fewer than {captures} captures")


def stalled_copy(warc: Path, where: Path, stop: threading.Event) -> tuple[Path, threading.Thread]:
    """A named pipe of ``warc``'s name in ``where`` delivering its first captures (a batch and
    more) and then nothing until ``stop`` is set: an import reading it stops mid-file."""
    where.mkdir()
    pipe = where / warc.name
    os.mkfifo(pipe)
    head = warc.read_bytes()[: capture_end(warc, WARC_BATCH + 300)]

    def feed() -> None:
        with open(pipe, "wb") as writer:
            try:
                writer.write(head)
                writer.flush()
            except BrokenPipeError:
                return  # the import was killed while this part was still being read
            stop.wait(300)

    feeder = threading.Thread(target=feed, daemon=True)
    feeder.start()
    return pipe, feeder


def record_reading(least: int, queue: str = "terminal") -> JobRecord | None:
    """The import record of ``queue`` once it has read ``least`` records."""
    record = JobRecord.objects.filter(queue=queue).first()
    if record is None or record.counts.get("records read", 0) < least:
        return None
    return record


def test_a_warc_import_killed_mid_file_leaves_its_sites_interrupted_and_reruns_cleanly(
    settings: Any, worker_env: dict[str, str], tmp_path: Path
) -> None:
    settings.HACS_JOB_LEASE_SECONDS = 2
    demo, clean = imported_then_forgotten(tmp_path)

    stop_feeding = threading.Event()
    pipe, feeder = stalled_copy(demo.warc_path, tmp_path / "pipe", stop_feeding)
    command = start_quietly(
        [sys.executable, str(ROOT / "manage.py"), "import_warc", str(pipe)],
        archive_env(worker_env, f"http://127.0.0.1:{free_port()}"),
    )
    try:
        record = wait_for(lambda: record_reading(WARC_BATCH), "the first batch")
        # Mid-file: the Jobs page shows records read, the file itself is not done.
        assert record.status == JobRecord.Status.RUNNING and record.done == 0
        assert record.label == "1 WARC file from the terminal"
        started = set(record.items)
        assert started
        running = Site.objects.filter(pk__in=started).values_list("import_status", flat=True)
        assert set(running) == {"running"}
    finally:
        command.kill()  # SIGKILL: nothing runs on the way out
        command.wait()
        stop_feeding.set()
        feeder.join()

    wait_until_interrupted(record, "the sweep to mark the file import interrupted")
    # Every site holding captures from the cut import says so; none waits forever.
    assert set(Capture.objects.values_list("site_id", flat=True)) == started
    left = set(Site.objects.filter(pk__in=started).values_list("import_status", "import_error"))
    assert left == {("failed", INTERRUPTED_REASON)}
    assert not Site.objects.filter(import_status__in=["queued", "running"]).exists()
    record.refresh_from_db()
    urls = Site.objects.filter(pk__in=started).values_list("seed_url", flat=True)
    assert sorted(f["item"] for f in record.failures) == sorted(urls)

    call_command("import_warc", str(demo.warc_path), stdout=io.StringIO())
    assert stored() == clean


def test_ctrl_c_on_a_cdx_import_leaves_its_sites_interrupted_and_reruns_cleanly(
    settings: Any, worker_env: dict[str, str], stalling_archive: str, tmp_path: Path
) -> None:
    demo = build_demo_archive(tmp_path / "demo", sites=6, seed=5)
    load_demo_seeds(demo)
    rows, bodies = ia_rows_and_bodies(demo)
    quiet = open(os.devnull, "w")
    with IAArchive(rows, bodies) as archive:
        settings.HACS_CDX_URL = archive.cdx_url
        settings.HACS_WAYBACK_URL = archive.wayback_url
        settings.HACS_MEMENTO_RATE_PER_MINUTE = 60000.0
        call_command("import_cdx", str(demo.cdx_path), stdout=quiet)
        clean = stored()
        assert set(clean[3].values()) == {"done"}
        forget_imports()

        # The captures are stored, then the first memento fetch meets an archive that never
        # answers: Ctrl-C there.
        command = subprocess.Popen(
            [sys.executable, str(ROOT / "manage.py"), "import_cdx", str(demo.cdx_path)],
            env=archive_env(worker_env, stalling_archive),
            cwd=ROOT,
            preexec_fn=ctrl_c_as_in_a_terminal,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        try:
            record = wait_for(lambda: record_reading(1), "the file to be read")
            started = set(record.items)
            assert started
            os.kill(command.pid, signal.SIGINT)
            output, _ = command.communicate(timeout=60)
        finally:
            command.kill()
        assert "KeyboardInterrupt" in output
        record.refresh_from_db()
        assert record.status == JobRecord.Status.INTERRUPTED
        assert set(Capture.objects.values_list("site_id", flat=True)) == started
        left = set(Site.objects.filter(pk__in=started).values_list("import_status", "import_error"))
        assert left == {("failed", INTERRUPTED_REASON)}
        assert not Site.objects.filter(import_status__in=["queued", "running"]).exists()

        call_command("import_cdx", str(demo.cdx_path), stdout=quiet)
    assert stored() == clean


def test_a_worker_killed_mid_file_leaves_the_sites_of_its_file_import_interrupted(
    settings: Any, worker_env: dict[str, str], tmp_path: Path
) -> None:
    settings.HACS_JOB_LEASE_SECONDS = 2
    demo, clean = imported_then_forgotten(tmp_path)

    stop_feeding = threading.Event()
    pipe, feeder = stalled_copy(demo.warc_path, tmp_path / "pipe", stop_feeding)
    record = enqueue_files("warc", [str(pipe)])
    worker = import_worker(archive_env(worker_env, f"http://127.0.0.1:{free_port()}"))
    try:
        reading = wait_for(lambda: record_reading(WARC_BATCH, queue="import"), "the first batch")
        assert reading.pk == record.pk and reading.done == 0
        started = set(reading.items)
        assert started
        kill_with_its_work_horse(worker)
    finally:
        worker.kill()
        worker.wait()
        stop_feeding.set()
        feeder.join()

    def interrupted() -> bool:
        sweep_interrupted()
        status = JobRecord.objects.get(pk=record.pk).status
        return (
            status == JobRecord.Status.INTERRUPTED
            and not Site.objects.filter(import_status__in=["queued", "running"]).exists()
        )

    wait_for(interrupted, "the sweep to mark the file import and its sites interrupted")
    assert set(Capture.objects.values_list("site_id", flat=True)) == started
    left = set(Site.objects.filter(pk__in=started).values_list("import_status", "import_error"))
    assert left == {("failed", INTERRUPTED_REASON)}

    call_command("import_warc", str(demo.warc_path), stdout=io.StringIO())
    assert stored() == clean
