"""Logins and pages during imports, on the embedded default (SQLite): requests, errors, latency.

Run from the project root: ``.venv/bin/python -m bench.login_load [--sites 1000] [--uploaded 200]
[--clients 20] [--seconds 180] [--seed 0]``. It starts HACS as ``scripts/run.py`` does (its web
server, three workers, two of them taking imports, and the cron scheduler) on a new SQLite
database, with a fake Internet Archive (``testbed.ia_server``) serving a synthetic
collection (``bench.collection``, ``--seed``, its history ending today) at rates that never wait,
so the imports write as fast as they can. Then, at once:

* a terminal imports ``--sites`` new seeds' archive history (``import_seeds``, then
  ``import_archive``, in-process, as a librarian at a terminal does): a first import fetches
  contents and finishes sites as their last one arrives, many at once;
* a librarian uploads ``--uploaded`` other seeds on the Upload page (*Add and import*), which
  the two import workers import, one job a site;
* ``--clients`` users log in, open the Overview, Sites, a site's page, Jobs and the Crawl list,
  log out, and start again, for ``--seconds``; every 30 s the librarian checks a seed list.

It prints the requests made, the errors (an answer other than the page's, or none within 60 s),
the latency percentiles of each kind of request (a login's include hashing its password, a
second of CPU by design), how long a write waited for SQLite's lock (a transaction begun and
ended every 0.2 s from outside HACS: what a login's writes wait at least), how far the imports
got, and the tracebacks in the servers' output.
"""

from __future__ import annotations

import random
import re
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
from collections import defaultdict
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import Any

import numpy as np
import requests

from bench.collection import Collection, CollectionSpec
from bench.common import ROOT, bench_parser, fake_archive_env, last_json, manage, run_python
from scripts.localservers import free_port, start_redis

PASSWORD = "a long bench password"
PAGES = ["/", "/sites/", "/jobs/", "/crawl-list/"]
SITES_OPENED = 25  # the site pages the clients open: the first sites stored
USERS_SCRIPT = r"""
import sys, django
django.setup()
from django.contrib.auth import get_user_model
from dashboard.roles import make_librarian
User = get_user_model()
for n in range(int(sys.argv[1])):
    User.objects.create_user(f"reader{n}", password=sys.argv[2])
make_librarian(User.objects.create_user("curator", password=sys.argv[2]))
"""
PROGRESS_SCRIPT = r"""
import json, django
django.setup()
from django.db.models import Count
from archive.models import Site
print(json.dumps(dict(Site.objects.values_list("import_status").annotate(n=Count("pk")))))
"""


@dataclass
class Tally:
    """Each request's latency by kind, and the failures, shared by the client threads."""

    latencies: dict[str, list[float]] = field(default_factory=lambda: defaultdict(list))
    waits: list[float] = field(default_factory=list)  # of a write, for SQLite's lock
    errors: list[str] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def timed(
        self, kind: str, session: requests.Session, method: str, url: str, expect: int, **kw: Any
    ) -> requests.Response | None:
        started = time.perf_counter()
        try:
            answer = session.request(method, url, timeout=60, allow_redirects=False, **kw)
        except requests.RequestException as error:
            answer, problem = None, f"{method} {url}: {type(error).__name__}"
        else:
            status = answer.status_code
            problem = "" if status == expect else f"{method} {url}: {status}"
        with self.lock:
            self.latencies[kind].append(time.perf_counter() - started)
            if problem:
                self.errors.append(problem)
        return answer if not problem else None


def token_of(answer: requests.Response | None) -> str:
    found = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', answer.text if answer else "")
    return found[1] if found else ""


def browse(base: str, username: str, tally: Tally, until: float, rng: random.Random) -> None:
    """Log in, open the pages and a site, log out; again until ``until``."""
    while time.monotonic() < until:
        session = requests.Session()
        login = tally.timed("login page", session, "GET", f"{base}/accounts/login/", 200)
        form = {"username": username, "password": PASSWORD, "csrfmiddlewaretoken": token_of(login)}
        if (
            tally.timed("log in", session, "POST", f"{base}/accounts/login/", 302, data=form)
            is None
        ):
            continue
        for page in PAGES:
            tally.timed("pages", session, "GET", base + page, 200)
        site = rng.randint(1, SITES_OPENED)  # among the terminal's seeds, stored first
        tally.timed("pages", session, "GET", f"{base}/sites/{site}/", 200)
        csrf = session.cookies.get("csrftoken", "")
        tally.timed(
            "log out",
            session,
            "POST",
            f"{base}/accounts/logout/",
            302,
            data={"csrfmiddlewaretoken": csrf},
        )


