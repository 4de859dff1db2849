"""Write a synthetic scholarly web archive with known truth (see ``hacs_demo/``)."""

from __future__ import annotations

from datetime import date
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from hacs_demo import build_demo_archive
from hacs_demo.files import CDX_NAME, SEEDS_NAME, TRUTH_NAME, WARC_NAME
from hacs_site.cli import day
from operations.management.commands._progress import files_written_progress

DEMO_FILES = (WARC_NAME, CDX_NAME, SEEDS_NAME, TRUTH_NAME)  # in the order they are written


class Command(BaseCommand):
    help = (
        "Write demo.warc.gz, demo.cdx, seeds.csv and truth.json of a synthetic scholarly web "
        "archive into OUTDIR."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("outdir", type=Path, help="directory to write into (created)")
        parser.add_argument("--sites", type=int, default=40, help="number of authors (40)")
        parser.add_argument("--seed", type=int, default=0, help="random seed (0)")
        parser.add_argument(
            "--start",
            type=day,
            default=date(2015, 6, 1),
            help="first day of captures, YYYY-MM-DD (2015-06-01)",
        )
        parser.add_argument(
            "--end",
            type=day,
            default=date(2018, 6, 1),
            help="day after the last capture, YYYY-MM-DD (2018-06-01)",
        )
        parser.add_argument(
            "--no-bursts",
            action="store_true",
            help="pages add links as plain Poisson processes (no editing sessions, no terms)",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        outdir = options["outdir"]
        written = [(outdir / name, f"Writing {name}") for name in DEMO_FILES]
        try:
            with files_written_progress(written, "Drawing the sites") as writing:
                archive = build_demo_archive(
                    outdir,
                    sites=options["sites"],
                    seed=options["seed"],
                    start=options["start"],
                    end=options["end"],
                    writing=writing,
                    bursts=not options["no_bursts"],
                )
        except ValueError as exc:
            raise CommandError(str(exc)) from exc
        self.stdout.write(
            f"Wrote {archive.captures} captures of {archive.pages} pages of {archive.sites} "
            f"sites ({archive.dirty_lines} deliberately bad CDX lines) to {archive.outdir}"
        )
