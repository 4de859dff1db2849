"""HACS's test runner: static checks, then the pytest suite once per database.

Called by ``scripts/test.sh`` (the README's test command, which ``.ci/run`` calls). Each database
leg starts the servers it needs; a server that cannot start fails the run — no leg is skipped.
The legs run at the same time; each of the pure packages' test folders (no database) runs in one
leg only, chosen so that the two legs take about as long.
pytest's exit code 5 (no tests collected) counts as a failure.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from scripts.localservers import LocalServer, ServerError, postgres_url, start_postgres  # noqa: E402

PYTHON = sys.executable
PURE_CORE = ["hacs", "hacs_demo"]  # the pure packages, checked with mypy --strict
# The Django layers, checked with mypy's defaults and the django-stubs plugin.
DJANGO_APPS = ["archive", "scheduling", "operations", "dashboard", "jobs", "handoff", "hacs_site"]


def banner(text: str) -> None:
    print(f"\n\033[1m==== {text} ====\033[0m", flush=True)


def run(args: list[str], env: dict[str, str] | None = None) -> int:
    return subprocess.run(args, cwd=ROOT, env=env).returncode


def main(pytest_args: list[str]) -> int:
    env = dict(os.environ)
    env.pop("DATABASE_URL", None)
    failures: list[str] = []

    banner("ruff check")
    if run([PYTHON, "-m", "ruff", "check", "."]) != 0:
        failures.append("ruff check")
    banner("ruff format --check")
    if run([PYTHON, "-m", "ruff", "format", "--check", "."]) != 0:
        failures.append("ruff format --check")
    banner("mypy --strict on the pure core")
    present = [path for path in PURE_CORE if (ROOT / path).exists()]
    if present and run([PYTHON, "-m", "mypy", "--strict", *present]) != 0:
        failures.append("mypy")
    banner("mypy on the Django apps (django-stubs)")
    if run([PYTHON, "-m", "mypy", *DJANGO_APPS]) != 0:
        failures.append("mypy on the apps")
    banner("makemigrations --check")
    if run([PYTHON, "manage.py", "makemigrations", "--check", "--dry-run"], env) != 0:
        failures.append("makemigrations --check")

    legs = [n.strip() for n in os.environ.get("HACS_TEST_DATABASES", LEGS).split(",") if n.strip()]
    unknown = [leg for leg in legs if leg not in LEG_NAMES]
    if unknown:
        print(f"Unknown database leg(s) {', '.join(unknown)}; use sqlite and/or postgres.")
        return 1
    failures += run_legs(legs, env, pytest_args)

    banner("summary")
    if failures:
        print("FAILED: " + ", ".join(failures))
        return 1
    print(summary(legs))
    return 0


def summary(legs: list[str]) -> str:
    """The last line of a passing run, naming the database legs that ran, and only those."""
    return f"All checks passed, and the test suite on {' and '.join(legs)}."


LEGS = "sqlite,postgres"
LEG_NAMES = LEGS.split(",")
# The pure packages' tests use no database: each folder runs in one leg only, its home leg when
# that leg runs, else the first. The homes even out the legs' times: the PostgreSQL leg's own
# tests take about 70 s longer than the SQLite leg's, tests/hacs_demo about 140 s and tests/hacs
# about 85 s; so placed, the two legs end within a minute of each other.
PURE_TESTS = {"tests/hacs": "postgres", "tests/hacs_demo": "sqlite"}


def pure_tests_ignored(leg: str, legs: list[str]) -> list[str]:
    """pytest's ``--ignore`` arguments for ``leg`` among the ``legs`` that run: every pure test
    folder whose leg is another one (its home, or the first leg when its home does not run)."""
    ignored = []
    for path, home in PURE_TESTS.items():
        runs_in = home if home in legs else legs[0]
        if runs_in != leg:
            ignored.append(f"--ignore={path}")
    return ignored


def run_legs(legs: list[str], env: dict[str, str], pytest_args: list[str]) -> list[str]:
    """Run pytest once per database, the legs at the same time (each leg waits on servers,
    workers and browsers for much of its time, so two share two cores well); returns the legs
    that failed. Each leg writes to its own log, printed whole once it ends, and has its own
    HACS_VAR_DIR, so that nothing one leg writes there is seen by the other."""
    banner(f"pytest on {' and '.join(legs)}, at the same time")
    servers: list[LocalServer] = []
    running: list[tuple[str, subprocess.Popen[bytes], Path, float]] = []
    failures: list[str] = []
    try:
        for leg in legs:
            var = ROOT / "var" / f"test-{leg}"
            var.mkdir(mode=0o700, parents=True, exist_ok=True)
            database = _leg_database(leg, var, servers)
            if database is None:
                failures.append("pytest on postgres")
                continue
            leg_env = dict(env, HACS_VAR_DIR=str(var), DATABASE_URL=database)
            skip = pure_tests_ignored(leg, legs)
            process, log = _leg_start(var, leg_env, [*skip, *pytest_args])
            running.append((leg, process, log, time.monotonic()))
            print(f"pytest on {leg} started (log: {log.relative_to(ROOT)})", flush=True)
        for leg, process, log, started in running:
            if not _leg_finished(leg, process, log, started):
                failures.append(f"pytest on {leg}")
    finally:
        for _leg, process, _log, _started in running:
            if process.poll() is None:
                process.terminate()
        for server in servers:
            server.stop()
    return failures


def _leg_database(leg: str, var: Path, servers: list[LocalServer]) -> str | None:
    """The leg's DATABASE_URL: a new PostgreSQL server (added to ``servers``) or a SQLite file
    in ``var``; None when the server would not start."""
    if leg != "postgres":
        return f"sqlite:///{var / 'test-run.sqlite3'}"
    try:
        server = start_postgres()
    except ServerError as error:
        print(f"Could not start the PostgreSQL server: {error}", flush=True)
        return None
    servers.append(server)
    print(f"PostgreSQL is running on 127.0.0.1:{server.port}", flush=True)
    return postgres_url(server)


def _leg_start(
    var: Path, leg_env: dict[str, str], pytest_args: list[str]
) -> tuple[subprocess.Popen[bytes], Path]:
    """Start one leg's pytest, writing to ``var``/pytest.log; the process and its log."""
    log = var / "pytest.log"
    # The slowest tests of each leg are listed, so that CI's time can be watched. Each
    # leg keeps its temporary files in its own directory: pytest's shared one drops the
    # oldest runs' directories when new runs start, under a leg still using them.
    args = ["-p", "no:cacheprovider", "--durations=25", f"--basetemp={var / 'tmp'}", *pytest_args]
    with open(log, "wb") as out:
        process = subprocess.Popen(
            [PYTHON, "-m", "pytest", *args],
            cwd=ROOT,
            env=leg_env,
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    return process, log


def _leg_finished(leg: str, process: subprocess.Popen[bytes], log: Path, started: float) -> bool:
    """Wait for a leg, print its log and how it ended; whether it passed."""
    code = process.wait()
    banner(f"pytest on {leg}")
    sys.stdout.write(log.read_text(encoding="utf-8", errors="replace"))
    print(f"pytest on {leg}: exit code {code} in {time.monotonic() - started:.0f} s")
    if code == 5:
        print("pytest collected no tests; that is a failure.")
    return code == 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
