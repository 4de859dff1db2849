"""HACS's test runner: static checks, then the pytest suite once per database.

Called by ``scripts/test.sh`` (the README's test command, which ``.ci/run`` calls). Each database
leg starts the servers it needs; a server that cannot start fails the run — no leg is skipped.
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

from scripts.localservers import ServerError, postgres_url, start_postgres  # noqa: E402

PYTHON = sys.executable
PURE_CORE = ["hacs", "hacs_demo"]  # the pure packages, checked with mypy --strict


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
    banner("mypy --strict on the pure core")
    present = [path for path in PURE_CORE if (ROOT / path).exists()]
    if present and run([PYTHON, "-m", "mypy", "--strict", *present]) != 0:
        failures.append("mypy")
    banner("makemigrations --check")
    if run([PYTHON, "manage.py", "makemigrations", "--check", "--dry-run"], env) != 0:
        failures.append("makemigrations --check")

    legs = os.environ.get("HACS_TEST_DATABASES", "sqlite,postgres").split(",")
    for leg in (name.strip() for name in legs if name.strip()):
        banner(f"pytest on {leg}")
        leg_env = dict(env)
        server = None
        started = time.monotonic()
        try:
            if leg == "postgres":
                server = start_postgres()
                leg_env["DATABASE_URL"] = postgres_url(server)
                print(f"PostgreSQL is running on 127.0.0.1:{server.port}", flush=True)
            elif leg == "sqlite":
                leg_env["DATABASE_URL"] = "sqlite:///var/test-run.sqlite3"
            else:
                print(f"Unknown database leg {leg!r}; use sqlite and/or postgres.")
                failures.append(f"unknown leg {leg}")
                continue
            code = run([PYTHON, "-m", "pytest", "-p", "no:cacheprovider", *pytest_args], leg_env)
        except ServerError as error:
            print(f"Could not start the {leg} server: {error}", flush=True)
            code = 1
        finally:
            if server is not None:
                server.stop()
        print(f"pytest on {leg}: exit code {code} in {time.monotonic() - started:.0f} s")
        if code == 5:
            print("pytest collected no tests; that is a failure.")
        if code != 0:
            failures.append(f"pytest on {leg}")

    banner("summary")
    if failures:
        print("FAILED: " + ", ".join(failures))
        return 1
    print("All checks and both database legs passed.")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
