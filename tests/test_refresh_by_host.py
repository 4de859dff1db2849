"""A refresh asks the archive once per host: rows go to the seeds whose scopes hold them, other
people's pages are counted and never stored, the answer's newest capture anchors the next
``from``, groups too big are split, a recall audit catches what grouped answers miss, and the
result equals a full per-seed re-import.

The archive is ``testbed.ia_server``'s fake Internet Archive on 127.0.0.1; nothing is
timed: tests count the requests the server logged.
"""

from __future__ import annotations

import os
from datetime import UTC, timedelta
from typing import Any

import pytest
from django.core.management import call_command

from archive.models import ArchiveCheck, Capture, LinkSnapshot, QueryMemory, Site
from hacs.progress import Progress
from operations.jobs import import_chunks
from scheduling.cells import when_text
from scheduling.models import Estimate
from testbed.ia_server import IAArchive, Row
from tests.factories import make_site

pytestmark = [pytest.mark.integration, pytest.mark.django_db]

HOSTS = ("cs.alpha.edu", "math.beta.edu", "gamma.org")
PEOPLE = ("ann", "bob", "cyd", "dee")


def key_of(host: str, path: str = "") -> str:
    return ",".join(reversed(host.split("."))) + ")" + path


def page_body(*links: str) -> bytes:
    return (
        "<html><body>" + "".join(f'<a href="{u}">x</a>' for u in links) + "</body></html>"
    ).encode()


def capture(host: str, path: str, stamp: str, digest: str) -> Row:
    return Row(key_of(host, path), stamp, f"http://{host}{path}", "text/html", "200", digest, "500")


def history(months: range, *, year: int = 2017) -> list[Row]:
    """Every person's homepage and one subpage on every host each month, with new links in some
    months, plus other people's pages (``/~zed``, ``/news``) the seeds never cover."""
    rows = []
    for host in HOSTS:
        for month in months:
            stamp = f"{year}{month:02d}15000000"
            for person in PEOPLE:
                version = month // 2  # new content every other month
                rows.append(capture(host, f"/~{person}", stamp, f"H-{host}-{person}-{version}"))
                rows.append(capture(host, f"/~{person}/pubs", stamp, f"P-{host}-{person}-{month}"))
            rows.append(capture(host, "/~zed", stamp, f"Z-{host}-{month}"))
            rows.append(capture(host, "/news", stamp, f"N-{host}-{month}"))
    return rows


def body_for(timestamp: str, url: str) -> tuple[bytes, str]:
    digest_links = (
        [f"{url}/item-{timestamp[:6]}"] if "pubs" in url else [f"{url}/v{timestamp[4:6]}"]
    )
    return page_body(*digest_links, "http://other.org/"), "text/html"


def seeds() -> list[Site]:
    return [
        make_site(seed_url=f"http://{host}/~{person}/", canonical_key=key_of(host, f"/~{person}"))
        for host in HOSTS
        for person in PEOPLE
    ]


def use(settings: Any, archive: IAArchive, **extra: Any) -> None:
    settings.HACS_CDX_URL = archive.cdx_url
    settings.HACS_WAYBACK_URL = archive.wayback_url
    settings.HACS_CDX_DIALECT = "ia"
    settings.HACS_CDX_RATE_PER_MINUTE = 60000.0
    settings.HACS_MEMENTO_RATE_PER_MINUTE = 60000.0
    settings.HACS_HTTP_BACKOFF_BASE = 0.01
    settings.HACS_CDX_INDEX_LAG_DAYS = 10.0
    settings.HACS_REFRESH_AUDIT_SHARE = 0.0
    for name, value in extra.items():
        setattr(settings, name, value)


def asked(archive: IAArchive) -> list[Any]:
    """The CDX queries the archive answered with rows (not the sizes asked before groups)."""
    return [e for e in archive.requests_to("cdx") if "showNumPages" not in e.query]


def sized(archive: IAArchive) -> list[str]:
    return [e.query["url"] for e in archive.requests_to("cdx") if "showNumPages" in e.query]


def run(*args: str) -> None:
    quiet = open(os.devnull, "w")
    call_command("import_archive", *args, stdout=quiet, stderr=quiet)


def add_rows(archive: IAArchive, rows: list[Row]) -> None:
    archive.state.rows.extend(rows)
    archive.state.rows.sort(key=lambda r: (r.urlkey, r.timestamp))


