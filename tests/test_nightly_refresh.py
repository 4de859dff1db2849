"""The nightly refresh as shipped: a size question the archive cannot answer is asked once, seeds
the archive had not captured are asked again on a back-off, a first import falls due over the
window, not on one night, and a host's queries read from the lag its archive really shows.

The archive is ``testbed.ia_server``'s fake Internet Archive on 127.0.0.1; nothing is
timed: tests count the requests the server logged, and move the clock by handing
``refresh_choice`` its ``now``.
"""

from __future__ import annotations

import logging
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from django.utils import timezone

from archive.models import ArchiveCheck, Capture, QueryMemory, Site
from archive.plan import refresh_plan
from archive.wayback import SIZE_ANSWER_BYTES, ArchiveConfig
from hacs.formats.cdx import format_timestamp
from jobs.models import JobRecord
from operations.refresh import refresh_choice, refresh_policy, sites_from_archive
from testbed.ia_server import IAArchive, Row
from tests.factories import make_site
from tests.support.ia_archive import add_rows, key_of, run, use

pytestmark = [pytest.mark.integration, pytest.mark.django_db]


def capture(host: str, path: str, moment: datetime, digest: str) -> Row:
    stamp = format_timestamp(moment)
    return Row(key_of(host, path), stamp, f"http://{host}{path}", "text/html", "200", digest, "500")


def body_for(timestamp: str, url: str) -> tuple[bytes, str]:
    return f'<html><a href="{url}/v{timestamp}">x</a></html>'.encode(), "text/html"


def seed(host: str, person: str) -> Site:
    return make_site(
        seed_url=f"http://{host}/~{person}/", canonical_key=key_of(host, f"/~{person}")
    )


def weekly(host: str, person: str, now: datetime, weeks: range) -> list[Row]:
    """The person's homepage and two pages, captured every week (``weeks`` ago, a day more)."""
    rows = []
    for week in weeks:
        moment = now - timedelta(days=7 * week + 1)
        for page in ("", "/pubs", "/cv"):
            rows.append(capture(host, f"/~{person}{page}", moment, f"{host}{person}{page}{week}"))
    return rows


def sizes(archive: IAArchive) -> int:
    return sum("showNumPages" in e.query for e in archive.requests_to("cdx"))


HOSTS = [f"cs.uni{n}.edu" for n in range(12)]
PEOPLE = ("ann", "bob", "cyd", "dee", "eve")
HTML_ERROR = (
    b"<!DOCTYPE html><html><head><title>Error</title></head><body><h1>502 Bad Gateway</h1>"
    + b"<p>The upstream server did not answer in time.</p>" * 40
    + b"</body></html>"
)


@pytest.mark.parametrize(
    ("server", "words"),
    [({"paginated": False}, "CDX rows"), ({"size_page": HTML_ERROR}, "an HTML page")],
    ids=["without the pagination API", "an HTML error page served with 200"],
)
def test_an_archive_that_cannot_count_pages_is_asked_one_size_and_each_group_at_most_twice(
    settings: Any, redis_url: str, caplog: Any, server: dict[str, Any], words: str
) -> None:
    """61 seeds on 12 hosts: a refresh asks the size question once, understands that the
    server does not count pages, asks every group without its size, and ends with every site
    brought up to date; the log names the real limit of a size answer."""
    from archive.pipeline import FromArchive, sites_import
    from operations.refresh import archive_client

    now = timezone.now()
    sites = [seed(host, person) for host in HOSTS for person in PEOPLE]
    sites.append(seed("solo.org", "zed"))
    rows = [r for host in HOSTS for p in PEOPLE for r in weekly(host, p, now, range(2, 12))]
    rows += weekly("solo.org", "zed", now, range(2, 12))
    with IAArchive(rows, body_for=body_for, **server) as archive:
        use(settings, archive)
        run()  # the first import: one query a seed, no size asked
        assert len(archive.requests_to("cdx")) == len(sites) and sizes(archive) == 0
        add_rows(
            archive,
            [r for host in HOSTS for p in PEOPLE for r in weekly(host, p, now, range(0, 1))],
        )
        for nightly in (False, True):
            archive.state.log.clear()
            with caplog.at_level(logging.INFO, logger="archive.archive_import"):
                if nightly:  # the nightly job's import, within its budget
                    sites_import(
                        FromArchive([s.pk for s in sites], defer_splits=True),
                        client=archive_client(),
                    )
                else:
                    run()
            cdx = archive.requests_to("cdx")
            assert sizes(archive) == 1  # asked once; the run remembered the answer
            groups = [e for e in cdx if "showNumPages" not in e.query]
            assert len(groups) == len(HOSTS) + 1  # every group and the lone seed, once
            assert len(cdx) <= 2 * len(HOSTS) + 1  # at most two requests a group
    text = caplog.text
    assert (
        f"more than {SIZE_ANSWER_BYTES:,} bytes ({words}), where a number of pages of at most"
        in text
    )
    assert "16,777,216" not in text
    assert Site.objects.exclude(import_status=Site.ImportStatus.DONE).count() == 0
    newest = format_timestamp(now - timedelta(days=1))
    stamps = {format_timestamp(t) for t in Capture.objects.values_list("timestamp", flat=True)}
    assert newest in stamps  # last night's captures are in
    record = JobRecord.objects.filter(queue="terminal").latest("pk")
    assert record.counts["group sizes the archive did not count"] == 1


