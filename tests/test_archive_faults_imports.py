"""Imports that survive real archives: archives that cannot be reached stop a run with one
sentence, one site's trouble never stops the others, and a storm of faults followed by a retry
pass ends where a clean import does.

Every fault comes from ``testbed.ia_server``, a real HTTP server on 127.0.0.1 in a thread;
the unreachable archive is a closed local port or a ``.invalid`` host name, which never
resolves. Nothing here reaches the Internet, and nothing is timed: tests count requests.
"""

from __future__ import annotations

import io
import json
import os
import random
import socket
from typing import Any

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from archive.models import Capture, LinkSnapshot, Site
from archive.pipeline import FromArchive, FromCdxFiles, sites_import
from archive.wayback import ArchiveError, ArchiveUnreachableError
from hacs_demo import DemoArchive, build_demo_archive
from operations.refresh import sites_with_failed_fetches
from scheduling.models import Estimate
from testbed.ia_server import (
    FIELDS,
    Fault,
    IAArchive,
    Row,
    closed_port,
    first_cdx_page,
    ia_rows_and_bodies,
)
from tests.factories import make_site, stored_captures, stored_estimates
from tests.test_archive_faults import SEED, all_rows, archive_client, client_for, rows, use_archive

pytestmark = [pytest.mark.integration, pytest.mark.django_db]

# --- Unreachable archives: one attempt, one sentence ---------------------------------------------


