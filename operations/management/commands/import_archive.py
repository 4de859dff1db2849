from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db.models import Q

from archive.models import Site
from archive.pipeline import FetchRetry, FromArchive
from hacs.formats.canon import seed_key
from jobs.models import JobRecord
from jobs.runner import JobRun
from operations.jobs import enqueue_history_pass, enqueue_import
from operations.refresh import (
    archive_client,
    sites_refresh,
    sites_with_failed_fetches,
    sites_with_older_history,
)
from operations.stops import sites_interrupt

SHOWN_FAILURES = 50  # failed sites listed one a line; the rest are counted


class Command(BaseCommand):
    help = "Import the archive history of sites from the configured CDX server and Wayback."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--site", action="append", default=[], metavar="URL", help="only this seed (repeat)"
        )
        parser.add_argument(
            "--failed",
            action="store_true",
            help="only sites whose last import failed or whose pages could not all be fetched",
        )
        parser.add_argument(
            "--full",
            action="store_true",
            help="read each site's whole history again (default: only captures since the "
            "newest one stored, less HACS_CDX_INDEX_LAG_DAYS)",
        )
        parser.add_argument(
            "--history",
            action="store_true",
            help="fetch now the contents of copies older than each site's last HACS_HISTORY_DAYS "
            "days, which imports leave for the nightly history pass (no CDX query)",
        )
        parser.add_argument("--enqueue", action="store_true", help="hand the work to the workers")

    def handle(self, *args: object, **options: object) -> None:
        sites = Site.objects.order_by("pk")
        urls = options["site"]
        assert isinstance(urls, list)
        if urls:
            keys = []
            for url in urls:
                try:
                    keys.append(seed_key(url))
                except ValueError as error:
                    raise CommandError(f"--site {url}: {error}") from None
            sites = sites.filter(canonical_key__in=keys)
            if sites.count() != len(set(keys)):
                raise CommandError("Some --site URLs are not stored seeds; import them first.")
        if options["failed"]:
            sites = sites.filter(
                Q(import_status=Site.ImportStatus.FAILED) | Q(pk__in=sites_with_failed_fetches())
            )
        if options["history"]:
            if options["failed"] or options["full"]:
                raise CommandError("--history fetches contents only: not with --failed or --full.")
            sites = sites.filter(pk__in=sites_with_older_history())
        ids = list(sites.values_list("pk", flat=True))
        if options["enqueue"] and options["history"]:
            history = enqueue_history_pass()
            if history is None:
                self.stdout.write(
                    "No history pass queued: no site waits for its older history, "
                    "or an import is under way (the nightly pass will start it)."
                )
            else:
                self.stdout.write(
                    f"History pass of {history.total} sites queued as job {history.pk}."
                )
            return
        if options["enqueue"]:
            record = enqueue_import(ids)
            self.stdout.write(f"Import of {len(ids)} sites queued as job {record.pk}.")
            return
        client = archive_client()
        # Kept as a job: the Jobs page shows it, and Ctrl-C or a closed terminal leaves its
        # unfinished sites failed as interrupted, for --failed to find.
        label = f"{len(ids)} site{'s' * (len(ids) != 1)} from the terminal"
        if options["history"]:
            label = f"Older history of {label}"
        with (
            JobRun.start(
                kind=JobRecord.Kind.IMPORT,
                label=label,
                queue="terminal",
                total=len(ids),
                items=ids,
                on_stop=sites_interrupt,
            ) as run,
            run.bar("Importing", unit="site"),
        ):
            source: FromArchive | FetchRetry = FromArchive(ids, full=bool(options["full"]))
            if options["history"]:
                source = FetchRetry(ids, history=True)
            result = sites_refresh(source, client=client, report=run.report)
        record = JobRecord.objects.get(pk=run.record.pk)
        left = record.counts.get("older contents left for the history pass", 0)
        failed = [f"{item}: {failure}" for item, failure in run.failures]
        if not result.stopped:  # when the archive is unreachable, one sentence says it all
            for line in failed[:SHOWN_FAILURES]:
                self.stderr.write(f"failed: {line}")
            if len(failed) > SHOWN_FAILURES:
                self.stderr.write(f"… and {len(failed) - SHOWN_FAILURES} more failed sites.")
        self.stdout.write(
            f"{len(ids)} sites: {len(ids) - len(failed)} imported, {len(failed)} failed; "
            f"{result.captures.added} captures added, {result.fetches['fetched']} mementos "
            f"fetched ({client.stats.cdx_queries} CDX queries, {client.stats.requests} "
            f"requests, {client.stats.retries} retries)."
        )
        if left:
            self.stdout.write(
                f"{left} contents of copies older than each site's last "
                f"{settings.HACS_HISTORY_DAYS:,} days are left for the history pass (nightly at "
                "HACS_FETCH_RETRY_CRON, or now: import_archive --history)."
            )
        if result.stopped:
            raise CommandError(f"{result.stopped} {len(failed)} of {len(ids)} sites not imported.")
        if failed:
            raise CommandError(
                f"{len(failed)} of {len(ids)} sites failed; run import_archive --failed to try "
                "them again."
            )
