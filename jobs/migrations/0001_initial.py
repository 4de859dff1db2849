"""Job records move from the dashboard app to this one, with their rows.

The table and its rows stay where they are (``dashboard_jobrecord``) while the model changes
apps in Django's state only; the next migration renames the table. Existing content types and
permissions follow the model.
"""

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models


def move_content_type(apps, schema_editor):  # type: ignore[no-untyped-def]
    content_type = apps.get_model("contenttypes", "ContentType")
    if not content_type.objects.filter(app_label="jobs", model="jobrecord").exists():
        content_type.objects.filter(app_label="dashboard", model="jobrecord").update(
            app_label="jobs"
        )


class Migration(migrations.Migration):
    initial = True

    dependencies = [
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
        ("contenttypes", "0002_remove_content_type_name"),
        ("dashboard", "0002_librarians_group"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            database_operations=[],
            state_operations=[
                migrations.CreateModel(
                    name="JobRecord",
                    fields=[
                        (
                            "id",
                            models.BigAutoField(
                                auto_created=True,
                                primary_key=True,
                                serialize=False,
                                verbose_name="ID",
                            ),
                        ),
                        (
                            "rq_id",
                            models.CharField(max_length=64, unique=True, verbose_name="RQ job id"),
                        ),
                        (
                            "kind",
                            models.CharField(
                                choices=[
                                    ("health", "Health check"),
                                    ("import", "Import"),
                                    ("estimation", "Estimate recompute"),
                                    ("evaluation", "Evaluation"),
                                    ("crawl_list", "Crawl list"),
                                ],
                                max_length=12,
                            ),
                        ),
                        ("label", models.CharField(blank=True, max_length=300)),
                        ("queue", models.CharField(max_length=40)),
                        (
                            "status",
                            models.CharField(
                                choices=[
                                    ("queued", "Queued"),
                                    ("running", "Running"),
                                    ("finished", "Finished"),
                                    ("failed", "Failed"),
                                ],
                                default="queued",
                                max_length=10,
                            ),
                        ),
                        ("done", models.PositiveIntegerField(default=0)),
                        ("total", models.PositiveIntegerField(default=0)),
                        ("counts", models.JSONField(blank=True, default=dict)),
                        ("failures", models.JSONField(blank=True, default=list)),
                        ("error", models.TextField(blank=True)),
                        ("worker", models.CharField(blank=True, max_length=200)),
                        ("created_at", models.DateTimeField(auto_now_add=True)),
                        ("started_at", models.DateTimeField(blank=True, null=True)),
                        ("finished_at", models.DateTimeField(blank=True, null=True)),
                        (
                            "created_by",
                            models.ForeignKey(
                                blank=True,
                                null=True,
                                on_delete=django.db.models.deletion.SET_NULL,
                                to=settings.AUTH_USER_MODEL,
                            ),
                        ),
                    ],
                    options={
                        "db_table": "dashboard_jobrecord",
                        "ordering": ["-created_at"],
                        "indexes": [
                            models.Index(
                                fields=["status", "kind"], name="dashboard_j_status_6b5c29_idx"
                            )
                        ],
                    },
                )
            ],
        ),
        migrations.RunPython(move_content_type, migrations.RunPython.noop),
    ]
