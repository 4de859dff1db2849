from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [("jobs", "0001_initial"), ("dashboard", "0003_jobrecord_moves_to_jobs")]

    operations = [
        migrations.AlterModelTable(name="jobrecord", table=None),
        migrations.RenameIndex(
            model_name="jobrecord",
            new_name="jobrecord_status_kind",
            old_name="dashboard_j_status_6b5c29_idx",
        ),
    ]