def test_seeds_the_archive_had_not_captured_are_asked_again_a_week_after_their_import(
    settings: Any, redis_url: str, logged_in_client: Any
) -> None:
    from django.urls import reverse

    from archive.pipeline import FromArchive, sites_import
    from operations.refresh import archive_client

    now = timezone.now()
    ann, bob = seed("alpha.edu", "ann"), seed("beta.edu", "bob")
    late = seed("gamma.edu", "cyd")  # not captured yet
    rows = weekly("alpha.edu", "ann", now, range(1, 20)) + weekly(
        "beta.edu", "bob", now, range(1, 5)
    )
    with IAArchive(rows, body_for=body_for) as archive:
        use(settings, archive)
        run()
        config = ArchiveConfig.from_settings()
        check = ArchiveCheck.objects.get(site=late)
        assert check.first_checked_at == check.checked_at and check.newest_seen is None
        ids = sites_from_archive(config)
        assert ids == sorted([ann.pk, bob.pk, late.pk])  # asked at its import: refreshed too

        def choice(days: float) -> Any:
            return refresh_choice(
                ids, config, budget=2, policy=refresh_policy(), now=now + timedelta(days=days)
            )

        early = choice(2)
        assert early.unarchived_sites == 1 and early.unarchived_asked == 0
        assert late.pk not in early.checked_sites and early.due_sites == 0
        week = choice(7.01)  # its first deadline falls 3.5 to 7 days after its import
        assert late.pk in week.checked_sites and week.unarchived_asked == 1
        assert week.due_sites == 1 and week.due_requests == 1

        page = logged_in_client.get(reverse("site-detail", args=[late.pk])).content.decode()
        assert "no capture of it there yet; asked again by" in page
        table = logged_in_client.get(reverse("site-list")).content.decode()
        assert table.count('data-field="archive-asked"') == 3

        # The archive captures it: the next ask finds it, and it is a site like the others.
        add_rows(archive, weekly("gamma.edu", "cyd", now, range(0, 1)))
        sites_import(FromArchive([late.pk], defer_splits=True), client=archive_client())
    check.refresh_from_db()
    assert check.checked_at > check.first_checked_at and check.newest_seen is not None
    assert late.captures.count() == 3
    page = logged_in_client.get(reverse("site-detail", args=[late.pk])).content.decode()
    assert "no capture of it there yet" not in page


def test_a_collection_imported_in_one_day_falls_due_over_the_second_half_of_the_window(
    settings: Any, redis_url: str
) -> None:
    now = timezone.now()
    sites = [seed(f"host{n}.org", "ann") for n in range(30)]
    rows = [r for n in range(30) for r in weekly(f"host{n}.org", "ann", now, range(1, 4))]
    with IAArchive(rows, body_for=body_for) as archive:
        use(settings, archive)
        run()
    config = ArchiveConfig.from_settings()
    ids = [s.pk for s in sites]

    def due(days: float) -> int:
        when = now + timedelta(days=days)
        choice = refresh_choice(ids, config, budget=1, policy=refresh_policy(), now=when)
        return choice.due_sites

    assert due(14.9) == 0
    assert 0 < due(22.5) < 30
    assert due(30.1) == 30


def test_late_captures_teach_a_host_its_lag_and_its_group_reads_days_not_weeks(
    settings: Any, redis_url: str
) -> None:
    """A capture found that was made before the newest one the last answer held was indexed
    late: the margin it needed is counted for its host. With enough of them, a group asked
    from the longest lag (``HACS_CDX_INDEX_LAG_DAYS``) within 30 days asks from the measured
    one; once a month it asks wide again."""
    now = timezone.now()
    hosts = ("cs.alpha.edu", "math.beta.edu")
    sites = [seed(host, p) for host in hosts for p in PEOPLE[:3]]
    rows = [r for host in hosts for p in PEOPLE[:3] for r in weekly(host, p, now, range(0, 8))]
    newest = now - timedelta(days=1)
    with IAArchive(rows, body_for=body_for) as archive:
        use(settings, archive)
        run()  # the first import
        run()  # the first refresh: both groups asked wide, from the newest row less 10 days
        assert QueryMemory.objects.filter(kind="group", wide_at__isnull=False).count() == 2
        # 120 captures made two days before the newest row of that answer, indexed since.
        late = [
            capture(
                "cs.alpha.edu", f"/~ann/p{i}", newest - timedelta(days=2, minutes=i), f"late{i}"
            )
            for i in range(120)
        ]
        add_rows(archive, late)
        archive.state.log.clear()
        run()
        asked = [e.query for e in archive.requests_to("cdx") if "showNumPages" not in e.query]
        assert {q["from"] for q in asked} == {format_timestamp(newest - timedelta(days=10))}
    memory = QueryMemory.objects.get(kind="host", key="edu,alpha,cs")
    assert memory.late_days[2] == 120 and sum(memory.late_days) == 120
    record = JobRecord.objects.filter(queue="terminal").latest("pk")
    assert record.counts["captures the archive indexed late"] == 120
    assert record.counts["CDX rows read"] >= 120
    config = ArchiveConfig.from_settings()
    ids = [s.pk for s in sites]
    # 99 % needed under 3 days: a margin of 4 days (a day of slack), for both hosts (the
    # other host has no evidence of its own: every host's together).
    plan = refresh_plan(ids, config.source, config.index_lag_days)
    assert {(q.since, q.wide) for q in plan} == {
        (format_timestamp(newest - timedelta(days=4)), False)
    }
    QueryMemory.objects.filter(kind="group", key="edu,alpha,cs)/~").update(
        wide_at=timezone.now() - timedelta(days=31)
    )
    plan = {q.key: q for q in refresh_plan(ids, config.source, config.index_lag_days)}
    assert plan["edu,alpha,cs)/~"].wide
    assert plan["edu,alpha,cs)/~"].since == format_timestamp(newest - timedelta(days=10))
    assert not plan["edu,beta,math)/~"].wide
    assert datetime.now(UTC) > newest  # (the clock was not moved)


