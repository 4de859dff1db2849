"""The list as Heritrix 3 reads it: a seeds file in the job directory.

Two modes. A running job's ``ActionDirectory`` bean scans the job's ``action/`` directory (every
30 s by default), imports each ``.seeds`` (or ``.seeds.gz``) file it finds as new seeds, and
moves the file to its done directory (``action/done/`` or ``<launch>/actions-done/``, with a
timestamp prefix); so the action mode writes ``hacs-<date>-<hand-off>.seeds`` there, a new name
each day. The relaunch mode writes the job's ``seeds.txt``, which Heritrix reads when the job is
next built and launched. Lines starting with ``#`` are comments to Heritrix.

Files appear whole or not at all: the text goes to a temporary file beside the target, which is
then renamed (``os.replace``, atomic within a file system). For the action mode that temporary
file is written in the job directory, not in ``action/``: Heritrix acts on, and then moves away,
every file it finds in ``action/`` whatever its name, so a half-written file there could be
taken from under the writer.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Sequence
from contextlib import suppress
from datetime import date
from pathlib import Path

from django.utils import timezone
from django.utils.text import slugify

from handoff.delivery import Delivery, HandOffFailed
from handoff.models import HandOff


def action_file_name(hand_off: HandOff, day: date) -> str:
    """``hacs-2026-11-24-<hand-off>.seeds``: one name per day and hand-off, so that two days'
    lists, or two hand-offs into the same job, never overwrite each other."""
    slug = slugify(hand_off.name) or f"hand-off-{hand_off.pk}"
    return f"hacs-{day.isoformat()}-{slug}.seeds"


def seeds_text(urls: Sequence[str], header: Sequence[str]) -> str:
    """One URL a line, after ``#`` comment lines saying where the list comes from."""
    lines = [f"# {line}" for line in header]
    lines.extend(urls)
    return "\n".join(lines) + "\n"


def heritrix_deliver(
    *, hand_off: HandOff, day: date, urls: Sequence[str], header: Sequence[str], dry_run: bool
) -> Delivery:
    """Write the seeds file of a Heritrix hand-off; raises ``HandOffFailed`` with a sentence
    naming the hand-off and the path when the directory is missing or cannot be written."""
    job_dir = Path(hand_off.job_dir)
    _require_directory(hand_off, job_dir, "job directory")
    if hand_off.kind == HandOff.Kind.HERITRIX_ACTION:
        action_dir = job_dir / "action"
        if not action_dir.is_dir():
            raise HandOffFailed(
                f'Hand-off "{hand_off.name}": the Heritrix job has no action directory '
                f"{action_dir}; a job creates it when it is launched, so launch the job in "
                "Heritrix first (or create the directory), or use a relaunch hand-off."
            )
        _require_writable(hand_off, action_dir, "action directory")
        target = action_dir / action_file_name(hand_off, day)
        what = f"{len(urls)} seeds to {target} for the running job to import"
    else:
        target = job_dir / "seeds.txt"
        what = f"{len(urls)} seeds to {target} for the job's next launch"
    _require_writable(hand_off, job_dir, "job directory")
    if dry_run:
        return Delivery(f'Hand-off "{hand_off.name}" would write {what}.', [f"would write {what}"])
    stamp = timezone.now().strftime("%Y-%m-%dT%H:%M:%SZ")
    text = seeds_text(urls, [*header, f"written by HACS at {stamp}"])
    try:
        write_atomically(text, temp_dir=job_dir, target=target)
    except OSError as error:
        raise HandOffFailed(
            f'Hand-off "{hand_off.name}" could not write {target}: '
            f"{error.strerror or error}. Nothing was written."
        ) from error
    return Delivery(f'Hand-off "{hand_off.name}" wrote {what}.', [f"wrote {what}"])


def write_atomically(text: str, *, temp_dir: Path, target: Path) -> None:
    """Write ``text`` to ``target`` whole: a temporary file in ``temp_dir`` (same file system,
    a name ending in ``.tmp``, never ``.seeds``), flushed to disk, then renamed over ``target``."""
    fd, temp = tempfile.mkstemp(dir=temp_dir, prefix=".hacs-hand-off-", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        # mkstemp makes the file private; Heritrix often runs as another user.
        os.chmod(temp, 0o644)
        os.replace(temp, target)
    except BaseException:
        with suppress(FileNotFoundError):
            os.unlink(temp)
        raise


def _require_directory(hand_off: HandOff, path: Path, what: str) -> None:
    if not path.is_dir():
        state = "is not a directory" if path.exists() else "does not exist"
        raise HandOffFailed(
            f'Hand-off "{hand_off.name}": the Heritrix {what} {path} {state}; correct the path '
            "in Admin → Hand-offs, or create the job in Heritrix."
        )


def _require_writable(hand_off: HandOff, path: Path, what: str) -> None:
    if not os.access(path, os.W_OK | os.X_OK):
        raise HandOffFailed(
            f'Hand-off "{hand_off.name}": HACS may not write to the Heritrix {what} {path}; '
            "give the user HACS runs as write permission there."
        )