def fingerprint() -> tuple[list[Any], list[Any]]:
    captures = sorted(
        Capture.objects.values_list(
            "site__canonical_key",
            "urlkey",
            "timestamp",
            "kind",
            "page_index",
            "link_floor",
            "new_links",
        )
    )
    rows = Estimate.objects.values_list(
        "site__canonical_key",
        "level",
        "method",
        "rate",
        "tau",
        "observations",
        "updates",
        "posterior_shape",
        "posterior_rate",
    )
    # The collection's prior sums over sites in the order they were finished: 12 digits.
    estimates = sorted(
        tuple(float(f"{v:.12g}") if isinstance(v, float) else v for v in row) for row in rows
    )
    return captures, estimates


def test_a_refresh_asks_once_a_host_stores_only_seeds_pages_and_equals_a_full_reimport(
    settings: Any, redis_url: str
) -> None:
    sites = seeds()
    with IAArchive(history(range(1, 7)), body_for=body_for) as archive:
        use(settings, archive)
        run()  # the first import: each seed's whole history, one query each
        assert len(archive.requests_to("cdx")) == len(sites)
        first_import = Capture.objects.count()
        archive.state.log.clear()

        add_rows(archive, history(range(7, 10)))
        run()  # the refresh
        cdx = asked(archive)
        assert len(cdx) == len(HOSTS)  # one query a host
        assert sorted(sized(archive)) == sorted(f"{host}/~" for host in HOSTS)  # sized first
        assert {e.query["matchType"] for e in cdx} == {"prefix"}
        assert sorted(e.query["url"] for e in cdx) == sorted(f"{host}/~" for host in HOSTS)
        assert {e.query["from"] for e in cdx} == {"20170605000000"}  # June 15th less 10 days
        assert Capture.objects.count() > first_import

    # Other people's pages were read (the host's /~zed, June to September) and never stored.
    from jobs.models import JobRecord

    refresh = JobRecord.objects.filter(queue="terminal").latest("pk")
    assert refresh.counts["other people's pages dropped"] == len(HOSTS) * 4
    assert not Capture.objects.filter(urlkey__contains="~zed").exists()
    assert not Capture.objects.filter(urlkey__contains="/news").exists()
    for site in sites:
        keys = set(site.captures.values_list("urlkey", flat=True))
        assert keys and all(k.startswith(site.canonical_key) for k in keys)
    refreshed = fingerprint()
    assert ArchiveCheck.objects.count() == len(sites)
    assert {str(c.newest_seen.date()) for c in ArchiveCheck.objects.all()} == {"2017-09-15"}

    # A full re-import of the same archive from nothing gives the same captures and estimates.
    Capture.objects.all().delete()
    LinkSnapshot.objects.all().delete()
    Estimate.objects.all().delete()
    ArchiveCheck.objects.all().delete()
    with IAArchive(history(range(1, 10)), body_for=body_for) as archive:
        use(settings, archive)
        run("--full")
    assert fingerprint() == refreshed


def test_a_refresh_with_nothing_new_fetches_nothing_and_a_new_capture_is_found(
    settings: Any, redis_url: str
) -> None:
    seeds()
    with IAArchive(history(range(1, 5)), body_for=body_for) as archive:
        use(settings, archive)
        run()
        archive.state.log.clear()
        run()  # the first refresh: each host group is sized, then asked
        assert len(asked(archive)) == len(HOSTS) and len(sized(archive)) == len(HOSTS)
        assert archive.requests_to("web") == []
        archive.state.log.clear()

        # Indexed late: dated before the newest capture the last answer held, within the lag.
        late = capture("math.beta.edu", "/~bob", "20170410000000", "late-bob")
        add_rows(archive, [late])
        run()
        assert sized(archive) == []  # sized last time
        assert [e.path for e in archive.requests_to("web")] == [
            f"/web/{late.timestamp}id_/{late.original}"
        ]
    bob = Site.objects.get(canonical_key=key_of("math.beta.edu", "/~bob"))
    assert bob.captures.filter(digest="late-bob", is_observation=True).count() == 1
    assert Site.objects.exclude(import_status=Site.ImportStatus.DONE).count() == 0


