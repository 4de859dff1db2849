import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [("jobs", "0002_own_table"), ("scheduling", "0002_estimate_tau_days")]

    operations = [
        migrations.AddField(
            model_name="evaluationrun",
            name="job",
            field=models.ForeignKey(
                blank=True,
                help_text="The background job running it, whose record tells when its worker died.",
                null=True,
                on_delete=django.db.models.deletion.SET_NULL,
                related_name="+",
                to="jobs.jobrecord",
            ),
        )
    ]
