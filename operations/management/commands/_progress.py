"""Helpers shared by the import commands: a progress bar (quiet when not on a terminal) and
handing file imports to a worker."""

import sys
from pathlib import Path
from typing import Any

from django.core.management.base import CommandError
from tqdm import tqdm

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