@pytest.fixture()
def lookups(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Host names the process resolves (the real resolver still answers every lookup)."""
    seen: list[str] = []
    real = socket.getaddrinfo

    def counting(host: Any, *args: Any, **kw: Any) -> Any:
        seen.append(str(host))
        return real(host, *args, **kw)

    monkeypatch.setattr(socket, "getaddrinfo", counting)
    return seen


def test_a_refused_connection_is_not_retried(redis_url: str) -> None:
    port = closed_port()
    base = f"http://127.0.0.1:{port}"
    client = client_for(f"{base}/cdx", f"{base}/web", redis_url, retries=5)
    with pytest.raises(ArchiveUnreachableError) as caught:
        first_cdx_page(client, "example.edu/~a")
    assert str(caught.value) == (
        f"The archive at 127.0.0.1:{port} cannot be reached (the connection was refused): "
        "check the network or HACS_CDX_URL."
    )
    with pytest.raises(ArchiveUnreachableError):
        client.fetch_memento("20170101000000", SEED)  # remembered: no second attempt
    assert client.stats.requests == 1 and client.stats.retries == 0


def test_an_unresolvable_host_is_looked_up_once(redis_url: str, lookups: list[str]) -> None:
    client = client_for("http://archive.invalid/cdx", "http://archive.invalid/web", redis_url)
    with pytest.raises(
        ArchiveUnreachableError,
        match=r"^The archive at archive.invalid cannot be "
        r"reached \(its name does not resolve\): check the network or "
        r"HACS_CDX_URL\.$",
    ):
        first_cdx_page(client, "example.edu/~a")
    assert lookups.count("archive.invalid") == 1 and client.stats.requests == 1


def thirty_sites() -> list[Site]:
    return [
        make_site(
            seed_url=f"http://cs.uni{n}.edu/~user{n}/", canonical_key=f"edu,uni{n},cs)/~user{n}"
        )
        for n in range(30)
    ]


def test_an_unresolvable_archive_ends_a_30_site_import_after_one_lookup(
    settings: Any, redis_url: str, lookups: list[str]
) -> None:
    sites = thirty_sites()
    use_archive(settings, "http://archive.invalid/cdx/search/cdx", "http://archive.invalid/web")
    out, err = io.StringIO(), io.StringIO()
    with pytest.raises(CommandError) as caught:
        call_command("import_archive", stdout=out, stderr=err)
    sentence = (
        "The archive at archive.invalid cannot be reached (its name does not resolve): "
        "check the network or HACS_CDX_URL."
    )
    assert str(caught.value) == f"{sentence} 30 of 30 sites not imported."
    assert lookups.count("archive.invalid") == 1  # one connection attempt for the whole run
    assert "30 sites: 0 imported, 30 failed" in out.getvalue()
    assert err.getvalue() == ""  # one sentence, not thirty
    statuses = set(
        Site.objects.filter(pk__in=[s.pk for s in sites]).values_list(
            "import_status", "import_error"
        )
    )
    assert statuses == {("failed", sentence)}


def test_a_refused_archive_stops_the_pipeline_after_one_attempt(redis_url: str) -> None:
    sites = thirty_sites()
    base = f"http://127.0.0.1:{closed_port()}"
    client = client_for(f"{base}/cdx", f"{base}/web", redis_url)
    told: list[tuple[str, str]] = []
    report = sites_import(
        FromArchive([s.pk for s in sites]),
        client=client,
        report=lambda progress: told.append((progress.item, progress.failure)),
    )
    assert client.stats.requests == 1
    assert "cannot be reached (the connection was refused)" in report.stopped
    assert len(told) == 30 and all(failure == report.stopped for _item, failure in told)
    assert set(report.failed) == {s.pk for s in sites} and report.done == []


def test_an_unreachable_archive_stops_a_cdx_file_import_with_one_sentence(
    settings: Any, redis_url: str, tmp_path: Any
) -> None:
    """The captures of a CDX file are stored; the pages' links cannot be fetched: one
    connection attempt, then the run stops with the sentence import_archive gives."""
    sites, data = three_sites()
    path = tmp_path / "three.cdx.json"
    path.write_text(json.dumps([FIELDS, *(row.as_list() for row in data)]))
    port = closed_port()
    base = f"http://127.0.0.1:{port}"
    use_archive(settings, f"{base}/cdx/search/cdx", f"{base}/web")
    sentence = (
        f"The archive at 127.0.0.1:{port} cannot be reached (the connection was refused): "
        "check the network or HACS_WAYBACK_URL."
    )
    out, err = io.StringIO(), io.StringIO()
    with pytest.raises(CommandError) as caught:
        call_command("import_cdx", str(path), stdout=out, stderr=err)
    assert str(caught.value) == (
        f"{sentence} 3 of 3 sites not imported; run the import again once the archive answers."
    )
    assert err.getvalue() == ""
    assert "9 CDX rows read, 9 captures added" in out.getvalue()
    statuses = set(
        Site.objects.filter(pk__in=[s.pk for s in sites]).values_list(
            "import_status", "import_error"
        )
    )
    assert statuses == {("failed", sentence)}

    client = client_for(f"{base}/cdx", f"{base}/web", redis_url, retries=5)
    report = sites_import(FromCdxFiles([path]), client=client)
    assert client.stats.requests == 1  # one attempt for the whole run, not one per site
    assert report.stopped == sentence and report.done == []
    assert report.failed == {s.pk: sentence for s in sites}


def test_a_rate_limit_without_redis_stops_the_pipeline_with_a_sentence(redis_url: str) -> None:
    """Redis holds the shared rate limit: without it no request may be sent, to any site."""
    sites = thirty_sites()[:3]
    with IAArchive(rows(3)) as archive:
        client = client_for(
            archive.cdx_url, archive.wayback_url, f"redis://127.0.0.1:{closed_port()}/0"
        )
        report = sites_import(FromArchive([s.pk for s in sites]), client=client)
        assert archive.state.log == []
    assert report.stopped.startswith("The shared rate limit cannot reach Redis at 127.0.0.1:")
    assert report.stopped.endswith("start Redis (scripts/run.sh does) or set REDIS_URL.")
    assert set(report.failed.values()) == {report.stopped} and len(report.failed) == 3


# --- Per-site isolation: one site's trouble never stops the others -----------------------------


def three_sites() -> tuple[list[Site], list[Row]]:
    sites = [
        make_site(seed_url=f"http://example.edu/~{name}/", canonical_key=f"edu,example)/~{name}")
        for name in ("a", "b", "c")
    ]
    data = [
        row
        for name in ("a", "b", "c")
        for row in rows(3, key=f"edu,example)/~{name}", url=f"http://example.edu/~{name}")
    ]
    return sites, data


def test_a_site_whose_answer_is_cut_fails_and_the_next_ones_are_imported(redis_url: str) -> None:
    sites, data = three_sites()
    with IAArchive(data) as archive:
        archive.state.faults.append(Fault("cut", on="cdx"))  # the first site's query
        client = archive_client(archive, redis_url, retries=0)
        report = sites_import(FromArchive([s.pk for s in sites]), client=client)
    first, *others = [Site.objects.get(pk=s.pk) for s in sites]
    assert first.import_status == "failed"
    assert "The CDX query for example.edu/~a at 127.0.0.1:" in first.import_error
    assert "the answer was cut off" in first.import_error
    assert [o.import_status for o in others] == ["done", "done"]
    assert report.done == [o.pk for o in others] and list(report.failed) == [first.pk]
    assert Capture.objects.filter(site=first).count() == 0  # nothing half-written


def test_a_resume_key_answered_with_rows_already_sent_ends_the_sites_query_at_once(
    redis_url: str,
) -> None:
    """An archive answering every resume key with the same rows: the second page brings nothing
    new, so the site fails with a sentence after two requests, not after HACS_CDX_MAX_PAGES,
    and the next sites are imported."""
    sites, data = three_sites()
    with IAArchive(data) as archive:
        archive.state.endless_prefixes.add("example.edu/~a")
        client = archive_client(archive, redis_url, max_cdx_pages=50)
        report = sites_import(FromArchive([s.pk for s in sites]), client=client)
        first_site = [e for e in archive.requests_to("cdx") if "~a" in e.query["url"]]
    first, *others = [Site.objects.get(pk=s.pk) for s in sites]
    assert len(first_site) == 2
    assert first.import_status == "failed" and list(report.failed) == [first.pk]
    assert "with no capture it had not sent already" in first.import_error
    assert "import_archive --failed" in first.import_error
    assert [o.import_status for o in others] == ["done", "done"]


def test_an_answer_past_the_deadline_twice_is_not_asked_for_a_third_time(redis_url: str) -> None:
    """A whole-request deadline overrun is one failed attempt, retried once: with five retries
    allowed, a trickling archive is still asked only twice."""
    with IAArchive(rows(40)) as archive:
        archive.state.faults.extend([Fault("trickle", on="cdx", interval=0.2)] * 5)
        client = archive_client(archive, redis_url, retries=5, deadline=0.5, timeout=30.0)
        with pytest.raises(ArchiveError) as query:
            all_rows(client)
        asked = len(archive.requests_to("cdx"))
    assert asked == 2
    assert "failed after 2 attempts (no complete answer within 0.5 s)" in str(query.value)


def test_an_unexpected_error_in_one_site_fails_it_with_a_sentence(redis_url: str) -> None:
    sites, data = three_sites()

    def after(site_ids: list[int]) -> None:
        if sites[1].pk in site_ids:  # sites finished together are then finished one by one
            raise RuntimeError("estimates exploded")

    with IAArchive(data) as archive:
        sites_import(
            FromArchive([s.pk for s in sites]),
            client=archive_client(archive, redis_url),
            after=after,
        )
    statuses = [Site.objects.get(pk=s.pk) for s in sites]
    assert [s.import_status for s in statuses] == ["done", "failed", "done"]
    assert statuses[1].import_error == (
        "Importing http://example.edu/~b/ stopped on an unexpected error (RuntimeError: "
        "estimates exploded); the log has the details: fix the cause, then run "
        "import_archive --failed."
    )


def test_the_command_lists_failed_sites_and_exits_non_zero(settings: Any, redis_url: str) -> None:
    sites, data = three_sites()
    with IAArchive(data) as archive:
        archive.state.blocked_prefixes.add("example.edu/~b")
        use_archive(settings, archive.cdx_url, archive.wayback_url)
        out, err = io.StringIO(), io.StringIO()
        with pytest.raises(
            CommandError,
            match=r"^1 of 3 sites failed; run import_archive "
            r"--failed to try them again\.$",
        ):
            call_command("import_archive", stdout=out, stderr=err)
    assert err.getvalue().startswith("failed: http://example.edu/~b/: The archive blocks")
    assert "3 sites: 2 imported, 1 failed" in out.getvalue()


# --- Done when: a storm of faults, then a retry pass, equals a clean import ---------------------


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> DemoArchive:
    return build_demo_archive(tmp_path_factory.mktemp("faults-demo"), sites=12, seed=3)


def load_seeds(demo: DemoArchive) -> None:
    quiet = open(os.devnull, "w")
    call_command("import_seeds", str(demo.seeds_path), stdout=quiet, stderr=quiet)


def fingerprint() -> tuple[list[Any], list[Any], list[Any]]:
    snapshots = sorted(
        LinkSnapshot.objects.filter(status="ok").values_list("urlkey", "digest", "links")
    )
    # Sites finished in other batches: the same estimates to 12 digits.
    return stored_captures(), snapshots, stored_estimates(digits=12)


def test_a_storm_of_faults_ends_and_a_retry_pass_equals_a_clean_import(
    demo: DemoArchive, settings: Any, redis_url: str
) -> None:
    load_seeds(demo)
    data, bodies = ia_rows_and_bodies(demo)
    quiet = open(os.devnull, "w")
    with IAArchive(data, bodies) as archive:
        # The clean passes get a generous deadline, so that a busy machine cannot fail a site
        # of the reference import; the storm a short one, so that trickles end soon.
        # One request at a time: the storm's faults then fall on the same requests every run.
        use_archive(
            settings,
            archive.cdx_url,
            archive.wayback_url,
            HACS_HTTP_RETRIES=2,
            HACS_HTTP_DEADLINE=60.0,
            HACS_CDX_MAX_PAGES=5,
            HACS_ARCHIVE_PARALLEL=1,
        )
        call_command("import_archive", stdout=quiet)
        clean = fingerprint()
        assert clean[1] and clean[2]
        Capture.objects.all().delete()
        LinkSnapshot.objects.all().delete()
        Estimate.objects.all().delete()
        Site.objects.update(import_status=Site.ImportStatus.PENDING)

        archive.state.storm = random.Random(12)
        archive.state.storm_share = 0.35
        endless = Site.objects.order_by("pk").first()
        assert endless is not None
        archive.state.endless_prefixes.add(endless.seed_url.split("://", 1)[1].rstrip("/"))
        archive.state.log.clear()
        settings.HACS_HTTP_DEADLINE = 1.0
        with pytest.raises(CommandError, match="sites failed"):
            call_command("import_archive", stdout=quiet, stderr=quiet)
        statuses = dict(Site.objects.values_list("pk", "import_status"))
        errors = dict(Site.objects.values_list("pk", "import_error"))
        assert set(statuses.values()) <= {"done", "failed"}
        assert all(errors[pk] for pk, status in statuses.items() if status == "failed")
        # Its second page repeats its first: the query ends there, not at HACS_CDX_MAX_PAGES.
        assert statuses[endless.pk] == "failed"
        assert "with no capture it had not sent already" in errors[endless.pk]
        faults = [e for e in archive.state.log if e.status != 200]
        assert len(faults) >= 5  # the storm really blew
        # Some imported sites still miss pages: the --failed pass takes them too.
        assert set(sites_with_failed_fetches()) - {
            pk for pk, st in statuses.items() if st == "failed"
        }

        archive.state.storm = None
        archive.state.endless_prefixes.clear()
        settings.HACS_HTTP_DEADLINE = 60.0
        call_command("import_archive", "--failed", stdout=quiet)
        assert set(Site.objects.values_list("import_status", flat=True)) == {"done"}
    assert fingerprint() == clean
