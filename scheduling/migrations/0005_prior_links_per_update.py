from django.db import migrations, models


def drop_website_prior(apps, schema_editor):  # type: ignore[no-untyped-def]
    # The website prior was fitted on merged timelines; now it is a page's prior, read from new
    # links (hacs.website). Dropped, it is refitted by the next estimate that needs it.
    apps.get_model("scheduling", "RatePrior").objects.filter(level="website").delete()


class Migration(migrations.Migration):
    dependencies = [("scheduling", "0004_posterior_evidence")]

    operations = [
        migrations.AddField(
            model_name="rateprior",
            name="links_per_update",
            field=models.FloatField(
                default=1.0, help_text="κ: new links per update (website level; hacs.website)"
            ),
        ),
        migrations.RunPython(drop_website_prior, migrations.RunPython.noop),
    ]
