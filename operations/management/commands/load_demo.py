"""Give a new installation real-looking data: a synthetic scholarly archive, imported."""

import io
from datetime import timedelta
from pathlib import Path

from django.conf import settings
from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandParser

from hacs import defaults
from hacs_demo import LOCAL_WARC_NAME, build_demo_archive
from hacs_site.clock import today
from operations.management.commands._progress import files_written_progress
from operations.management.commands.make_demo_archive import DEMO_FILES


class Command(BaseCommand):
    help = (
        "Write a small synthetic scholarly web archive (see make_demo_archive) into the var "
        "directory and import its seeds and WARC file, as a new user's first data."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--sites", type=int, default=40)
        parser.add_argument("--seed", type=int, default=0)

    def handle(self, *args: object, **options: object) -> None:
        outdir = Path(settings.VAR_DIR) / "demo"
        # The demo's three years end today, so that "due today" and today's crawl list mean
        # something on a new installation.
        end = today()
        names = (LOCAL_WARC_NAME, *DEMO_FILES[1:])  # DEMO_FILES starts with the WARC file
        written = [(outdir / name, f"Writing {name}") for name in names]
        with files_written_progress(written, "Drawing the sites") as writing:
            archive = build_demo_archive(
                outdir,
                sites=int(options["sites"]),  # type: ignore[call-overload]
                seed=int(options["seed"]),  # type: ignore[call-overload]
                start=end - timedelta(days=defaults.HISTORY_DAYS),
                end=end,
                # Its own name, by which the Site page links its captures to HACS's own replay
                # of the demo archive (/demo-archive/…) rather than to a public archive.
                warc_name=LOCAL_WARC_NAME,
                writing=writing,
            )
        # The demo seed list has a few bad lines on purpose (to show how they are reported on the
        # Upload seeds page); their messages would only alarm a new user here.
        quiet = io.StringIO()
        call_command(
            "import_seeds", str(archive.seeds_path), tag=["demo"], stdout=quiet, stderr=quiet
        )
        call_command("import_warc", str(archive.warc_path), stdout=self.stdout)
        self.stdout.write(
            f"Demo archive in {outdir}: {archive.sites} sites, {archive.captures} captures."
        )
