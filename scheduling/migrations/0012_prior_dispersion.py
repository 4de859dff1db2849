from django.db import migrations, models


def drop_priors(apps, schema_editor):  # type: ignore[no-untyped-def]
    # The priors now carry φ, the dispersion of their evidence, which widens the intervals at
    # both levels. Dropped, each is refitted (with φ) by the next estimate that needs it.
    apps.get_model("scheduling", "RatePrior").objects.all().delete()


class Migration(migrations.Migration):
    dependencies = [("scheduling", "0011_entry_updates")]

    operations = [
        migrations.AddField(
            model_name="rateprior",
            name="dispersion",
            field=models.FloatField(
                default=1.0,
                help_text="φ: how much more the evidence varies than independent changes would "
                "(changed intervals at homepage level, new links at website level)",
            ),
        ),
        migrations.RunPython(drop_priors, migrations.RunPython.noop),
    ]
