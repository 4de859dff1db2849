"""Evaluation and learning runs keep their results and their job, which holds their status,
progress, error and timing; the daily runs are the jobs keyed ``daily:<date>`` (jobs 0008 moved
them there)."""

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("jobs", "0008_runs_onto_jobs"),
        ("scheduling", "0016_prior_reset_rate"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.RemoveField(model_name="dailyrun", name="crawl_list"),
        migrations.RemoveField(model_name="dailyrun", name="job"),
        migrations.RemoveIndex(model_name="learnedscorer", name="scheduling__kind_de04a4_idx"),
        migrations.RemoveField(model_name="evaluationrun", name="duration_seconds"),
        migrations.RemoveField(model_name="evaluationrun", name="error"),
        migrations.RemoveField(model_name="evaluationrun", name="finished_at"),
        migrations.RemoveField(model_name="evaluationrun", name="progress"),
        migrations.RemoveField(model_name="evaluationrun", name="status"),
        migrations.RemoveField(model_name="learnedscorer", name="duration_seconds"),
        migrations.RemoveField(model_name="learnedscorer", name="error"),
        migrations.RemoveField(model_name="learnedscorer", name="finished_at"),
        migrations.RemoveField(model_name="learnedscorer", name="progress"),
        migrations.RemoveField(model_name="learnedscorer", name="status"),
        migrations.AlterField(
            model_name="evaluationrun",
            name="job",
            field=models.ForeignKey(
                blank=True,
                help_text="The job running it: its status, progress, error and timing.",
                null=True,
                on_delete=django.db.models.deletion.SET_NULL,
                related_name="+",
                to="jobs.jobrecord",
            ),
        ),
        migrations.AlterField(
            model_name="learnedscorer",
            name="job",
            field=models.ForeignKey(
                blank=True,
                help_text="The job running it: its status, progress, error and timing.",
                null=True,
                on_delete=django.db.models.deletion.SET_NULL,
                related_name="+",
                to="jobs.jobrecord",
            ),
        ),
        migrations.AddIndex(
            model_name="learnedscorer",
            index=models.Index(fields=["kind", "level"], name="scheduling__kind_247201_idx"),
        ),
        migrations.DeleteModel(name="DailyRun"),
    ]
