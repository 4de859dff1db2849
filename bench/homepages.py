"""Real scholarly homepages kept in git: every change their owners made, read as HACS reads a page.

A folder in the layout of ``../shared/realdata/jonbarron-homepage-git-history`` holds
``versions_index.csv`` (``commit_epoch``, ``file``, oldest first) and
``index_html_versions.tar.xz`` (one file per commit under ``versions/``): hand-written HTML, or
a Jekyll page's Markdown source. This module turns one into the times its live page *changed*
in HACS's sense (DESIGN rules 2 and 3): a version whose canonical link set
(``hacs.formats.links.extract_links``, relative links resolved against the homepage's URL, as a
crawl of the live page resolves them) holds a link no earlier live version held.

Readings (the data's README lists the caveats):

* *Pushes, not commits.* Commit times are when the owner committed; several local commits go out
  in one push, and the page's host builds it minutes later. Consecutive commits less than
  :data:`MERGE_HOURS` apart are one edit, live at its last commit, with the last commit's
  content (a link added and removed within the edit was never live).
* *Markdown.* A Jekyll page's ``[text](url)`` links become ``<a href="url">`` before the links
  are read, as the site's build renders them.
* *Truth until the snapshot.* The history is known from the first version to the repository's
  snapshot (``PROVENANCE.md``'s "snapshot HEAD … (date)"; the last version when it names none):
  a homepage unchanged since its last version is known to be unchanged until then.

Third-party data beside the checkout, never copied into the project: the benches read it in
place, and a test that reads it skips when it is absent.
"""

from __future__ import annotations

import csv
import re
import tarfile
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

import numpy as np
from numpy.typing import NDArray

from bench.common import ROOT
from hacs.formats.links import decode_html, extract_links
from hacs.updates import new_link_counts

FloatArray = NDArray[np.float64]

#: Where the real histories live: beside the checkout.
REALDATA = ROOT.parent / "shared" / "realdata"
#: The collections of homepages: every folder under the first, and the single homepages.
COLLECTION = "scholarly-homepages-git"
SINGLE = ("jonbarron-homepage-git-history", "jbhuang-homepage-git-history")
#: The URLs of the single homepages (the collection's are ``https://<owner>.github.io/``).
SINGLE_URLS = {
    "jonbarron-homepage-git-history": "https://jonbarron.info/",
    "jbhuang-homepage-git-history": "https://jbhuang0604.github.io/",
}
#: The file endings of a Jekyll page's Markdown source.
MARKDOWN = (".md", ".markdown")
#: Commits closer than this are one edit (pushed together): the data's README.
MERGE_HOURS = 4.0
DAY_SECONDS = 86400.0

_MARKDOWN_LINK = re.compile(r"\[[^\]]*\]\(\s*<?([^)\s>]+)")
_SNAPSHOT = re.compile(r"snapshot HEAD[^()]*\((\d{4}-\d{2}-\d{2}[^)]*)\)")


@dataclass(frozen=True)
class Homepage:
    """One homepage's history: its ``name`` (the folder), ``url``, the ``changes`` (days since
    1970, UTC) when its live page gained a link, and the days its truth is known: from its
    ``first`` version to ``known_until``."""

    name: str
    url: str
    changes: FloatArray
    first: float
    known_until: float
    versions: int
    # Each edit's live time and canonical link set, oldest first (for the new links a copy holds).
    edit_times: FloatArray = field(default_factory=lambda: np.zeros(0))
    edit_links: tuple[frozenset[str], ...] = ()

    def new_links(self, times: list[float]) -> list[int]:
        """How many links of the page live at each of ``times`` (ascending) no earlier of them
        held (``hacs.updates.new_link_counts``, as HACS stores it on each copy); the first
        counts all its links."""
        live = np.searchsorted(self.edit_times, np.asarray(times, dtype=np.float64), "right") - 1
        sets = [self.edit_links[i] if i >= 0 else frozenset() for i in live.tolist()]
        return new_link_counts(sets).tolist()


def homepage_folders(realdata: Path = REALDATA) -> list[Path]:
    """Every homepage folder (one holding ``versions_index.csv``) under ``realdata``: the
    collection's, sorted by name, then the single homepages that are present, then any other
    homepage folder directly under ``realdata``, sorted (so that ``realdata`` may also be a
    collection's own folder)."""

    def is_homepage(path: Path) -> bool:
        return path.is_dir() and (path / "versions_index.csv").is_file()

    folders = []
    collection = realdata / COLLECTION
    if collection.is_dir():
        folders += sorted(p for p in collection.iterdir() if is_homepage(p))
    folders += [realdata / s for s in SINGLE if is_homepage(realdata / s)]
    if realdata.is_dir():
        others = sorted(p for p in realdata.iterdir() if is_homepage(p) and p.name not in SINGLE)
        folders += others
    return folders


