"""A job's key (what it is the run of), its parent job and its attempts."""

import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [("jobs", "0006_read_back_kind")]

    operations = [
        migrations.AddField(
            model_name="jobrecord",
            name="attempts",
            field=models.PositiveSmallIntegerField(default=1),
        ),
        migrations.AddField(
            model_name="jobrecord",
            name="key",
            field=models.CharField(blank=True, max_length=100, null=True, unique=True),
        ),
        migrations.AddField(
            model_name="jobrecord",
            name="parent",
            field=models.ForeignKey(
                blank=True,
                null=True,
                on_delete=django.db.models.deletion.SET_NULL,
                related_name="children",
                to="jobs.jobrecord",
            ),
        ),
        migrations.AlterField(
            model_name="jobrecord",
            name="kind",
            field=models.CharField(
                choices=[
                    ("health", "Health check"),
                    ("import", "Import"),
                    ("estimation", "Estimate recompute"),
                    ("evaluation", "Evaluation"),
                    ("learning", "Learning a scheduler"),
                    ("crawl_list", "Crawl list"),
                    ("hand_off", "Hand-off"),
                    ("read_back", "Crawl read-back"),
                    ("daily", "Daily run"),
                ],
                max_length=12,
            ),
        ),
    ]