def test_a_group_too_big_is_split_on_the_next_refresh(settings: Any, redis_url: str) -> None:
    seeds()
    with IAArchive(history(range(1, 5)), body_for=body_for) as archive:
        use(settings, archive, HACS_REFRESH_GROUP_MAX_ROWS=10)
        run()
        add_rows(archive, history(range(5, 8)))
        archive.state.log.clear()
        run()  # each host's answer holds more than 10 rows: remembered as too big
        assert len(asked(archive)) == len(HOSTS)
        too_big = QueryMemory.objects.filter(kind="group", too_big=True)
        assert sorted(too_big.values_list("key", flat=True)) == sorted(
            key_of(host, "/~") for host in HOSTS
        )
        archive.state.log.clear()
        run()  # split: one query a seed now (the next segment parts are single seeds)
        urls = sorted(e.query["url"] for e in asked(archive))
        assert len(urls) == len(HOSTS) * len(PEOPLE) and sized(archive) == []
        assert all(e.query["from"] >= "20170705" for e in asked(archive))


def test_the_recall_audit_finds_what_grouped_answers_miss_and_the_host_goes_per_seed(
    settings: Any, redis_url: str
) -> None:
    seeds()
    # Captures of every gamma.org homepage that only exact queries return (the recall gap).
    hidden = [capture("gamma.org", f"/~{p}", "20170620000000", f"hidden-{p}") for p in PEOPLE]
    with IAArchive(history(range(1, 6)), body_for=body_for, exact_only=hidden) as archive:
        use(settings, archive, HACS_REFRESH_AUDIT_SHARE=1.0)  # audit every group
        run()
        archive.state.log.clear()
        add_rows(archive, history(range(6, 8)))
        run()
        cdx = asked(archive)
        exact = [e for e in cdx if e.query.get("matchType") == "exact"]
        assert len(cdx) == 2 * len(HOSTS) and len(exact) == len(HOSTS)
        gamma = QueryMemory.objects.get(kind="host", key=key_of("gamma.org").rstrip(")"))
        assert gamma.misses == 1 and gamma.per_seed
        others = QueryMemory.objects.filter(kind="host").exclude(
            key=key_of("gamma.org").rstrip(")")
        )
        assert others.count() == len(HOSTS) - 1 and not others.filter(per_seed=True).exists()
        audited = next(e.query["url"] for e in exact if "gamma.org" in e.query["url"])
        archive.state.log.clear()
        run()
        queries = [(e.query["url"], e.query["matchType"]) for e in asked(archive)]
        gamma_queries = [q for q in queries if q[0].startswith("gamma.org")]
        assert sorted(gamma_queries) == sorted(
            (f"gamma.org/~{person}", "prefix") for person in PEOPLE
        )
        assert sum(1 for q in queries if q[1] == "prefix") == len(PEOPLE) + len(HOSTS) - 1
    # The exact answer's rows are stored with the rest; the homepages not audited still lack
    # theirs, as per-seed prefix answers do.
    stored = set(Capture.objects.filter(digest__startswith="hidden-").values_list("url", flat=True))
    assert stored == {audited.rstrip("/")}


def test_an_import_fans_out_one_job_per_new_site_and_one_per_host_group(
    settings: Any, redis_url: str
) -> None:
    sites = seeds()
    lonely = make_site(seed_url="http://solo.net/", canonical_key="net,solo)/")
    with IAArchive(history(range(1, 4)), body_for=body_for) as archive:
        use(settings, archive)
        chunks = import_chunks([s.pk for s in [*sites, lonely]])
        assert sorted(chunks) == sorted([s.pk] for s in [*sites, lonely])  # all new: one each
        run()
        chunks = import_chunks([s.pk for s in [*sites, lonely]])
    by_host = {
        host: sorted(s.pk for s in sites if s.seed_url.startswith(f"http://{host}/"))
        for host in HOSTS
    }
    # solo.net holds no capture yet: its whole history is asked again, with the other hosts of
    # a single seed (here none), not in a job of its own as at its first import.
    assert sorted(sorted(c) for c in chunks) == sorted([*by_host.values(), [lonely.pk]])


