from pathlib import Path

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser

from archive.seeds import seeds_import
from hacs.formats.seeds import MAX_TAG_LENGTH, SeedFileError
from operations.jobs import enqueue_import


class Command(BaseCommand):
    help = "Add seed sites from a CSV file (url, author, tags columns) or a list of URLs."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("file", type=Path)
        parser.add_argument(
            "--user-directories-only",
            action="store_true",
            help="keep only ~name homepages, as in the HACS paper",
        )
        parser.add_argument("--tag", action="append", default=[], help="tag every seed")
        parser.add_argument("--dry-run", action="store_true", help="report without storing")
        parser.add_argument(
            "--enqueue", action="store_true", help="then import the new sites' archive history"
        )

    def handle(self, *args: object, **options: object) -> None:
        path = options["file"]
        assert isinstance(path, Path)
        tags = options["tag"]
        assert isinstance(tags, list)
        for tag in tags:
            if len(tag.strip()) > MAX_TAG_LENGTH:
                raise CommandError(
                    f"--tag {tag[:40]!r}… is {len(tag.strip()):,} characters long; a tag holds "
                    f"at most {MAX_TAG_LENGTH}."
                )
        try:
            data = path.read_bytes()
        except OSError as error:
            raise CommandError(f"Cannot read {path}: {error.strerror}") from None
        try:
            report = seeds_import(
                data=data,
                max_bytes=settings.HACS_MAX_UPLOAD_BYTES,
                max_lines=settings.HACS_MAX_SEED_LINES,
                user_directories_only=bool(options["user_directories_only"]),
                extra_tags=tags,
                dry_run=bool(options["dry_run"]),
            )
        except SeedFileError as error:
            raise CommandError(f"{path}: {error}") from None
        for rejected in report.parsed.rejected:
            self.stderr.write(
                f"{path}:{rejected.line}: rejected: {rejected.reason}: {rejected.text}"
            )
        for merged in report.parsed.merged:
            self.stdout.write(
                f"{path}:{merged.line}: merged with line {merged.into_line} ({merged.key})"
            )
        self.stdout.write(report.summary())
        if options["enqueue"] and report.added and not options["dry_run"]:
            record = enqueue_import([site.pk for site in report.added])
            self.stdout.write(f"Import queued as job {record.pk}.")
