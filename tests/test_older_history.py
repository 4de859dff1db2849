"""A first import fetches the contents of each site's window; the older ones wait for the
history pass (issue 26: a paper-scale first import within a day).

An import from the archive reads each seed's whole history from the CDX server but fetches only
the contents of its last ``HACS_HISTORY_DAYS`` of copies, which its estimates and the daily list
read; the older contents are fetched by the history pass (the nightly pass at
``HACS_FETCH_RETRY_CRON``, or ``import_archive --history``), which leaves the sites' import status
alone. Both passes together give the data of one import that fetches everything.
"""

from __future__ import annotations

import os
from datetime import timedelta
from io import StringIO
from typing import Any

import django_rq
import pytest
from django.core.management import call_command
from django.utils import timezone
from rq.job import Job
from rq.serializers import JSONSerializer

from archive.models import ArchiveCheck, Capture, LinkSnapshot, Site
from archive.wayback import ArchiveConfig
from jobs.models import JobRecord
from operations.jobs import daily_fetch_retry, enqueue_history_pass
from operations.refresh import sites_with_older_history
from scheduling.models import Estimate
from testbed.ia_server import Aimed, Fault, IAArchive
from tests.factories import WHEN, make_capture, make_site
from tests.test_refresh_by_host import body_for, capture, fingerprint, use

pytestmark = [pytest.mark.integration, pytest.mark.django_db]

LEFT = "older contents left for the history pass"


def stamp(days_ago: float) -> str:
    return (timezone.now() - timedelta(days=days_ago)).strftime("%Y%m%d%H%M%S")


def quiet(*args: str) -> str:
    """Run ``import_archive`` and return what it printed."""
    said = StringIO()
    call_command("import_archive", *args, stdout=said, stderr=open(os.devnull, "w"))
    return said.getvalue()


def fetched(archive: IAArchive) -> list[str]:
    return [e.path.split("/")[2][:14] for e in archive.requests_to("web")]


def import_again_in_one_pass(settings: Any, archive: IAArchive) -> None:
    """Forget what the archive gave, then import it again fetching every content at once."""
    for model in (Capture, LinkSnapshot, Estimate, ArchiveCheck):
        model.objects.all().delete()
    use(settings, archive, HACS_OLDER_HISTORY_LATER=False)
    archive.state.log.clear()
    quiet()


def test_an_import_fetches_each_sites_window_and_the_history_pass_the_rest(
    settings: Any, redis_url: str, logged_in_client: Any
) -> None:
    site = make_site(seed_url="http://old.edu/~ann/", canonical_key="edu,old)/~ann")
    recent = [stamp(30 * m) for m in range(1, 4)]
    old = [stamp(365 * y) for y in range(5, 9)]
    # A content first captured six years ago and again two months ago: the window needs it.
    kept_first, kept_again = stamp(365 * 6 + 10), stamp(61)
    rows = [capture("old.edu", "/~ann", s, f"D{s}") for s in recent + old]
    rows += [capture("old.edu", "/~ann", s, "KEPT") for s in (kept_first, kept_again)]
    with IAArchive(rows, body_for=body_for) as archive:
        use(settings, archive, HACS_ARCHIVE_PARALLEL=1, HACS_HISTORY_DAYS=365)
        said = quiet()
        first = fetched(archive)
        assert first == sorted([*recent, kept_first], reverse=True)  # newest first
        assert "4 contents of copies older than each site's last 365 days" in said
        record = JobRecord.objects.get()
        assert record.counts[LEFT] == 4
        site.refresh_from_db()
        assert site.import_status == Site.ImportStatus.DONE
        assert Estimate.objects.filter(site=site).exists()
        # The window's observations are numbered, the older ones wait without an index.
        unread = Capture.objects.filter(site=site, is_observation=True, page_index=None)
        assert sorted(unread.values_list("digest", flat=True)) == sorted(f"D{s}" for s in old)
        assert sites_with_older_history() == [site.pk]
        site.refresh_from_db()
        assert site.older_pending == 4
        page = logged_in_client.get(f"/sites/{site.pk}/").content.decode()
        assert "4 contents of copies older than its last 365 days still to fetch" in page
        page = logged_in_client.get("/evaluation/").content.decode()
        assert "The older history of 1 site is still being fetched" in page

        archive.state.log.clear()
        said = quiet("--history")
        assert archive.requests_to("cdx") == []  # contents only
        assert fetched(archive) == sorted(old, reverse=True)
        assert "left for the history pass" not in said
        assert sites_with_older_history() == []
        assert (
            'data-field="older-history"'
            not in logged_in_client.get(f"/sites/{site.pk}/").content.decode()
        )
        page = logged_in_client.get("/evaluation/").content.decode()
        assert 'data-notice="older-history"' not in page
        site.refresh_from_db()
        assert site.older_pending == 0
        assert site.import_status == Site.ImportStatus.DONE
        two_passes = fingerprint()

        # One import fetching every content at once gives the same data.
        import_again_in_one_pass(settings, archive)
        assert sorted(fetched(archive)) == sorted([*recent, kept_first, *old])
    assert fingerprint() == two_passes
    assert two_passes[0] and two_passes[1]


