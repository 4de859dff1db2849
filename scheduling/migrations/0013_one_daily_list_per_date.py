"""One daily list a date, a learned list's notice, and how much a posterior rests on the
prior (``prior_share``, filled by the next recompute of estimates). ``CrawlList.is_daily`` marks the list the daily job built for its
date. Existing lists keep their source; for each date, the list its daily run recorded, else the
newest list the daily job built, becomes that date's daily list. Lists built by hand stay
experiments, even where an earlier version had the daily job hand one of them off."""

from django.conf import settings
from django.db import migrations, models


def mark_daily_lists(apps, schema_editor):
    CrawlList = apps.get_model("scheduling", "CrawlList")
    DailyRun = apps.get_model("scheduling", "DailyRun")
    chosen = {}
    for crawl_list_id, day in (
        CrawlList.objects.filter(source="daily_job")
        .order_by("date", "created_at", "pk")
        .values_list("pk", "date")
    ):
        chosen[day] = crawl_list_id  # the newest of its date wins
    for day, crawl_list_id in DailyRun.objects.filter(crawl_list__source="daily_job").values_list(
        "date", "crawl_list_id"
    ):
        chosen[day] = crawl_list_id
    CrawlList.objects.filter(pk__in=list(chosen.values())).update(is_daily=True)


class Migration(migrations.Migration):
    dependencies = [
        ("scheduling", "0012_prior_dispersion"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.AddField(
            model_name="crawllist",
            name="is_daily",
            field=models.BooleanField(
                default=False,
                help_text="The daily job's list of its date (one a date).",
                verbose_name="daily list",
            ),
        ),
        migrations.AddField(
            model_name="crawllist",
            name="notice",
            field=models.TextField(
                blank=True,
                help_text="Why a learned list is not in its scheduler's order, if it is not.",
            ),
        ),
        migrations.AddField(
            model_name="estimate",
            name="prior_share",
            field=models.FloatField(blank=True, null=True),
        ),
        migrations.AddField(
            model_name="crawllistentry",
            name="prior_share",
            field=models.FloatField(blank=True, null=True),
        ),
        migrations.RunPython(mark_daily_lists, migrations.RunPython.noop),
        migrations.AddConstraint(
            model_name="crawllist",
            constraint=models.UniqueConstraint(
                condition=models.Q(("is_daily", True)),
                fields=("date",),
                name="one_daily_list_per_date",
            ),
        ),
    ]
