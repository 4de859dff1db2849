"""Helpers shared by the import commands: file imports in the foreground (kept as jobs, drawn
as a bar on a terminal), handing file imports to a worker, and the progress of work that
reports none of its own (files being written)."""

import threading
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from archive.pipeline import ImportReport
from hacs.progress import Progress
from jobs.bar import drawing, terminal_progress
from jobs.models import JobRecord
from jobs.runner import JobRun
from operations.jobs import enqueue_files, file_import_run
from operations.stops import sites_interrupt


@contextmanager
def files_written_progress(
    files: Sequence[tuple[Path, str]], desc: str
) -> Iterator[Callable[[str], None]]:
    """The bytes written to ``files`` while the block runs, drawn as the one terminal bar
    (``jobs.bar``) naming the file being written (its label); quiet when not on a terminal.
    Files left from an earlier run count only once rewritten.

    Yields the callback to tell when a file's writing starts (its path's name): the bar names
    it at once, however fast the file is written; between calls it follows the newest file.
    """
    labels = {path.name: label for path, label in files}
    if not drawing():  # nobody sees a bar: no files to watch
        yield lambda _name: None
        return
    with terminal_progress(desc, unit="B", count="bytes written") as report:
        started = time.time()
        done = threading.Event()
        counted = 0

        def watch() -> None:
            nonlocal counted
            while not done.wait(0.5):
                written = []
                for path, label in files:
                    try:
                        stat = path.stat()
                    except OSError:
                        continue
                    if stat.st_mtime >= started:
                        written.append((stat.st_mtime, stat.st_size, label))
                if written:
                    size = sum(size for _mtime, size, _label in written)
                    grown, counted = size - counted, size
                    report(Progress(item=max(written)[2], counts={"bytes written": grown}))

        watcher = threading.Thread(target=watch, daemon=True)
        watcher.start()
        try:
            yield lambda name: report(Progress(item=labels.get(name, name)))
        finally:
            done.set()
            watcher.join()


class FileImportCommand(BaseCommand, ABC):
    """``import_cdx`` and ``import_warc``: files imported in the foreground as a job (a bar on a
    terminal), or handed to a worker (``--enqueue``); each skipped record and failed file on
    standard error, the counts on standard output, a non-zero status when a file could not be
    read to the end or the archive could not be reached."""

    kind: str  # "cdx" or "warc"

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("files", nargs="+", type=Path)
        parser.add_argument("--enqueue", action="store_true", help="hand the work to a worker")

    def handle(self, *args: object, **options: object) -> None:
        files = options["files"]
        assert isinstance(files, list)
        if options["enqueue"]:
            self.stdout.write(enqueue_file_import(self.kind, files))
            return
        fetch = not options.get("no_fetch")
        report = file_import(self.kind, files, fetch=fetch)
        file_problems_write(self.stderr, report)
        for line in self.summary(report, fetched=fetch):
            self.stdout.write(line)
        file_failures_raise(report, files)

    @abstractmethod
    def summary(self, report: ImportReport, *, fetched: bool) -> list[str]:
        """What the import did, as lines for standard output (``fetched``: it fetched the
        pages' links)."""


def file_import(kind: str, files: list[Path], *, fetch: bool = True) -> ImportReport:
    """Import ``files`` in the foreground, kept as a job: the Jobs page shows its progress inside
    each file, the terminal a bar over the bytes read, then the sites fetched (the pages'
    links); Ctrl-C, a stop signal, an error or a closed terminal leaves the sites it started
    failed with the reason."""
    label = f"{len(files)} {kind.upper()} file{'s' * (len(files) != 1)} from the terminal"
    with (
        JobRun.start(
            kind=JobRecord.Kind.IMPORT,
            label=label,
            queue="terminal",
            total=len(files),
            on_stop=sites_interrupt,
        ) as run,
        run.bar(
            "Importing", unit="B", count="bytes read", of="bytes in files", postfix="sites fetched"
        ),
    ):
        return file_import_run(run, kind, files, fetch=fetch)


def enqueue_file_import(kind: str, files: list[Path]) -> str:
    """Hand the import of ``files`` to a worker; returns the line to print.

    The paths are checked and made absolute here, because the worker may start elsewhere.
    """
    missing = [str(f) for f in files if not f.is_file()]
    if missing:
        raise CommandError(f"No such file: {', '.join(missing)}")
    record = enqueue_files(kind, [str(f.resolve()) for f in files])
    return f"Import of {len(files)} files queued as job {record.pk}."


def file_problems_write(stderr: Any, report: ImportReport) -> None:
    """Each skipped record with its file and line or offset, then each file that failed."""
    for problem in report.problems:
        stderr.write(f"skipped {problem}")
    for name, reason in report.failed_files:
        stderr.write(f"{name}: {reason}")


def file_failures_raise(report: ImportReport, files: list[Path]) -> None:
    """End a file import with a non-zero status when the archive could not be reached for the
    pages' links (its one sentence), or when a file could not be read to the end."""
    if report.stopped:
        raise CommandError(
            f"{report.stopped} {len(report.failed)} of {len(report.captures.sites)} sites not "
            "imported; run the import again once the archive answers."
        )
    if report.failed_files:
        failed = ", ".join(Path(name).name for name, _reason in report.failed_files)
        raise CommandError(
            f"{len(report.failed_files)} of {len(files)} file{'s' * (len(files) != 1)} "
            f"could not be read to the end ({failed}); what they held before the damage "
            "was imported."
        )
