"""Upgrading keeps what is stored: job records keep their rows when they move to the jobs app."""

from __future__ import annotations

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor


@pytest.mark.django_db(transaction=True)
def test_job_records_keep_their_rows_and_content_type_when_they_move_apps() -> None:
    executor = MigrationExecutor(connection)
    before = [("dashboard", "0002_librarians_group"), ("jobs", None)]
    executor.migrate(before)
    old_apps = executor.loader.project_state([before[0]]).apps
    old_apps.get_model("dashboard", "JobRecord").objects.create(
        rq_id="yesterday-1", kind="import", label="yesterday's import", queue="import"
    )

    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(executor.loader.graph.leaf_nodes())

    from django.contrib.contenttypes.models import ContentType

    from jobs.models import JobRecord

    assert JobRecord._meta.db_table == "jobs_jobrecord"
    assert list(JobRecord.objects.values_list("label", flat=True)) == ["yesterday's import"]
    assert set(
        ContentType.objects.filter(model="jobrecord").values_list("app_label", flat=True)
    ) <= {"jobs"}