def homepage_url(folder: Path) -> str:
    """The homepage's URL: the single homepages' own, else the GitHub Pages address of the
    folder ``<owner>__<repo>``: ``https://<repo>/`` for a user site ``<owner>.github.io``,
    ``https://<owner>.github.io/<repo>/`` for a project site."""
    if folder.name in SINGLE_URLS:
        return SINGLE_URLS[folder.name]
    owner, _, repo = folder.name.partition("__")
    repo = repo or owner
    if repo.lower().endswith(".github.io"):
        return f"https://{repo.lower()}/"
    return f"https://{owner.lower()}.github.io/{repo}/"


def page_links(body: bytes, url: str, *, markdown: bool) -> frozenset[str]:
    """The canonical link set of one version (rule 2); Markdown links read as anchors."""
    text = decode_html(body)
    if markdown:
        anchors = "".join(f'<a href="{m}"></a>' for m in _MARKDOWN_LINK.findall(text))
        text = f"<html><body>{text}{anchors}</body></html>"
    return extract_links(text, url)


def load_homepage(folder: Path) -> Homepage:
    """One folder's history, read as the module docstring says. A folder that cannot be read
    raises ``ValueError`` naming the folder and what is wrong with it."""
    try:
        with open(folder / "versions_index.csv", encoding="utf-8") as handle:
            listed = list(csv.DictReader(handle))
        rows = sorted(listed, key=lambda r: int(r["commit_epoch"]))
    except (KeyError, TypeError, ValueError) as error:  # a bad encoding is a ValueError too
        raise ValueError(
            f"{folder.name}: versions_index.csv needs an integer commit_epoch and a file on "
            f"every line ({error})"
        ) from error
    if not rows:
        raise ValueError(f"{folder.name}: versions_index.csv lists no version")
    bodies: dict[str, bytes] = {}
    try:
        with tarfile.open(folder / "index_html_versions.tar.xz") as archive:
            for member in archive.getmembers():
                extracted = archive.extractfile(member) if member.isfile() else None
                if extracted is not None:
                    bodies[Path(member.name).name] = extracted.read()
    except (OSError, tarfile.TarError) as error:
        raise ValueError(f"{folder.name}: index_html_versions.tar.xz ({error})") from error
    absent = [r.get("file") for r in rows if r.get("file") not in bodies]
    if absent:
        raise ValueError(
            f"{folder.name}: {len(absent)} version(s) of versions_index.csv are not in "
            f"index_html_versions.tar.xz, the first {absent[0]!r}"
        )
    epochs = np.array([int(r["commit_epoch"]) for r in rows], dtype=np.float64)
    # The last commit of each edit: the next commit is MERGE_HOURS or more later (or none).
    last_of_edit = np.r_[np.diff(epochs) >= MERGE_HOURS * 3600.0, True]
    url = homepage_url(folder)
    seen: set[str] = set()
    changes, edit_times, edit_links = [], [], []
    for k in np.flatnonzero(last_of_edit).tolist():
        name = rows[k]["file"]
        links = page_links(bodies[name], url, markdown=name.lower().endswith(MARKDOWN))
        if seen and links - seen:
            changes.append(epochs[k] / DAY_SECONDS)
        seen |= links
        edit_times.append(epochs[k] / DAY_SECONDS)
        edit_links.append(links)
    known = epochs[-1] / DAY_SECONDS
    provenance = folder / "PROVENANCE.md"
    if provenance.is_file():
        found = _SNAPSHOT.search(provenance.read_text(encoding="utf-8"))
        try:
            stamp = datetime.fromisoformat(found.group(1).strip()) if found else None
        except ValueError:
            stamp = None  # a date not in ISO form: the truth is known to the last version
        if stamp is not None:
            known = max(known, stamp.timestamp() / DAY_SECONDS)
    return Homepage(
        name=folder.name,
        url=url,
        changes=np.asarray(changes, dtype=np.float64),
        first=float(epochs[0] / DAY_SECONDS),
        known_until=float(known),
        versions=len(rows),
        edit_times=np.asarray(edit_times, dtype=np.float64),
        edit_links=tuple(edit_links),
    )


def load_homepages(
    realdata: Path = REALDATA, skipped: list[tuple[str, str]] | None = None
) -> list[Homepage]:
    """Every homepage under ``realdata`` (:func:`homepage_folders`). A folder that cannot be
    read is left out; with ``skipped``, its name and the reason are appended there (the benches
    print them), else the first such folder's error is raised."""
    homepages = []
    for folder in homepage_folders(realdata):
        try:
            homepages.append(load_homepage(folder))
        except ValueError as error:
            if skipped is None:
                raise
            skipped.append((folder.name, str(error).removeprefix(f"{folder.name}: ")))
    return homepages


def read_homepages(realdata: Path = REALDATA) -> list[Homepage]:
    """:func:`load_homepages` for a bench: each folder left out is printed with its reason."""
    unread: list[tuple[str, str]] = []
    homepages = load_homepages(realdata, unread)
    for name, why in unread:
        print(f"not read: {name}: {why}")
    return homepages
