"""Importing archive history, end to end, against real servers.

The same synthetic archive is imported four ways — from its WARC file, from its CDX file plus
``id_`` mementos served by a real pywb, through pywb's CDX API, and through a local server that
answers like the Internet Archive (with faults) — and every way must store identical captures,
link snapshots and update data. A worker killed mid-import and re-run must end the same way, and
the stored update flags must equal the ones the demo archive's truth implies.
"""

from __future__ import annotations

import io
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command

from archive.models import Capture, LinkSnapshot, Site
from hacs.formats.cdx import format_timestamp
from hacs_demo import DemoArchive, build_demo_archive
from jobs.models import JobRecord
from operations.jobs import enqueue_import
from scheduling.models import Estimate
from testbed.ia_server import IAArchive, ia_rows_and_bodies
from testbed.pywb import PywbServer

ROOT = Path(__file__).resolve().parent.parent
pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> DemoArchive:
    return build_demo_archive(tmp_path_factory.mktemp("import-demo"), sites=12, seed=3)


@pytest.fixture(scope="module")
def pywb(demo: DemoArchive) -> Iterator[PywbServer]:
    with PywbServer([demo.warc_path], "demo") as server:
        yield server


def use_archive(settings: Any, *, cdx_url: str, wayback_url: str, dialect: str) -> dict[str, str]:
    values = {
        "HACS_CDX_URL": cdx_url,
        "HACS_WAYBACK_URL": wayback_url,
        "HACS_CDX_DIALECT": dialect,
        "HACS_CDX_RATE_PER_MINUTE": "6000",
        "HACS_MEMENTO_RATE_PER_MINUTE": "60000",
        "HACS_HTTP_BACKOFF_BASE": "0.05",
    }
    for name, value in values.items():
        setattr(settings, name, float(value) if "RATE" in name or "BACKOFF" in name else value)
    return values


def fingerprint() -> tuple[list[Any], list[Any]]:
    captures = sorted(
        Capture.objects.values_list(
            "site__canonical_key",
            "urlkey",
            "page_key",
            "timestamp",
            "depth",
            "mimetype",
            "status",
            "digest",
            "length",
            "kind",
            "is_observation",
            "page_index",
            "link_floor",
            "new_links",
        )
    )
    snapshots = sorted(
        LinkSnapshot.objects.filter(status="ok").values_list("urlkey", "digest", "links")
    )
    return captures, snapshots


def wipe_archive_data() -> None:
    Capture.objects.all().delete()
    LinkSnapshot.objects.all().delete()
    Estimate.objects.all().delete()
    Site.objects.update(import_status=Site.ImportStatus.PENDING)


def load_seeds(demo: DemoArchive) -> None:
    call_command(
        "import_seeds",
        str(demo.seeds_path),
        stdout=open(os.devnull, "w"),
        stderr=open(os.devnull, "w"),
    )


@pytest.fixture()
def warc_fingerprint(demo: DemoArchive) -> tuple[list[Any], list[Any]]:
    load_seeds(demo)
    call_command("import_warc", str(demo.warc_path), stdout=open(os.devnull, "w"))
    print_ = fingerprint()
    wipe_archive_data()
    return print_


def test_warc_import_gives_the_true_update_flags(demo: DemoArchive) -> None:
    load_seeds(demo)
    call_command("import_warc", str(demo.warc_path), stdout=open(os.devnull, "w"))
    truth = json.loads(demo.truth_path.read_text())
    stored = {
        (c.urlkey, format_timestamp(c.timestamp)): c
        for c in Capture.objects.filter(is_observation=True)
    }
    checked = 0
    for site in truth["sites"]:
        for capture in site["captures"]:
            if not capture["observation"] or capture["depth"] > 2:
                continue
            ours = stored[(capture["urlkey"], capture["timestamp"])]
            updated = ours.page_index > 0 and ours.link_floor < 0
            assert updated == capture["update"], capture
            checked += ours.depth == 0
    assert checked > 100
    assert Estimate.objects.filter(level="homepage", rate__isnull=False).count() >= 10


