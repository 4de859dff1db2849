"""What a Heritrix job fetched, found for the read-back: its finished WARC files.

Heritrix 3 writes a job's WARC files under the job directory, one directory per launch:
``JOB/YYYYMMDDhhmmss/warcs/PREFIX-…-SERIAL-PID~HOST~PORT.warc.gz``, each first as
``….warc.gz.open`` and renamed when it is closed (at its size limit, about 1 GB, or when the
job ends); ``JOB/latest`` is a symbolic link to the newest launch. After a hand-off to a job,
the read-back (``operations.readback``) asks :func:`heritrix_scan` for the files not read
before, or read at another size or content; a ``.open`` file is still being written and is left
for a later pass.

The hand-off's rules hold: the job directory must resolve inside ``HACS_HERITRIX_ROOT``
(``handoff.trust.job_dir_problem``), every directory below the root is opened without following
a symbolic link, and so is every file (:func:`heritrix_open`). A WARC file, ``warcs/`` or a launch
that is a symbolic link, or a ``latest`` that points anywhere but at a launch of this job, is
refused with a sentence, once (``CrawlFile`` remembers it). ``latest`` is not read itself: the
launch it names is.

Each file read is remembered (``CrawlFile``) by where it lies, its size, its modification time
and its SHA-256. A file whose size and time are as remembered is neither read nor hashed again;
one whose size or time changed is hashed, and read again unless its content is the same.
"""

from __future__ import annotations

import errno
import hashlib
import os
import re
import stat
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO

from handoff.heritrix import open_below
from handoff.models import CrawlFile, HandOff
from handoff.trust import heritrix_root, job_dir_problem

LAUNCH = re.compile(r"[0-9]{14}")
WARC_SUFFIXES = (".warc.gz", ".warc")
WRITING_SUFFIX = ".open"
_DIRECTORY = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_FILE = os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC


@dataclass(frozen=True)
class FoundFile:
    """A finished WARC file to read: ``label`` is its place in the job directory
    (``20261124050000/warcs/NAME``), ``key`` the ``CrawlFile`` that will remember it."""

    key: str
    label: str
    path: Path
    size: int
    mtime_ns: int
    digest: str


@dataclass
class HeritrixScan:
    """A pass over one hand-off's job directory: the files to read, those refused (key, label,
    sentence) for the first time, the files skipped by reason, or the sentence saying why the
    directory itself could not be read."""

    hand_off: HandOff
    files: list[FoundFile] = field(default_factory=list)
    refused: list[tuple[str, str, str]] = field(default_factory=list)
    skipped: Counter[str] = field(default_factory=Counter)
    problem: str = ""


def heritrix_scan(hand_off: HandOff) -> HeritrixScan:
    """The job's finished WARC files not read before (see the module)."""
    scan = HeritrixScan(hand_off)
    name = hand_off.name
    problem = job_dir_problem(hand_off.job_dir)
    if problem:
        scan.problem = f'Hand-off "{name}": {problem} Nothing was read.'
        return scan
    try:
        job_fd = open_below(heritrix_root(), os.path.realpath(hand_off.job_dir))
    except OSError as error:
        scan.problem = f'Hand-off "{name}": the Heritrix job directory {hand_off.job_dir} ' + (
            "or a directory above it inside HACS_HERITRIX_ROOT is a symbolic link; HACS reads "
            "through no symbolic link. Nothing was read."
            if error.errno == errno.ELOOP
            else f"cannot be read ({error.strerror or error}). Nothing was read."
        )
        return scan
    known = {row.key: row for row in CrawlFile.objects.filter(hand_off=hand_off)}
    try:
        for launch in _launches(job_fd, scan, known):
            _scan_launch(job_fd, launch, scan, known)
    finally:
        os.close(job_fd)
    return scan


def heritrix_open(hand_off: HandOff, label: str) -> BinaryIO:
    """Open ``label`` (``LAUNCH/warcs/NAME``) of the hand-off's job for reading, from the root
    down without following any symbolic link (``OSError`` with ``ELOOP`` if one appeared)."""
    problem = job_dir_problem(hand_off.job_dir)
    if problem:
        raise PermissionError(problem)
    launch, warcs, name = label.split("/", 2)
    fd = open_below(heritrix_root(), os.path.realpath(hand_off.job_dir))
    try:
        for part in (launch, warcs):
            below = os.open(part, _DIRECTORY, dir_fd=fd)
            os.close(fd)
            fd = below
        file_fd = os.open(name, _FILE, dir_fd=fd)
    finally:
        os.close(fd)
    return os.fdopen(file_fd, "rb")


def crawl_file_key(hand_off: HandOff, label: str) -> str:
    return f"heritrix:{hand_off.pk}:{label}"[:700]