def upload(base: str, seeds: list[str], tally: Tally, until: float | None) -> None:
    """The librarian adds ``seeds`` and starts their import (``until`` None), or checks them
    every 30 s until ``until``."""
    session = requests.Session()
    login = tally.timed("login page", session, "GET", f"{base}/accounts/login/", 200)
    form = {"username": "curator", "password": PASSWORD, "csrfmiddlewaretoken": token_of(login)}
    tally.timed("log in", session, "POST", f"{base}/accounts/login/", 302, data=form)
    data = "\n".join(seeds).encode()
    while True:
        fields = {
            "csrfmiddlewaretoken": session.cookies.get("csrftoken", ""),
            "action": "check" if until else "import",
            "import_history": "on",
        }
        tally.timed(
            "upload",
            session,
            "POST",
            f"{base}/sites/upload/",
            200,
            data=fields,
            files={"file": ("seeds.txt", data, "text/plain")},
        )
        if until is None or time.monotonic() + 30 > until:
            return
        time.sleep(30)


def lock_waits(database: Path, tally: Tally, until: float) -> None:
    """How long a write waits for SQLite's lock: every 0.2 s, a transaction begun as HACS
    begins one (IMMEDIATE) and ended at once, timed from outside HACS."""
    db = sqlite3.connect(database, timeout=60, isolation_level=None)
    try:
        while time.monotonic() < until:
            started = time.perf_counter()
            try:
                db.execute("BEGIN IMMEDIATE")
                db.execute("ROLLBACK")
            except sqlite3.OperationalError:
                with tally.lock:
                    tally.errors.append("a write waited over 60 s for the database")
            with tally.lock:
                tally.waits.append(time.perf_counter() - started)
            time.sleep(0.2)
    finally:
        db.close()


def percentile(values: list[float], q: float) -> float:
    return float(np.percentile(values, q)) if values else float("nan")


def wait_for(process: subprocess.Popen[str], pattern: str, log: Path) -> str:
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        text = log.read_text(errors="replace")
        found = re.search(pattern, text)
        if found:
            return found[0]
        if process.poll() is not None:
            break
        time.sleep(0.5)
    raise SystemExit(f"HACS did not start:\n{log.read_text(errors='replace')[-3000:]}")


def main() -> None:
    parser = bench_parser(
        __doc__, sites=1000, demo=False, sites_help="imported at a terminal (≥ 25)"
    )
    parser.add_argument("--uploaded", type=int, default=200, help="uploaded, imported by workers")
    parser.add_argument("--clients", type=int, default=20)
    parser.add_argument("--seconds", type=int, default=180)
    options = parser.parse_args()
    from testbed.ia_server import IAArchive

    today = time.gmtime()
    end = __import__("datetime").date(today.tm_year, today.tm_mon, today.tm_mday)
    total = options.sites + options.uploaded
    collection = Collection(
        CollectionSpec(seeds=total, seed=options.seed, start=end - timedelta(days=6 * 365), end=end)
    )
    urls = [seed.url for seed in collection.seeds]
    rng = random.Random(options.seed)
    rng.shuffle(urls)
    terminal_seeds, uploaded_seeds = urls[: options.sites], urls[options.sites :]
    print(
        f"Collection: {total:,} seeds (seed {options.seed}); {options.sites:,} imported at a "
        f"terminal, {options.uploaded:,} uploaded; {options.clients} clients for "
        f"{options.seconds} s"
    )
    with (
        tempfile.TemporaryDirectory(prefix="hacs-login-load-") as name,
        start_redis() as redis,
        IAArchive(gzip=True, body_for=collection.body_for) as archive,
    ):
        archive.add_lines(collection.history_lines())
        run(Path(name), redis.url(), archive, terminal_seeds, uploaded_seeds, options)


def run(
    tmp: Path,
    redis_url: str,
    archive: Any,
    terminal_seeds: list[str],
    uploaded_seeds: list[str],
    options: Any,
) -> None:
    port = free_port()
    env = {
        **fake_archive_env(archive, redis_url, tmp / "hacs.sqlite3"),
        "HACS_VAR_DIR": str(tmp),
        "HACS_DEMO": "0",
        "HACS_ADMIN_PASSWORD": PASSWORD,
        "PYTHONUNBUFFERED": "1",
    }
    log = tmp / "run.log"
    with open(log, "w") as out:
        hacs = subprocess.Popen(
            [
                sys.executable,
                str(ROOT / "scripts" / "run.py"),
                "--port",
                str(port),
                "--workers",
                "3",
            ],
            cwd=ROOT,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            text=True,
        )
    try:
        wait_for(hacs, r"HACS is running at", log)
        _prepare(tmp, env, terminal_seeds, options)
        tally, took = Tally(), Took()
        measure(f"http://127.0.0.1:{port}", tmp, env, uploaded_seeds, tally, took, options)
        progress = last_json(run_python(env, "-c", PROGRESS_SCRIPT))
    finally:
        hacs.terminate()
        hacs.wait(timeout=120)
    ended = f"finished in {took.seconds:.0f} s" if took.seconds else "still running at the end"
    print(f"the terminal's import of {len(terminal_seeds):,} sites: {ended}")
    report(tally, progress, [log, tmp / "terminal.log"], options)


