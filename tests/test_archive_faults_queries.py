"""The queries an import and a refresh ask of an archive: host and exact queries beside prefix
ones, and an incremental refresh that asks only for what is new.

The archive is ``testbed.ia_server``, a real HTTP server on 127.0.0.1 in a thread. Nothing here
reaches the Internet, and nothing is timed: tests count requests.
"""

from __future__ import annotations

import os
from typing import Any

import pytest
import redis
from django.core.management import call_command

from archive.models import Capture, LinkSnapshot
from archive.wayback import ArchiveError
from testbed.ia_server import Fault, IAArchive, Row
from tests.factories import make_site
from tests.test_archive_faults import SEED, archive_client, client_for, ia_parse, rows, use_archive

pytestmark = [pytest.mark.integration, pytest.mark.django_db]

# --- Host and exact queries ---------------------------------------------------------------------


def host_rows() -> tuple[list[Row], list[Row]]:
    """Captures of example.edu (two seeds' pages and a homepage) and of other hosts."""
    home = [
        Row("edu,example)/~a", f"2017{m:02d}01000000", SEED, "text/html", "200", f"H{m}", "100")
        for m in (1, 3)
    ]
    own = rows(3) + rows(2, key="edu,example)/~b", url="http://example.edu/~b") + home
    others = rows(2, key="edu,other)/~a", url="http://other.edu/~a") + rows(
        2, key="edu,example,cs)/~c", url="http://cs.example.edu/~c"
    )
    return own, others


def test_a_host_query_asks_for_every_page_of_its_host_on_every_page(redis_url: str) -> None:
    own, others = host_rows()
    with IAArchive(own + others) as archive:
        client = archive_client(archive, redis_url, page_size=4)
        pages = client.cdx_pages("example.edu", ia_parse, match_type="host")
        keys = [key for page in pages for key in page]
        queries = [e.query for e in archive.requests_to("cdx")]
    assert keys == sorted(r.urlkey for r in own)  # neither other hosts nor subdomains
    assert [q["matchType"] for q in queries] == ["host", "host"]
    assert "resumeKey" in queries[1]


def test_an_exact_query_asks_for_one_page_and_finds_what_host_queries_miss(redis_url: str) -> None:
    """The recall gap (``exact_only``): the Internet Archive leaves some captures out of prefix
    and host answers that an exact query returns."""
    own, others = host_rows()
    missed = Row("edu,example)/~a", "20170501000000", SEED, "text/html", "200", "H5", "100")
    with IAArchive(own + others, exact_only=[missed]) as archive:
        client = archive_client(archive, redis_url)
        exact = [k for p in client.cdx_pages(SEED, ia_parse, match_type="exact") for k in p]
        host = [k for p in client.cdx_pages("example.edu", ia_parse, match_type="host") for k in p]
        queries = [e.query for e in archive.requests_to("cdx")]
    assert exact == ["edu,example)/~a"] * 3
    assert host.count("edu,example)/~a") == 2
    assert [q["matchType"] for q in queries] == ["exact", "host"]


def test_messages_about_a_host_or_exact_query_name_its_match_type(redis_url: str) -> None:
    with IAArchive(rows(3)) as archive:
        archive.state.faults.extend([Fault("status", status=503, on="cdx")] * 2)
        archive.state.blocked_prefixes.add("example.edu/~b")
        client = archive_client(archive, redis_url, retries=1)
        with pytest.raises(ArchiveError) as failed:
            list(client.cdx_pages("example.edu", ia_parse, match_type="host"))
        blocked = client.cdx_pages("http://example.edu/~b/", ia_parse, match_type="exact")
        with pytest.raises(
            ArchiveError,
            match=r"^The archive blocks http://example.edu/~b/ "
            r"\(matchType=exact\): ",
        ):
            list(blocked)
    assert str(failed.value) == (
        f"The CDX query for example.edu (matchType=host) at 127.0.0.1:{archive.port} failed "
        "after 2 attempts (HTTP 503); try again later with import_archive --failed."
    )


def test_an_unknown_match_type_is_refused_before_anything_is_sent(redis_url: str) -> None:
    with IAArchive(rows(3)) as archive:
        client = archive_client(archive, redis_url)
        message = "match_type must be one of prefix, host, exact, not 'domain'"
        with pytest.raises(ValueError, match=message):
            client.cdx_pages("example.edu", ia_parse, match_type="domain")
        with pytest.raises(ValueError, match=message):
            client.cdx_query_params("example.edu", match_type="domain")
        assert archive.state.log == []


def test_pywb_is_sent_the_same_match_types(redis_url: str) -> None:
    """pywb's CDX server reads ``matchType`` as the Internet Archive's does (its CDX server
    API: exact, prefix, host, domain)."""
    client = client_for(
        "http://127.0.0.1:1/cdx", "http://127.0.0.1:1/web", redis_url, dialect="pywb"
    )
    assert client.cdx_query_params("example.edu", match_type="host", since="2017") == {
        "url": "example.edu",
        "matchType": "host",
        "output": "json",
        "allowFuzzy": "0",
        "from": "2017",
    }
    assert client.cdx_query_params(SEED, match_type="exact")["matchType"] == "exact"


# --- Incremental refresh: only what is new ------------------------------------------------------


def page_body(*links: str) -> bytes:
    return (
        "<html><body>" + "".join(f'<a href="{u}">x</a>' for u in links) + "</body></html>"
    ).encode()