def _refuse(scan: HeritrixScan, known: dict[str, CrawlFile], label: str, sentence: str) -> None:
    """Refuse ``label`` with the sentence, once: a refusal remembered is not told again."""
    key = crawl_file_key(scan.hand_off, label)
    old = known.get(key)
    if old is not None and old.status == CrawlFile.Status.REFUSED and old.message == sentence:
        scan.skipped["refused before"] += 1
        return
    scan.refused.append((key, label, sentence))


def _launches(job_fd: int, scan: HeritrixScan, known: dict[str, CrawlFile]) -> list[str]:
    """The launch directories of the job, oldest first; links refused (see the module)."""
    launches = []
    for name in sorted(os.listdir(job_fd)):
        if not (LAUNCH.fullmatch(name) or name == "latest"):
            continue
        mode = os.stat(name, dir_fd=job_fd, follow_symlinks=False).st_mode
        if stat.S_ISDIR(mode):
            launches.append(name)
        elif stat.S_ISLNK(mode) and name == "latest":
            target = os.readlink(name, dir_fd=job_fd)
            if not _names_a_launch(target, scan.hand_off.job_dir):
                _refuse(
                    scan,
                    known,
                    name,
                    f"{scan.hand_off.job_dir}/latest points to {target[:200]!r}, not to a "
                    "launch directory of this job; HACS follows no such link.",
                )
        elif stat.S_ISLNK(mode):
            _refuse(
                scan,
                known,
                name,
                f"the launch directory {scan.hand_off.job_dir}/{name} is a symbolic link; HACS "
                "reads through no symbolic link.",
            )
    return launches


def _names_a_launch(target: str, job_dir: str) -> bool:
    """Whether ``latest``'s target is a launch directory of the job (by name, relative, or
    absolute inside the job directory as configured or resolved)."""
    path = os.path.normpath(target)
    if not os.path.isabs(path):
        return bool(LAUNCH.fullmatch(path))
    parent, name = os.path.split(path)
    inside = parent in (os.path.normpath(job_dir), os.path.realpath(job_dir))
    return inside and bool(LAUNCH.fullmatch(name))


def _scan_launch(job_fd: int, launch: str, scan: HeritrixScan, known: dict[str, CrawlFile]) -> None:
    try:
        launch_fd = os.open(launch, _DIRECTORY, dir_fd=job_fd)
    except OSError:
        return  # gone meanwhile
    try:
        warcs_fd = os.open("warcs", _DIRECTORY, dir_fd=launch_fd)
    except FileNotFoundError:
        os.close(launch_fd)
        return  # launched, nothing written yet
    except OSError as error:
        os.close(launch_fd)
        if error.errno in (errno.ELOOP, errno.ENOTDIR):
            _refuse(
                scan,
                known,
                f"{launch}/warcs",
                f"{scan.hand_off.job_dir}/{launch}/warcs is a symbolic link or not a "
                "directory; HACS reads through no symbolic link.",
            )
        return
    try:
        for name in sorted(os.listdir(warcs_fd)):
            _scan_file(warcs_fd, launch, name, scan, known)
    finally:
        os.close(warcs_fd)
        os.close(launch_fd)


def _scan_file(
    warcs_fd: int, launch: str, name: str, scan: HeritrixScan, known: dict[str, CrawlFile]
) -> None:
    if name.endswith(WRITING_SUFFIX):
        scan.skipped["still being written"] += 1
        return
    if not name.lower().endswith(WARC_SUFFIXES):
        return
    label = f"{launch}/warcs/{name}"
    try:
        found = os.stat(name, dir_fd=warcs_fd, follow_symlinks=False)
    except FileNotFoundError:
        return
    if stat.S_ISLNK(found.st_mode):
        _refuse(
            scan,
            known,
            label,
            f"{scan.hand_off.job_dir}/{label} is a symbolic link; HACS reads no WARC file "
            "through a link.",
        )
        return
    if not stat.S_ISREG(found.st_mode):
        return
    key = crawl_file_key(scan.hand_off, label)
    old = known.get(key)
    read = old is not None and old.status != CrawlFile.Status.REFUSED
    if read and old is not None and (old.size, old.mtime_ns) == (found.st_size, found.st_mtime_ns):
        scan.skipped["read before"] += 1
        return
    digest = _sha256(warcs_fd, name)
    if read and old is not None and (old.size, old.digest) == (found.st_size, digest):
        CrawlFile.objects.filter(pk=old.pk).update(mtime_ns=found.st_mtime_ns)
        scan.skipped["read before"] += 1
        return
    path = Path(scan.hand_off.job_dir) / label
    scan.files.append(FoundFile(key, label, path, found.st_size, found.st_mtime_ns, digest))


def _sha256(directory_fd: int, name: str) -> str:
    digest = hashlib.sha256()
    fd = os.open(name, _FILE, dir_fd=directory_fd)
    with os.fdopen(fd, "rb") as stream:
        while chunk := stream.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()
