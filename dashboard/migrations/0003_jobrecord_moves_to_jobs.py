from django.db import migrations


class Migration(migrations.Migration):
    """The job records now belong to the jobs app (its migration 0001 takes over the table)."""

    dependencies = [("dashboard", "0002_librarians_group"), ("jobs", "0001_initial")]

    operations = [
        migrations.SeparateDatabaseAndState(
            database_operations=[], state_operations=[migrations.DeleteModel(name="JobRecord")]
        )
    ]