def test_the_nightly_refresh_spends_its_budget_where_captures_are_likely_and_says_who_waited(
    settings: Any, redis_url: str, django_capture_on_commit_callbacks: Any, logged_in_client: Any
) -> None:
    """One group a night: the host whose seeds the archive captures most often and that waited
    longest goes first; the Jobs page's counts say how many waited; each site's page says
    when the archive was last asked about it."""
    from django.urls import reverse
    from django.utils import timezone

    from jobs.models import JobRecord
    from operations.jobs import nightly_refresh

    sites = seeds()
    rows = history(range(1, 7))
    with IAArchive(rows + _weekly_beta_captures(), body_for=body_for) as archive:
        # Three requests: one kept for pages beyond the estimates (operations.jobs.PAGE_SLACK),
        # two for one group, sized first.
        use(settings, archive, HACS_REFRESH_CDX_BUDGET=3, HACS_REFRESH_MAX_AGE_DAYS=3650.0)
        site = sites[0]
        page = logged_in_client.get(reverse("site-detail", args=[site.pk])).content.decode()
        assert "Archive checked" in page and "not yet by the nightly refresh" in page
        run()
        # Checked alike a day ago: the capture rate decides.
        ArchiveCheck.objects.update(checked_at=timezone.now() - timedelta(days=1))
        add_rows(archive, history(range(7, 8)))
        archive.state.log.clear()
        with django_capture_on_commit_callbacks(execute=True):
            assert nightly_refresh() == len(PEOPLE)
        _work_the_import_queue(redis_url, django_capture_on_commit_callbacks)
        assert [e.query["url"] for e in asked(archive)] == ["math.beta.edu/~"]
    record = JobRecord.objects.get(label__startswith="Nightly refresh")
    assert record.label.startswith(f"Nightly refresh of 4 of {len(sites)} sites from ")
    assert record.status == JobRecord.Status.FINISHED
    assert record.counts["sites waiting for the budget"] == len(sites) - len(PEOPLE)
    assert record.counts["CDX requests planned"] == 2
    fresh = ArchiveCheck.objects.filter(checked_at__gte=timezone.now() - timedelta(hours=1))
    beta = {s.pk for s in sites if "math.beta.edu" in s.seed_url}
    assert set(fresh.values_list("site_id", flat=True)) == beta
    page = logged_in_client.get(reverse("site-detail", args=[site.pk])).content.decode()
    checked = ArchiveCheck.objects.get(site=site).checked_at
    assert f">{when_text(checked)}</time>" in page
    assert "not yet by the nightly refresh" not in page


def _weekly_beta_captures() -> list[Row]:
    """The archive captured math.beta.edu's homepages every week of the last months."""
    from django.utils import timezone

    now = timezone.now()
    weeks = [(now - timedelta(days=7 * w)).strftime("%Y%m%d%H%M%S") for w in range(1, 12)]
    return [
        capture("math.beta.edu", f"/~{p}", stamp, f"busy-{p}-{n}")
        for p in PEOPLE
        for n, stamp in enumerate(weeks)
    ]


def _work_the_import_queue(redis_url: str, callbacks: Any) -> None:
    """A worker empties the import queue, the commit callbacks run as each job commits."""
    import redis
    from rq import SimpleWorker
    from rq.serializers import JSONSerializer

    from jobs.services import JobQueue, QueuedJob

    connection = redis.Redis.from_url(redis_url)
    queue = JobQueue("import", connection=connection)
    while queue.count:
        with callbacks(execute=True):
            SimpleWorker(
                [queue], connection=connection, serializer=JSONSerializer, job_class=QueuedJob
            ).work(burst=True)


def test_a_group_whose_range_the_archive_would_cut_short_is_split_before_it_is_asked(
    settings: Any, redis_url: str
) -> None:
    """The Internet Archive reads at most so many index lines a query and then ends the answer
    without a resume key. A host's range spanning more index blocks than
    ``HACS_REFRESH_GROUP_MAX_BLOCKS`` is split before it is asked, so nothing is cut short."""
    seeds()
    with IAArchive(
        history(range(1, 7)), body_for=body_for, lines_per_block=5, max_lines_read=60
    ) as archive:
        use(settings, archive, HACS_REFRESH_GROUP_MAX_BLOCKS=4)
        run()
        add_rows(archive, history(range(7, 9)))
        archive.state.log.clear()
        run()
        cdx = asked(archive)
        assert not any(e.cut_short for e in cdx)
        assert sorted(sized(archive)) == sorted(f"{host}/~" for host in HOSTS)
        assert len(cdx) == len(HOSTS) * len(PEOPLE)  # each host split down to its seeds
        assert QueryMemory.objects.filter(kind="group", too_big=True).count() == len(HOSTS)
    for site in Site.objects.all():
        assert site.captures.filter(timestamp__month=8, is_observation=True).exists()


