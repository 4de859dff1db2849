"""Stored sites get the key a seed list gives them now (``hacs.formats.canon.seed_key``).

Sites used to be keyed by their homepage's urlkey, with the path lower-cased and only
``index.html``, ``index.htm``, ``index.php`` and ``default.htm(l)`` counting as the directory.
Now the path keeps its case (``/~Alice/`` and ``/~alice/`` are two sites) and a few more
directory page names (``home.html``, ``index.shtml``, ...) are the directory itself. Without
this, uploading a stored seed again could add it a second time under its new key.

No two stored sites are merged: where two would get the same key, the one already holding it,
or else the oldest, takes it and the others keep the key they have
(``hacs.formats.seeds.seed_keys_refreshed``). Going back leaves the keys as they are.
"""

from typing import Any

from django.db import migrations, transaction


def refresh_seed_keys(apps: Any, schema_editor: Any) -> None:
    from hacs.formats.seeds import seed_keys_refreshed

    site_model = apps.get_model("archive", "Site")
    stored = list(site_model.objects.values_list("pk", "canonical_key", "seed_url"))
    changes = seed_keys_refreshed(stored)
    if not changes:
        return
    with transaction.atomic():
        # Two steps, so that a site taking a key another site has just given up never meets
        # the unique constraint half-way. A temporary key has a space; no real key has.
        for pk in changes:
            site_model.objects.filter(pk=pk).update(canonical_key=f"{pk} (new key pending)")
        for pk, key in changes.items():
            site_model.objects.filter(pk=pk).update(canonical_key=key)


class Migration(migrations.Migration):
    dependencies = [("archive", "0002_remove_future_captures")]

    operations = [migrations.RunPython(refresh_seed_keys, migrations.RunPython.noop)]
