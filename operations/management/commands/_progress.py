"""Helpers shared by the import commands: a progress bar (quiet when not on a terminal) and
handing file imports to a worker."""

import sys
from pathlib import Path
from typing import Any

from django.core.management.base import CommandError
from tqdm import tqdm

from archive.pipeline import ImportReport
from operations.jobs import enqueue_files


def progress(total: int, unit: str, desc: str) -> Any:
    return tqdm(total=total, unit=unit, desc=desc, disable=not sys.stderr.isatty(), leave=False)


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
    """End a file import with a non-zero status when a file could not be read to the end."""
    if report.failed_files:
        failed = ", ".join(Path(name).name for name, _reason in report.failed_files)
        raise CommandError(
            f"{len(report.failed_files)} of {len(files)} file{'s' * (len(files) != 1)} "
            f"could not be read to the end ({failed}); what they held before the damage "
            "was imported."
        )