def _prepare(tmp: Path, env: dict[str, str], terminal_seeds: list[str], options: Any) -> None:
    """The clients' users, and the terminal's seeds imported (``import_seeds``)."""
    subprocess.run(
        [sys.executable, "-c", USERS_SCRIPT, str(options.clients), PASSWORD],
        env=env,
        cwd=ROOT,
        check=True,
    )
    (tmp / "terminal.txt").write_text("\n".join(terminal_seeds) + "\n")
    manage(env, "import_seeds", str(tmp / "terminal.txt"))


@dataclass
class Took:
    """How long the terminal's import took (0 while it runs)."""

    seconds: float = 0.0


def terminal(env: dict[str, str], log: Path, until: float, took: Took) -> None:
    """``import_archive`` of the terminal's sites; stopped at ``until`` if it still runs."""
    started = time.monotonic()
    with open(log, "w") as out:
        process = subprocess.Popen(
            [sys.executable, "manage.py", "import_archive"],
            env=env,
            cwd=ROOT,
            stdout=out,
            stderr=subprocess.STDOUT,
        )
        try:
            process.wait(timeout=max(until - time.monotonic(), 0.1))
            took.seconds = time.monotonic() - started
        except subprocess.TimeoutExpired:
            process.terminate()
            process.wait(timeout=60)


def measure(
    base: str,
    tmp: Path,
    env: dict[str, str],
    uploaded_seeds: list[str],
    tally: Tally,
    took: Took,
    options: Any,
) -> None:
    """The terminal's import, the librarian's upload and checks, the clients and the lock's
    timer, for ``options.seconds``."""
    until = time.monotonic() + options.seconds
    threads = [threading.Thread(target=terminal, args=(env, tmp / "terminal.log", until, took))]
    threads[0].start()
    upload(base, uploaded_seeds, tally, None)  # the workers' imports
    threads += [
        threading.Thread(
            target=browse, args=(base, f"reader{n}", tally, until, random.Random(options.seed + n))
        )
        for n in range(options.clients)
    ]
    threads.append(threading.Thread(target=upload, args=(base, uploaded_seeds[:50], tally, until)))
    threads.append(threading.Thread(target=lock_waits, args=(tmp / "hacs.sqlite3", tally, until)))
    for thread in threads[1:]:
        thread.start()
    for thread in threads:
        thread.join()


def report(tally: Tally, progress: dict[str, int], logs: list[Path], options: Any) -> None:
    values = [v for kind in tally.latencies.values() for v in kind]
    print(f"requests: {len(values):,}; errors: {len(tally.errors)}")
    for error in sorted(set(tally.errors))[:20]:
        print(f"  {error} ({tally.errors.count(error)}×)")
    for kind, times in [("all", values), *sorted(tally.latencies.items())]:
        print(
            f"latency (s), {kind} ({len(times):,}): "
            + ", ".join(f"p{q} {percentile(times, q):.2f}" for q in (50, 90, 99))
            + f", max {max(times, default=float('nan')):.2f}"
        )
    waits = tally.waits
    print(
        f"a write's wait for the database lock ({len(waits):,} tries, one every 0.2 s): "
        + ", ".join(f"p{q} {percentile(waits, q):.2f}" for q in (50, 90, 99))
        + f", max {max(waits, default=float('nan')):.2f} s"
    )
    print(f"sites by import status at the end: {progress}")
    tracebacks = sum(path.read_text(errors="replace").count("Traceback") for path in logs)
    locked = sum(path.read_text(errors="replace").count("database is locked") for path in logs)
    print(f"tracebacks in the servers' output: {tracebacks}; 'database is locked': {locked}")
    print(
        f"repeat with: python -m bench.login_load --sites {options.sites} --uploaded "
        f"{options.uploaded} --clients {options.clients} --seconds {options.seconds} "
        f"--seed {options.seed}"
    )


if __name__ == "__main__":
    main()
