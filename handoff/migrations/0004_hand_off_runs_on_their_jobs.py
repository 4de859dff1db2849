"""A hand-off run's outcome is its job's (jobs 0008 moved it there)."""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [("handoff", "0003_crawl_read_back"), ("jobs", "0008_runs_onto_jobs")]

    operations = [
        # A default, so that going back can add the column again (jobs 0008 then fills it).
        migrations.AlterField(
            model_name="handoffrun",
            name="status",
            field=models.CharField(
                choices=[("sent", "Sent"), ("empty", "Nothing to send"), ("failed", "Failed")],
                default="failed",
                max_length=10,
            ),
        ),
        migrations.RemoveField(model_name="handoffrun", name="status"),
    ]