def test_a_refresh_asks_from_the_newest_capture_less_the_indexing_lag(
    settings: Any, redis_url: str
) -> None:
    site = make_site(seed_url=SEED, canonical_key="edu,example)/~a")
    first = [
        Row("edu,example)/~a", f"2017{m:02d}01000000", SEED, "text/html", "200", f"D{m}", "100")
        for m in (1, 3, 5)
    ]
    bodies = {
        (r.timestamp, SEED): (page_body(f"http://x.org/{r.digest}"), "text/html") for r in first
    }
    with IAArchive(first, bodies) as archive:
        use_archive(settings, archive.cdx_url, archive.wayback_url, HACS_CDX_INDEX_LAG_DAYS=10.0)
        quiet = open(os.devnull, "w")
        call_command("import_archive", stdout=quiet)
        assert len(archive.requests_to("web")) == 3
        archive.state.log.clear()

        call_command("import_archive", stdout=quiet)  # nothing new
        cdx = archive.requests_to("cdx")
        assert [e.query.get("from") for e in cdx] == ["20170421000000"]  # May 1st less 10 days
        assert archive.requests_to("web") == []
        archive.state.log.clear()

        late = Row("edu,example)/~a", "20170425000000", SEED, "text/html", "200", "D9", "100")
        archive.state.rows.append(late)  # indexed late, within the lag
        archive.state.rows.sort(key=lambda r: (r.urlkey, r.timestamp))
        archive.state.bodies[(late.timestamp, SEED)] = (page_body("http://x.org/late"), "text/html")
        call_command("import_archive", stdout=quiet)
        assert [e.path for e in archive.requests_to("web")] == [f"/web/{late.timestamp}id_/{SEED}"]
        archive.state.log.clear()

        call_command("import_archive", "--full", stdout=quiet)
        assert ["from" in e.query for e in archive.requests_to("cdx")] == [False]
        assert archive.requests_to("web") == []
    assert Capture.objects.filter(site=site, is_observation=True).count() == 4
    assert LinkSnapshot.objects.count() == 4


def test_the_nightly_refresh_brings_the_archives_sites_up_to_date_and_leaves_the_others(
    settings: Any, redis_url: str, django_capture_on_commit_callbacks: Any
) -> None:
    """The cron's nightly refresh queues an incremental import of the sites read from the
    configured archive, run here by a real RQ worker; a site known only from files is never
    sent to the archive, and a second refresh waits for the first."""
    from datetime import UTC, datetime

    from rq import SimpleWorker
    from rq.serializers import JSONSerializer

    from jobs.models import JobRecord
    from jobs.services import JobQueue, QueuedJob
    from operations.jobs import nightly_refresh
    from tests.factories import add_observations

    site = make_site(seed_url=SEED, canonical_key="edu,example)/~a")
    from_files = make_site(seed_url="http://example.edu/~b/", canonical_key="edu,example)/~b")
    add_observations(from_files, [datetime(2017, 1, 1, tzinfo=UTC)], updates=[False])
    first = [
        Row("edu,example)/~a", f"2017{m:02d}01000000", SEED, "text/html", "200", f"D{m}", "100")
        for m in (1, 3)
    ]
    bodies = {
        (r.timestamp, SEED): (page_body(f"http://x.org/{r.digest}"), "text/html") for r in first
    }
    with IAArchive(first, bodies) as archive:
        use_archive(settings, archive.cdx_url, archive.wayback_url, HACS_CDX_INDEX_LAG_DAYS=10.0)
        call_command("import_archive", "--site", SEED, stdout=open(os.devnull, "w"))
        archive.state.log.clear()
        new = Row("edu,example)/~a", "20170601000000", SEED, "text/html", "200", "D6", "100")
        archive.state.rows.append(new)
        archive.state.bodies[(new.timestamp, SEED)] = (page_body("http://x.org/new"), "text/html")

        with django_capture_on_commit_callbacks(execute=True):
            assert nightly_refresh() == 1
        record = JobRecord.objects.get(label__startswith="Nightly refresh")
        host = archive.cdx_url.split("://", 1)[1].split("/", 1)[0]
        assert record.label == f"Nightly refresh of 1 of 1 site from {host}" and record.total == 1
        with django_capture_on_commit_callbacks(execute=True):
            assert nightly_refresh() == 0  # the first one is still queued
        connection = redis.Redis.from_url(redis_url)
        queue = JobQueue("import", connection=connection)
        while queue.count:  # the refresh, then the job of each site it fans out (on commit)
            with django_capture_on_commit_callbacks(execute=True):
                SimpleWorker(
                    [queue], connection=connection, serializer=JSONSerializer, job_class=QueuedJob
                ).work(burst=True)

        prefixes = {e.query.get("url") for e in archive.requests_to("cdx")}
        assert prefixes == {"example.edu/~a"}
        assert [e.path for e in archive.requests_to("web")] == [f"/web/{new.timestamp}id_/{SEED}"]
    record.refresh_from_db()
    assert record.status == JobRecord.Status.FINISHED
    assert record.counts["CDX requests planned"] == 1
    assert record.counts["CDX budget"] == 2_400_000  # 40 minutes at the 60,000 a minute set here
    assert site.captures.filter(is_observation=True).count() == 3
    assert from_files.captures.count() == 1
