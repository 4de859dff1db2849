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

HACS writes only inside ``HACS_HERITRIX_ROOT`` (``handoff.trust.job_dir_problem``, checked when
the hand-off is saved and again here). The job directory is resolved (symlinks, ``..``) and then
opened one component at a time from the root without following symlinks, so a directory swapped
for a symlink after the check is refused rather than written through; ``action/`` and the file
itself may not be symlinks either. Files are created ``0o640``: readable by HACS's group (the
user Heritrix runs as joins it, docs/security.md), by nobody else.
"""

from __future__ import annotations

import errno
import os
import secrets
import stat
from collections.abc import Sequence
from contextlib import suppress
from datetime import date
from pathlib import Path

from django.utils import timezone
from django.utils.text import slugify

from handoff.delivery import Delivery, HandOffFailed
from handoff.models import HandOff
from handoff.trust import heritrix_root, job_dir_problem
from scheduling.crawl_lists import seed_list_lines

FILE_MODE = 0o640  # the owner writes, HACS's group (Heritrix) reads, nobody else
_DIRECTORY = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


def action_file_name(hand_off: HandOff, day: date) -> str:
    """``hacs-2026-11-24-<hand-off>.seeds``: one name per day and hand-off, so that two days'
    lists, or two hand-offs into the same job, never overwrite each other."""
    slug = slugify(hand_off.name) or f"hand-off-{hand_off.pk}"
    return f"hacs-{day.isoformat()}-{slug}.seeds"


def heritrix_deliver(
    *, hand_off: HandOff, day: date, urls: Sequence[str], header: Sequence[str], dry_run: bool
) -> Delivery:
    """Write the seeds file of a Heritrix hand-off; raises ``HandOffFailed`` with a sentence
    naming the hand-off and the path when the directory is outside ``HACS_HERITRIX_ROOT``,
    missing, a symlink, or cannot be written. Messages name the paths as configured."""
    problem = job_dir_problem(hand_off.job_dir)
    if problem:
        raise HandOffFailed(f'Hand-off "{hand_off.name}": {problem} Nothing was written.')
    job_dir = Path(hand_off.job_dir)
    real = Path(os.path.realpath(hand_off.job_dir))
    _require_directory(hand_off, job_dir, real, "job directory")
    if hand_off.kind == HandOff.Kind.HERITRIX_ACTION:
        _require_action_directory(hand_off, job_dir, real)
        subdir, name = "action", action_file_name(hand_off, day)
        target = job_dir / subdir / name
        what = f"{len(urls)} seeds to {target} for the running job to import"
    else:
        subdir, name = "", "seeds.txt"
        target = job_dir / name
        what = f"{len(urls)} seeds to {target} for the job's next launch"
    _require_writable(hand_off, job_dir, real, "job directory")
    if (real / subdir / name).is_symlink():
        raise _symlink_refused(hand_off, target)
    if dry_run:
        return Delivery(f'Hand-off "{hand_off.name}" would write {what}.', [f"would write {what}"])
    stamp = timezone.now().strftime("%Y-%m-%dT%H:%M:%SZ")
    text = "".join(seed_list_lines(urls, [*header, f"written by HACS at {stamp}"]))
    try:
        write_atomically(text, root=heritrix_root(), job_dir=str(real), subdir=subdir, name=name)
    except OSError as error:
        if error.errno == errno.ELOOP:  # a directory or the file became a symlink meanwhile
            raise _symlink_refused(hand_off, target) from error
        raise HandOffFailed(
            f'Hand-off "{hand_off.name}" could not write {target}: '
            f"{error.strerror or error}. Nothing was written."
        ) from error
    return Delivery(f'Hand-off "{hand_off.name}" wrote {what}.', [f"wrote {what}"])


def _require_action_directory(hand_off: HandOff, job_dir: Path, real: Path) -> None:
    """``HandOffFailed`` unless the job has its own, writable action directory (not a link)."""
    action_dir = job_dir / "action"
    if (real / "action").is_symlink():
        raise HandOffFailed(
            f'Hand-off "{hand_off.name}": the Heritrix action directory {action_dir} is a '
            "symbolic link; HACS writes only into the job's own action directory, so "
            "replace the link with the directory. Nothing was written."
        )
    if not (real / "action").is_dir():
        raise HandOffFailed(
            f'Hand-off "{hand_off.name}": the Heritrix job has no action directory '
            f"{action_dir}; a job creates it when it is launched, so launch the job in "
            "Heritrix first (or create the directory), or use a relaunch hand-off."
        )
    _require_writable(hand_off, action_dir, real / "action", "action directory")


def write_atomically(text: str, *, root: str, job_dir: str, subdir: str, name: str) -> None:
    """Write ``text`` whole as ``job_dir/subdir/name``: a temporary file in ``job_dir`` (same
    file system, a name ending in ``.tmp``, never ``.seeds``), flushed to disk, then renamed.

    ``job_dir`` (resolved, inside the resolved ``root``) is opened component by component from
    ``root`` and ``subdir`` below it, none followed if it is a symlink; the files are opened
    relative to those directories, also without following a symlink. A symlink anywhere below
    the root raises ``OSError`` with ``errno.ELOOP``.
    """
    job_fd = open_below(root, job_dir)
    try:
        target_fd = os.open(subdir, _DIRECTORY, dir_fd=job_fd) if subdir else job_fd
        try:
            with suppress(FileNotFoundError):
                if stat.S_ISLNK(os.stat(name, dir_fd=target_fd, follow_symlinks=False).st_mode):
                    raise OSError(errno.ELOOP, os.strerror(errno.ELOOP), name)
            _write_and_rename(text, job_fd, target_fd, name)
        finally:
            if subdir:
                os.close(target_fd)
    finally:
        os.close(job_fd)


def _write_and_rename(text: str, job_fd: int, target_fd: int, name: str) -> None:
    temp = f".hacs-hand-off-{secrets.token_hex(8)}.tmp"
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
    fd = os.open(temp, flags, FILE_MODE, dir_fd=job_fd)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as handle:
            os.fchmod(handle.fileno(), FILE_MODE)  # the umask may have taken the group's read
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temp, name, src_dir_fd=job_fd, dst_dir_fd=target_fd)
    except BaseException:
        with suppress(FileNotFoundError):
            os.unlink(temp, dir_fd=job_fd)
        raise


def open_below(root: str, path: str) -> int:
    """A descriptor of directory ``path``, opened from ``root`` one component at a time
    without following symlinks (``path`` and ``root`` are resolved already, so a symlink met
    here was put there after the check)."""
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    relative = os.path.relpath(path, root)
    if relative == ".":
        return fd
    for part in relative.split(os.sep):
        try:
            below = os.open(part, _DIRECTORY, dir_fd=fd)
        finally:
            os.close(fd)
        fd = below
    return fd


def _symlink_refused(hand_off: HandOff, target: Path) -> HandOffFailed:
    return HandOffFailed(
        f'Hand-off "{hand_off.name}": {target} or a directory above it inside '
        "HACS_HERITRIX_ROOT is a symbolic link; HACS writes through no symbolic link, so remove "
        "it. Nothing was written."
    )


def _require_directory(hand_off: HandOff, path: Path, real: Path, what: str) -> None:
    if not real.is_dir():
        state = "is not a directory" if real.exists() else "does not exist"
        raise HandOffFailed(
            f'Hand-off "{hand_off.name}": the Heritrix {what} {path} {state}; correct the path '
            "in Admin → Hand-offs, or create the job in Heritrix."
        )


def _require_writable(hand_off: HandOff, path: Path, real: Path, what: str) -> None:
    if not os.access(real, os.W_OK | os.X_OK):
        raise HandOffFailed(
            f'Hand-off "{hand_off.name}": HACS may not write to the Heritrix {what} {path}; '
            "give the user HACS runs as write permission there."
        )