def four_checked_seeds(config: ArchiveConfig, now: datetime) -> tuple[Site, Site, Site, Site]:
    """A lone seed captured ten times in the last year and checked 10 days ago, two seeds of one
    host captured 30 times each and checked 2 days ago, and a seed the archive had not captured,
    asked at its import 8 days ago; each also has a capture from a file, not this archive's."""
    from tests.factories import make_capture

    lone, b, c = seed("alpha.org", "ann"), seed("beta.edu", "bob"), seed("beta.edu", "cyd")
    new = seed("gamma.edu", "dee")
    for site, count in ((lone, 10), (b, 30), (c, 30)):
        make_capture(site, timestamp=now - timedelta(days=400), source=config.source)  # opens T
        for n in range(count):
            make_capture(site, timestamp=now - timedelta(days=360 - n), source=config.source)
        make_capture(site, timestamp=now - timedelta(days=5), source="file:old.cdx", digest="F")
    checks = {lone: (10, 100), b: (2, 60), c: (2, 60), new: (8, 8)}
    for site, (last, first) in checks.items():
        ArchiveCheck.objects.create(
            site=site,
            source=config.source,
            checked_at=now - timedelta(days=last),
            first_checked_at=now - timedelta(days=first),
        )
    return lone, b, c, new


def test_the_cron_reads_each_sites_rate_checks_stake_and_cost_from_what_hacs_holds(
    settings: Any,
) -> None:
    """``refresh_choice`` (the nightly job's) on hand-made rows: a lone seed captured ten
    times in the last year and checked 10 days ago, two seeds of one host captured 30 times
    each and checked 2 days ago (a group never sized: two requests), and a seed the archive
    had not captured, asked at its import 8 days ago (due: a week, spread)."""
    settings.HACS_CDX_URL = "https://web.archive.org/cdx/search/cdx"
    settings.HACS_CDX_DIALECT = "ia"
    settings.HACS_REFRESH_AUDIT_SHARE = 0.0
    config = ArchiveConfig.from_settings()
    now = datetime(2024, 6, 1, tzinfo=UTC)
    lone, b, c, new = four_checked_seeds(config, now)
    ids = [lone.pk, b.pk, c.pk, new.pk]

    def choose(stakes: dict[int, float]) -> Any:
        return refresh_choice(
            ids, config, budget=3, policy=refresh_policy(), stakes=stakes, now=now
        )

    # Rates: (n + 1) / (365 + 365) a day (the file's capture is not this archive's). Worth: the
    # lone seed 11/730 × 10 × 5 = 0.75 a request; the group 2 × 31/730 × 2 × 1 = 0.17 for two.
    plain = choose({})
    assert [q.site_ids for q in plain.queries] == [(new.pk,), (lone.pk,)]
    assert (plain.due_sites, plain.unarchived_asked, plain.due_requests) == (1, 1, 1)
    assert plain.left_out == {b.pk: "budget", c.pk: "budget"}
    unknown = 1 / 365 * 8  # the prior's rate for a seed without captures, 8 days
    assert plain.expected_total == pytest.approx(11 / 730 * 10 + 2 * 31 / 730 * 2 + unknown)
    # On tomorrow's list at p = 1, the group's capture-days count 1 + 10 times:
    # 2 × 31/730 × 2 × 1 × 11 = 1.87 for two requests, above the lone seed.
    listed = choose({b.pk: 1.0, c.pk: 1.0})
    assert [q.site_ids for q in listed.queries] == [(new.pk,), (b.pk, c.pk)]
    assert listed.requests == 3 and listed.left_out == {lone.pk: "budget"}
    # Sampled by tonight's recall audit, the group costs its exact query too: it no longer fits.
    settings.HACS_REFRESH_AUDIT_SHARE = 1.0
    audited = choose({b.pk: 1.0, c.pk: 1.0})
    assert [q.site_ids for q in audited.queries] == [(new.pk,), (lone.pk,)]