def test_contents_come_newest_first_and_a_site_is_estimated_once_its_recent_ones_are_in(
    settings: Any, redis_url: str, monkeypatch: Any
) -> None:
    """An import fetching every content (``HACS_OLDER_HISTORY_LATER`` off) fetches the newest
    first; once those within the daily list's window (``HACS_HISTORY_DAYS``) are in, the site's
    updates and estimates are computed, before its older contents are all in; it is finished
    again when its last content is in. (By default the older ones wait for the history pass:
    ``tests/test_older_history.py``.)"""
    from django.utils import timezone

    import archive.archive_import
    from archive.pipeline import FromArchive, sites_import
    from operations.refresh import archive_client

    monkeypatch.setattr(archive.archive_import, "SAVE_EVERY", 1)  # save each content at once
    site = make_site(seed_url="http://old.edu/~ann/", canonical_key="edu,old)/~ann")
    now = timezone.now()
    recent = [(now - timedelta(days=30 * m)).strftime("%Y%m%d%H%M%S") for m in range(1, 4)]
    old = [(now - timedelta(days=365 * y)).strftime("%Y%m%d%H%M%S") for y in range(5, 9)]
    rows = [capture("old.edu", "/~ann", stamp, f"D{stamp}") for stamp in recent + old]
    seen: list[tuple[list[int], int]] = []

    def after(site_ids: list[int]) -> None:
        seen.append((list(site_ids), LinkSnapshot.objects.count()))

    with IAArchive(rows, body_for=body_for) as archive:
        use(
            settings,
            archive,
            HACS_ARCHIVE_PARALLEL=1,
            HACS_HISTORY_DAYS=365,
            HACS_OLDER_HISTORY_LATER=False,
        )
        sites_import(FromArchive([site.pk]), client=archive_client(), after=after)
        fetched = [e.path.split("/")[2][:14] for e in archive.requests_to("web")]
    assert fetched == sorted(recent + old, reverse=True)  # newest first
    # Estimated once the recent contents are in, before the older ones are (two contents are
    # fetched at a time, and two that arrive together are saved together: the first older one
    # may be in already), then finished with the last.
    (early_ids, early), (last_ids, last) = seen
    assert early_ids == last_ids == [site.pk]
    assert len(recent) <= early < len(recent) + len(old) == last
    site.refresh_from_db()
    assert site.import_status == Site.ImportStatus.DONE


def test_within_the_nightly_budget_a_group_found_too_big_waits_for_the_next_night(
    settings: Any, redis_url: str
) -> None:
    """Sizing splits a group into parts the night's choice never priced: the nightly refresh
    does not ask them tonight; the sites keep their last check, and the next night asks the
    parts."""
    from archive.pipeline import FromArchive, sites_import
    from operations.refresh import archive_client

    sites = seeds()
    ids = [s.pk for s in sites]
    with IAArchive(
        history(range(1, 7)), body_for=body_for, lines_per_block=5, max_lines_read=60
    ) as archive:
        use(settings, archive, HACS_REFRESH_GROUP_MAX_BLOCKS=4)
        run()
        checks = dict(ArchiveCheck.objects.values_list("site_id", "checked_at"))
        archive.state.log.clear()
        told: list[Progress] = []
        sites_import(
            FromArchive(ids, defer_splits=True), client=archive_client(), report=told.append
        )
        assert asked(archive) == [] and len(sized(archive)) == len(HOSTS)
        assert dict(ArchiveCheck.objects.values_list("site_id", "checked_at")) == checks
        assert sum(p.counts["sites waiting for a split group"] for p in told) == len(sites)
        assert all(not p.failure for p in told)
        archive.state.log.clear()
        sites_import(FromArchive(ids, defer_splits=True), client=archive_client())
        assert len(asked(archive)) == len(sites) and sized(archive) == []


def test_a_site_known_only_from_files_says_the_archive_is_never_asked_about_it(
    logged_in_client: Any,
) -> None:
    from datetime import datetime

    from django.urls import reverse

    from tests.factories import add_observations

    site = make_site(seed_url="http://files.edu/~ann/", canonical_key="edu,files)/~ann")
    add_observations(site, [datetime(2017, 1, 1, tzinfo=UTC)], updates=[False])
    page = logged_in_client.get(reverse("site-detail", args=[site.pk])).content.decode()
    assert "never: its captures come from files" in page
