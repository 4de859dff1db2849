"""Do two versions of HACS give the same answers? Byte-for-byte output of the commands people
script against (``export_estimates``, ``crawl_list``, ``evaluate``) and of the demo generator.

Run from the project root::

    .venv/bin/python -m bench.same_outputs --before REV [--after REV] [--sites N] [--seed S]

It checks out REV into a temporary git worktree, writes the demo archive with each version's
``make_demo_archive`` (same seed and dates) and compares the files, then imports the *same*
archive into a fresh SQLite database per version and runs each command with several option
sets. It prints one line per output (size and SHA-256 of each side) and exits 1 on any
difference. Nothing of the developer's own data is touched; no network is used (WARC import).
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from bench.common import END, ROOT, START, bench_parser

PYTHON = str(ROOT / ".venv" / "bin" / "python") if (ROOT / ".venv").exists() else sys.executable

DEMO_FILES = ("seeds.csv", "demo.cdx", "demo.warc.gz", "truth.json")
COMMANDS: list[tuple[str, list[str]]] = [
    *[
        (
            f"export_estimates {level} {method}",
            ["export_estimates", "--level", level, "--method", method],
        )
        for level in ("homepage", "website")
        for method in ("observed", "interpolated")
    ],
    (
        "export_estimates window",
        [
            "export_estimates",
            "--level",
            "homepage",
            "--method",
            "observed",
            "--start",
            "2016-01-01",
            "--end",
            "2017-12-31",
        ],
    ),
    ("crawl_list theta", ["crawl_list", "--date", "2018-05-01", "--theta", "0.3"]),
    (
        "crawl_list budget website",
        [
            "crawl_list",
            "--date",
            "2018-03-15",
            "--budget",
            "25",
            "--level",
            "website",
            "--method",
            "interpolated",
            "--history-days",
            "400",
            "--e-days",
            "14",
        ],
    ),
    ("crawl_list all", ["crawl_list", "--date", "2017-11-20"]),
    (
        "evaluate both",
        [
            "evaluate",
            "--start",
            "2017-06-01",
            "--end",
            "2018-04-01",
            "--level",
            "both",
            "--w-weeks",
            "1-12",
        ],
    ),
    (
        "evaluate observed",
        [
            "evaluate",
            "--start",
            "2016-09-01",
            "--end",
            "2017-03-01",
            "--level",
            "homepage",
            "--w-weeks",
            "2,4",
            "--method",
            "observed",
        ],
    ),
]


def manage(tree: Path, var: Path, *args: str) -> bytes:
    env = dict(os.environ)
    env.update(
        DATABASE_URL=f"sqlite:///{var / 'hacs.sqlite3'}",
        HACS_VAR_DIR=str(var),
        DJANGO_SETTINGS_MODULE="hacs_site.settings",
    )
    env.pop("REDIS_URL", None)
    done = subprocess.run(
        [PYTHON, str(tree / "manage.py"), *args], cwd=tree, env=env, capture_output=True
    )
    if done.returncode != 0:
        raise SystemExit(
            f"{tree.name}: manage.py {' '.join(args)} failed:\n{done.stderr.decode()[-3000:]}"
        )
    return done.stdout


def digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()[:16]


def main() -> int:
    parser = bench_parser(__doc__, sites=150, seed=3, demo=False)
    parser.add_argument("--before", required=True, help="git revision to compare against")
    parser.add_argument("--after", help="git revision to compare (default: this working tree)")
    args = parser.parse_args()

    with (
        tempfile.TemporaryDirectory(prefix="hacs-same-") as tmp_name,
        worktrees(Path(tmp_name), args.before, args.after) as trees,
    ):
        tmp = Path(tmp_name)
        archives = {name: tmp / f"var-{name}" / "demo" for name in trees}
        for name, tree in trees.items():
            demo_archive_make(tree, archives[name], sites=args.sites, seed=args.seed)
        print(f"{'output':32} {'before':>28} {'after':>28}")
        differences = 0
        for file_name in DEMO_FILES:
            sides = [(archives[n] / file_name).read_bytes() for n in trees]
            differences += report(f"make_demo_archive {file_name}", *sides)
        # One input for both versions: the demo archive "before" wrote.
        outputs = {
            name: command_outputs(tree, archives[name].parent, archives["before"])
            for name, tree in trees.items()
        }
        for label, _command in COMMANDS:
            differences += report(label, outputs["before"][label], outputs["after"][label])
    print(f"\n{differences} outputs differ." if differences else "\nAll outputs are identical.")
    return 1 if differences else 0


@contextmanager
def worktrees(tmp: Path, before: str, after: str | None) -> Iterator[dict[str, Path]]:
    """The two versions' trees: ``before`` checked out in a temporary git worktree, ``after``
    too or (None) this working tree; the worktrees are removed when the block ends."""
    trees = {"before": tmp / "before", "after": ROOT if after is None else tmp / "after"}
    try:
        for name, revision in (("before", before), ("after", after)):
            if revision is not None:
                subprocess.run(
                    ["git", "worktree", "add", "--detach", "--quiet", str(trees[name]), revision],
                    cwd=ROOT,
                    check=True,
                )
        yield trees
    finally:
        for tree in set(trees.values()) - {ROOT}:
            if tree.exists():
                subprocess.run(
                    ["git", "worktree", "remove", "--force", str(tree)], cwd=ROOT, check=False
                )


def demo_archive_make(tree: Path, archive: Path, *, sites: int, seed: int) -> None:
    """The demo archive written by ``tree``'s ``make_demo_archive`` into ``archive``."""
    archive.parent.mkdir()
    manage(
        tree,
        archive.parent,
        "make_demo_archive",
        str(archive),
        "--sites",
        str(sites),
        "--seed",
        str(seed),
        "--start",
        str(START),
        "--end",
        str(END),
    )


def command_outputs(tree: Path, var: Path, archive: Path) -> dict[str, bytes]:
    """``archive`` imported into ``tree``'s fresh database in ``var``, then each command's
    output."""
    manage(tree, var, "migrate", "--noinput")
    manage(tree, var, "import_seeds", str(archive / "seeds.csv"))
    manage(tree, var, "import_warc", str(archive / "demo.warc.gz"))
    return {label: manage(tree, var, *command) for label, command in COMMANDS}


def report(label: str, before: bytes, after: bytes) -> int:
    same = before == after
    mark = "same" if same else "DIFFERENT"
    print(
        f"{label:32} {len(before):>9} B {digest(before)} {len(after):>9} B {digest(after)}  {mark}",
        flush=True,
    )
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