def test_the_history_pass_leaves_a_site_as_it_was_when_a_content_fails(
    settings: Any, redis_url: str
) -> None:
    """A content the history pass cannot fetch is asked again the next night; the site stays
    imported (its list data is whole) rather than failed."""
    from archive.pipeline import FetchRetry
    from operations.refresh import archive_client, sites_refresh

    site = make_site(seed_url="http://old.edu/~bea/", canonical_key="edu,old)/~bea")
    old = [stamp(365 * y) for y in (5, 6)]
    rows = [capture("old.edu", "/~bea", s, f"D{s}") for s in [stamp(20), *old]]
    with IAArchive(rows, body_for=body_for) as archive:
        use(settings, archive, HACS_ARCHIVE_PARALLEL=1, HACS_HISTORY_DAYS=365, HACS_HTTP_RETRIES=0)
        quiet()
        for s in old:  # the archive drops the connection for the older copies
            archive.state.aimed.append(
                Aimed(f"/web/{s}id_/http://old.edu/~bea", Fault("reset", on="web"))
            )
        report = sites_refresh(FetchRetry([site.pk], history=True), client=archive_client())
        assert report.fetches["fetch failed"] == 2
        assert fetched(archive)[1:] == old  # once each after the first pass's one
    site.refresh_from_db()
    assert site.import_status == Site.ImportStatus.DONE
    assert site.import_error == ""
    assert LinkSnapshot.objects.filter(status=LinkSnapshot.Status.FAILED).count() == 2


def test_the_nightly_pass_queues_the_history_pass_only_when_no_import_is_under_way(
    settings: Any, redis_url: str, django_capture_on_commit_callbacks: Any
) -> None:
    source = ArchiveConfig.from_settings().source
    waiting = make_site(import_status=Site.ImportStatus.DONE, older_pending=1)
    make_capture(waiting, source=source, digest="OLD")  # an observation never fetched
    fetched_site = make_site(import_status=Site.ImportStatus.DONE)
    snapshot = LinkSnapshot.objects.create(urlkey=fetched_site.canonical_key, digest="NEW")
    make_capture(fetched_site, source=source, digest="NEW", snapshot=snapshot)
    running = make_site(import_status=Site.ImportStatus.RUNNING, older_pending=3)  # importing
    make_capture(running, source=source, digest="MID")
    from_files = make_site(import_status=Site.ImportStatus.DONE)
    make_capture(from_files, source="file:seeds.cdx", digest="FILE")
    retrying = make_site(import_status=Site.ImportStatus.DONE, older_pending=1)  # retry: all
    failed = LinkSnapshot.objects.create(
        urlkey=retrying.canonical_key, digest="BAD", status=LinkSnapshot.Status.FAILED
    )
    make_capture(retrying, source=source, digest="BAD", snapshot=failed)
    make_capture(retrying, source=source, digest="OLDER", timestamp=WHEN - timedelta(days=900))
    assert sites_with_older_history() == [waiting.pk, retrying.pk]

    under_way = JobRecord.objects.create(kind=JobRecord.Kind.IMPORT, status="running")
    assert enqueue_history_pass() is None
    under_way.status = JobRecord.Status.FINISHED
    under_way.save()

    with django_capture_on_commit_callbacks(execute=True):  # the jobs reach Redis
        assert daily_fetch_retry() == 2
    queued = JobRecord.objects.exclude(pk=under_way.pk)
    history = queued.get(label__startswith="Older history")
    assert history.label.startswith("Older history of 1 site: contents before their last")
    connection = django_rq.get_connection("import")
    job = Job.fetch(history.rq_id, connection=connection, serializer=JSONSerializer)
    assert job.args[-1] == [waiting.pk]
    assert history.total == 1
    retry = queued.exclude(pk=history.pk).get()
    assert retry.label == "retry of failed fetches of 1 site"
    assert enqueue_history_pass() is None  # the pass itself is under way


def test_two_passes_over_several_hosts_give_the_data_of_one_import(
    settings: Any, redis_url: str
) -> None:
    """Twelve seeds on three hosts with subpages, a window of 120 days in a year of monthly
    copies: the import and its history pass store, update for update and estimate for estimate
    at both levels, what one import fetching everything stores."""
    from tests.test_refresh_by_host import history, seeds

    sites = seeds()
    with IAArchive(history(range(1, 13)), body_for=body_for) as archive:
        use(settings, archive, HACS_HISTORY_DAYS=120)
        said = quiet()
        left = JobRecord.objects.get().counts[LEFT]
        assert left > 0 and f"{left} contents of copies older" in said
        assert sorted(sites_with_older_history()) == sorted(s.pk for s in sites)
        first = len(fetched(archive))
        quiet("--history")
        assert len(fetched(archive)) == first + left  # each older content once
        assert sites_with_older_history() == []
        two_passes = fingerprint()
        import_again_in_one_pass(settings, archive)
        assert len(fetched(archive)) == first + left
    assert fingerprint() == two_passes
    levels = {row[1] for row in two_passes[1]}
    assert {"homepage", "website"} <= levels
