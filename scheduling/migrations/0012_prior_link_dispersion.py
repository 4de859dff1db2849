from django.db import migrations, models


def drop_website_prior(apps, schema_editor):  # type: ignore[no-untyped-def]
    # The website prior was fitted reading new links as a Poisson count; now their dispersion
    # φ widens the evidence (hacs.website). Dropped, it is refitted by the next estimate that
    # needs it.
    apps.get_model("scheduling", "RatePrior").objects.filter(level="website").delete()


class Migration(migrations.Migration):
    dependencies = [
        ("scheduling", "0011_entry_updates"),
    ]

    operations = [
        migrations.AddField(
            model_name="rateprior",
            name="link_dispersion",
            field=models.FloatField(
                default=1.0,
                help_text="φ: how much more new links scatter than updates (hacs.website)",
            ),
        ),
        migrations.RunPython(drop_website_prior, migrations.RunPython.noop),
    ]