def test_cdx_file_plus_pywb_mementos_equals_the_warc_import(
    demo: DemoArchive, pywb: PywbServer, settings: Any, redis_url: str, warc_fingerprint: Any
) -> None:
    use_archive(settings, cdx_url=pywb.cdx_url, wayback_url=f"{pywb.base_url}/demo", dialect="pywb")
    out = open(os.devnull, "w")
    call_command("import_cdx", str(demo.cdx_path), stdout=out, stderr=out)
    assert fingerprint() == warc_fingerprint
    # Fetches never exceed the distinct (urlkey, digest) pairs of the observations.
    fetched = [e for e in pywb_access_log(pywb) if "id_/" in e]
    distinct = Capture.objects.filter(kind="observation").values("urlkey", "digest").distinct()
    assert 0 < len(fetched) <= distinct.count()


def pywb_access_log(pywb: PywbServer) -> list[str]:
    return [line for line in pywb.log_text().splitlines() if "GET /demo/" in line]


def test_import_archive_through_pywb_cdx_api_equals_the_warc_import(
    demo: DemoArchive, pywb: PywbServer, settings: Any, redis_url: str, warc_fingerprint: Any
) -> None:
    use_archive(settings, cdx_url=pywb.cdx_url, wayback_url=f"{pywb.base_url}/demo", dialect="pywb")
    call_command("import_archive", stdout=open(os.devnull, "w"))
    assert fingerprint() == warc_fingerprint
    assert set(Site.objects.values_list("import_status", flat=True)) == {"done"}


def worker_environment(base: dict[str, str], archive: dict[str, str]) -> dict[str, str]:
    return {**base, **archive}


