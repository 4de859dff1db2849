"""Captures dated after tomorrow, stored before imports checked capture times, are removed.

Imports refuse such rows now (``archive.captures.capture_limits``). This applies the same bound,
``hacs.formats.cdx.RowLimits.until_tomorrow``, once to what was stored before, so that every
reader of captures (estimates, crawl lists, evaluations, the refresh's ``from``) sees only
possible ones and no reader needs a rule of its own. A site's remaining captures keep their
update data: a capture after tomorrow was the newest of its page, and no earlier observation's
data depends on a later one. Its estimates still count the removed ones until they are computed
again, so the site is marked failed with a sentence saying so, and ``import_archive --failed``
or "Retry failed sites" brings it up to date.

A machine whose clock runs behind would see real captures as "after tomorrow", so the bound is
tomorrow after the latest moment HACS has recorded doing anything (its job records), whichever
is later: a clock set back never removes what was imported while it was right.
"""

from typing import Any

from django.db import migrations
from django.db.models import Count, Max


def remove_future_captures(apps: Any, schema_editor: Any) -> None:
    from hacs.formats.cdx import RowLimits

    capture_model = apps.get_model("archive", "Capture")
    site_model = apps.get_model("archive", "Site")
    job_model = apps.get_model("jobs", "JobRecord")
    latest = RowLimits.until_tomorrow().latest
    recorded = job_model.objects.aggregate(newest=Max("created_at"))["newest"]
    if recorded is not None:
        latest = max(latest, RowLimits.until_tomorrow(recorded).latest)
    future = capture_model.objects.filter(timestamp__gt=latest)
    per_site = dict(
        future.order_by().values("site_id").annotate(n=Count("id")).values_list("site_id", "n")
    )
    if not per_site:
        return
    future.delete()
    for site_id, count in per_site.items():
        one = count == 1
        site_model.objects.filter(pk=site_id).update(
            import_status="failed",
            import_error=(
                f"{'1 capture' if one else f'{count:,} captures'} dated after "
                f"{latest:%Y-%m-%d} {'was' if one else 'were'} removed (an import from before "
                "capture times were checked stored them); the site's estimates count "
                f"{'it' if one else 'them'} until they are computed again: run import_archive "
                "--failed, or import its files again."
            ),
        )


class Migration(migrations.Migration):
    dependencies = [("archive", "0001_initial"), ("jobs", "0003_lease_and_outcomes")]

    operations = [migrations.RunPython(remove_future_captures, migrations.RunPython.noop)]
