from django.db import migrations, models


def drop_homepage_priors(apps, schema_editor):  # type: ignore[no-untyped-def]
    # The homepage prior now carries ρ, how often a site's rate starts afresh, which every
    # homepage posterior reads. Dropped, it is refitted (with ρ) by the next estimate that
    # needs it; the website prior is unchanged.
    apps.get_model("scheduling", "RatePrior").objects.filter(level="homepage").delete()


class Migration(migrations.Migration):
    dependencies = [("scheduling", "0015_list_round_robin_expected")]

    operations = [
        migrations.AddField(
            model_name="rateprior",
            name="reset_rate",
            field=models.FloatField(
                default=0.0,
                help_text="ρ per day: how often a site's rate starts afresh from the prior "
                "(homepage level; hacs.bayes.fit_reset_rate)",
            ),
        ),
        migrations.RunPython(drop_homepage_priors, migrations.RunPython.noop),
    ]