def burst_import_worker(env: dict[str, str]) -> None:
    """A real worker process that empties the import queue, then stops; it must succeed."""
    run = subprocess.run(
        [sys.executable, str(ROOT / "manage.py"), "rqworker", "import", "--burst"],
        env=env,
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert run.returncode == 0, run.stderr[-3000:]


def site_job_metas(record: JobRecord, redis_url: str) -> list[dict[str, Any]]:
    """The RQ meta of each site's job of an import, as its worker left it."""
    import redis

    from jobs.services import JobQueue

    queue = JobQueue("import", connection=redis.Redis.from_url(redis_url))
    return [
        queue.fetch_job(f"{record.rq_id}-{pk}").meta
        for pk in Site.objects.values_list("pk", flat=True)
    ]


def test_internet_archive_dialect_with_faults_through_a_real_worker(
    demo: DemoArchive, settings: Any, worker_env: dict[str, str], warc_fingerprint: Any
) -> None:
    rows, bodies = ia_rows_and_bodies(demo)
    blocked = Site.objects.order_by("pk").last()
    assert blocked is not None
    with IAArchive(rows, bodies) as archive:
        archive.state.faults.extend([(429, "1"), (503, None), (502, None)])
        archive.state.blocked_prefixes.add(blocked.seed_url.split("://", 1)[1].rstrip("/"))
        env = worker_environment(
            worker_env,
            use_archive(
                settings, cdx_url=archive.cdx_url, wayback_url=archive.wayback_url, dialect="ia"
            ),
        )
        env["HACS_CDX_RATE_PER_MINUTE"] = "600"  # ten CDX requests a second at most
        record = enqueue_import(list(Site.objects.values_list("pk", flat=True)))
        burst_import_worker(env)
        cdx_times = [e.at for e in archive.state.log if e.path.endswith("/cdx")]
        statuses = [e.status for e in archive.state.log]
    assert statuses[:3] == [429, 503, 502]
    gaps = [b - a for a, b in zip(cdx_times, cdx_times[1:], strict=False)]
    assert min(gaps) >= 0.1 - 0.02  # the shared limit spaced the CDX requests
    record.refresh_from_db()
    # One site is blocked by the archive: the job finished with that failure.
    assert record.status == JobRecord.Status.PARTIAL
    assert record.done == record.total == Site.objects.count()
    # Each site's job published the batch's progress in its RQ meta.
    metas = site_job_metas(record, worker_env["REDIS_URL"])
    assert sorted(m["done"] for m in metas) == list(range(1, record.total + 1))
    assert max(m.get("captures added", 0) for m in metas) > 0
    assert [f["item"] for f in record.failures] == [blocked.seed_url]
    blocked.refresh_from_db()
    assert blocked.import_status == "failed" and "Blocked Site Error" in blocked.import_error
    captures, snapshots = fingerprint()
    expected = [c for c in warc_fingerprint[0] if c[0] != blocked.canonical_key]
    assert captures == expected
    assert set(snapshots) <= set(warc_fingerprint[1])


def test_a_worker_killed_mid_import_is_rerun_to_the_same_data(
    demo: DemoArchive,
    pywb: PywbServer,
    settings: Any,
    worker_env: dict[str, str],
    warc_fingerprint: Any,
) -> None:
    archive = use_archive(
        settings, cdx_url=pywb.cdx_url, wayback_url=f"{pywb.base_url}/demo", dialect="pywb"
    )
    slow = worker_environment(worker_env, {**archive, "HACS_MEMENTO_RATE_PER_MINUTE": "900"})
    site_ids = list(Site.objects.values_list("pk", flat=True))
    enqueue_import(site_ids)
    worker = subprocess.Popen(
        [sys.executable, str(ROOT / "manage.py"), "rqworker", "import", "--burst"],
        env=slow,
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and LinkSnapshot.objects.count() < 40:
        time.sleep(0.2)
    os.killpg(worker.pid, signal.SIGKILL)
    worker.wait()
    partial = fingerprint()
    assert 0 < len(partial[1]) < len(warc_fingerprint[1])  # really killed mid-import

    fast = worker_environment(worker_env, archive)
    enqueue_import(site_ids)
    burst_import_worker(fast)
    assert fingerprint() == warc_fingerprint
    assert set(Site.objects.values_list("import_status", flat=True)) == {"done"}


def test_enqueued_warc_import_through_a_worker_equals_the_foreground_one(
    demo: DemoArchive, run_worker: Any, warc_fingerprint: Any
) -> None:
    out = io.StringIO()
    call_command("import_warc", str(demo.warc_path), "--enqueue", stdout=out)
    assert "queued as job" in out.getvalue()
    run_worker("import")
    assert fingerprint() == warc_fingerprint
    record = JobRecord.objects.exclude(queue="terminal").get(kind="import")
    assert record.status == JobRecord.Status.FINISHED and record.done == record.total == 1
    assert record.counts["captures"] == len(warc_fingerprint[0])


def test_enqueueing_a_missing_file_is_refused_with_its_name(demo: DemoArchive) -> None:
    from django.core.management.base import CommandError

    with pytest.raises(CommandError, match="No such file: /nonexistent.warc.gz"):
        call_command("import_warc", "/nonexistent.warc.gz", "--enqueue")


def test_a_warc_import_that_matched_no_seed_is_not_shown_as_a_success(demo: DemoArchive) -> None:
    """Without the seed list, nothing in the WARC belongs to a stored site: the job ends
    "Failed", saying so and what to do, not a green "Finished"."""
    out = io.StringIO()
    call_command("import_warc", str(demo.warc_path), stdout=out, stderr=io.StringIO())
    assert not Capture.objects.exists()
    record = JobRecord.objects.get(kind="import")
    assert record.status == JobRecord.Status.FAILED
    [(item, reason)] = [
        tuple(f) if isinstance(f, list) else (f["item"], f["reason"]) for f in record.failures
    ]
    assert item == demo.warc_path.name
    assert "no capture in it belongs to a seed site HACS holds" in reason
    assert "add the seed list first" in reason
