"""Captures dated in the future that an earlier import stored are removed by a migration, and
the site's next import gives the estimates of an import that never held them."""

from __future__ import annotations

import os
from datetime import UTC, datetime
from typing import Any

import pytest
from django.core.management import call_command
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from archive.captures import ScopeIndex, captures_store
from archive.models import Capture, Site
from archive.pipeline import FetchRetry
from hacs.formats.cdx import CdxRecord, RowLimits
from operations.refresh import archive_client, sites_refresh
from scheduling.models import Estimate
from testbed.ia_server import IAArchive, Row
from tests.factories import ESTIMATE_FIGURES, make_site

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.integration]

SEED = "http://example.edu/~a/"
KEY = "edu,example)/~a"


def page(*links: str) -> bytes:
    return ("<html>" + "".join(f'<a href="{u}">x</a>' for u in links) + "</html>").encode()


def estimates(site: Site) -> list[Any]:
    return sorted(Estimate.objects.filter(site=site).values_list(*ESTIMATE_FIGURES))


def migrate(target: list[tuple[str, str | None]]) -> None:
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(target)


def test_a_capture_dated_2099_is_removed_and_the_site_reimported_without_it(
    settings: Any, redis_url: str
) -> None:
    site = make_site(seed_url=SEED, canonical_key=KEY)
    other = make_site(import_status="done")
    months = (1, 2, 4, 5, 7, 9)
    rows = [
        Row(KEY, f"2017{m:02d}01000000", SEED, "text/html", "200", f"D{m}", "100") for m in months
    ]
    bodies = {
        (r.timestamp, SEED): (page(*(f"http://x.org/{n}" for n in range(m))), "text/html")
        for r, m in zip(rows, months, strict=True)
    }
    with IAArchive(rows, bodies) as archive:
        settings.HACS_CDX_URL = archive.cdx_url
        settings.HACS_WAYBACK_URL = archive.wayback_url
        settings.HACS_CDX_RATE_PER_MINUTE = 60000.0
        settings.HACS_MEMENTO_RATE_PER_MINUTE = 60000.0
        quiet = open(os.devnull, "w")
        call_command("import_archive", "--site", SEED, stdout=quiet)
        clean = estimates(site)
        assert clean

        # An import from before capture times were checked stored an observation dated 2099,
        # with links of its own: it counts, and stretches the site's intervals.
        future = CdxRecord(
            KEY, datetime(2099, 1, 1, tzinfo=UTC), SEED, "text/html", 200, "FUTURE", 100
        )
        unchecked = RowLimits(latest=datetime(2100, 1, 1, tzinfo=UTC))
        added = captures_store(
            records=[future], source="cdx:old.cdx", index=ScopeIndex.for_sites(), limits=unchecked
        )
        assert added.added == 1
        archive.state.bodies[("20990101000000", SEED)] = (page("http://x.org/late"), "text/html")
        sites_refresh(FetchRetry([site.pk]), client=archive_client())
        assert estimates(site) != clean

        migrate([("archive", "0001_initial")])
        migrate(MigrationExecutor(connection).loader.graph.leaf_nodes())
        assert not Capture.objects.filter(timestamp__year=2099).exists()
        assert Capture.objects.filter(site=site).count() == len(rows)
        site.refresh_from_db()
        assert site.import_status == "failed"
        assert site.import_error.startswith("1 capture dated after ")
        assert "was removed" in site.import_error
        assert site.import_error.endswith("run import_archive --failed, or import its files again.")
        assert Site.objects.get(pk=other.pk).import_status == "done"  # held none: untouched

        call_command("import_archive", "--failed", stdout=quiet)
    site.refresh_from_db()
    assert site.import_status == "done"
    assert estimates(site) == clean


def test_a_clock_set_back_removes_nothing_imported_while_it_was_right() -> None:
    """Job records show HACS ran in 2031; a machine whose clock now says otherwise must not
    take a 2030 capture for a future one."""
    from jobs.models import JobRecord
    from jobs.services import job_record_create
    from tests.factories import make_capture

    site = make_site(seed_url=SEED, canonical_key=KEY)
    kept = make_capture(site, timestamp=datetime(2030, 6, 1, tzinfo=UTC), digest="LATE")
    gone = make_capture(site, timestamp=datetime(2099, 1, 1, tzinfo=UTC), digest="FUTURE")
    record = job_record_create(kind=JobRecord.Kind.IMPORT, label="an import in 2031")
    JobRecord.objects.filter(pk=record.pk).update(created_at=datetime(2031, 1, 1, tzinfo=UTC))

    migrate([("archive", "0001_initial")])
    migrate(MigrationExecutor(connection).loader.graph.leaf_nodes())
    assert Capture.objects.filter(pk=kept.pk).exists()
    assert not Capture.objects.filter(pk=gone.pk).exists()
