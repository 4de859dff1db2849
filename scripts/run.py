"""Run HACS locally: Redis, migrations, an admin login, demo data, workers and the web server.

Started by ``scripts/run.sh`` after the virtualenv exists. Everything it starts runs in its own
process group and is stopped on Ctrl-C (SIGINT) or SIGTERM, Redis last so that workers can finish
writing their state.

While it runs, ``var/run.env`` holds its ``REDIS_URL`` (and ``DATABASE_URL`` when one was given),
which the settings read when the environment does not set them: ``manage.py`` in a second
terminal talks to the same Redis and database. The Redis it starts asks for a password, new at
each start, which only ``var/`` (owner-only) and the environment of the processes it starts hold.
"""

from __future__ import annotations

import argparse
import os
import secrets
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import NoReturn

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from scripts.localservers import LocalServer, ServerError, free_port, port_open, start_redis  # noqa: E402

PYTHON = sys.executable
# The queues in the order a worker serves them (jobs.services.QUEUE_PRIORITY): health checks,
# crawl lists and recomputes, evaluations, then imports. The first worker never takes imports,
# so that a crawl list or an evaluation never waits behind an import of thousands of sites.
LIST_QUEUES = ["default", "estimation", "evaluation"]
QUEUES = [*LIST_QUEUES, "import"]


def worker_queues(n: int, workers: int) -> list[str]:
    """The queues worker ``n`` of ``workers`` serves."""
    return LIST_QUEUES if workers > 1 and n == 0 else QUEUES


def web_timeout(env: dict[str, str]) -> int:
    """Seconds the web server lets one request run. "Hand off now" reaches Browsertrix within
    the request, all its requests (a login, the upload, the workflow's seed file, the start)
    ending within ``HACS_HTTP_DEADLINE`` together: the request must outlive that deadline, or
    the web server stops it half-way and the librarian learns nothing of what was sent."""
    try:
        deadline = float(env.get("HACS_HTTP_DEADLINE", "60"))
    except ValueError:  # the settings name the bad value when migrations run
        deadline = 60.0
    return max(120, int(deadline) + 30)


#: The web server's processes and threads each. A thread serves only a request already read
#: whole (``hacs_site.web_worker``), so slow clients hold none; 8 threads a process (4 before)
#: let slow pages (a hand-off reaching Browsertrix, a client reading a page slowly) run beside
#: quick ones, for a little memory and, on PostgreSQL, a connection each.
WEB_PROCESSES, WEB_THREADS = 2, 8


def web_command(port: int, env: dict[str, str]) -> list[str]:
    """The web server's command line, serving on 127.0.0.1:``port``."""
    return [
        str(Path(PYTHON).parent / "gunicorn"),
        "hacs_site.wsgi:application",
        "--bind",
        f"127.0.0.1:{port}",
        "--workers",
        str(WEB_PROCESSES),
        "--threads",
        str(WEB_THREADS),
        "--worker-class",
        "hacs_site.web_worker.RequestReadingWorker",
        "--timeout",
        str(web_timeout(env)),
        "--access-logfile",
        "-",
        "--logger-class",
        "hacs_site.log_redaction.GunicornLogger",
    ]


def write_run_env(path: Path, env: dict[str, str]) -> None:
    """Leave what a second terminal needs where the settings look for it (owner-only: the
    REDIS_URL holds Redis's password, a DATABASE_URL may hold one too)."""
    lines = [f"{name}={env[name]}" for name in ("REDIS_URL", "DATABASE_URL") if env.get(name)]
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    os.fchmod(descriptor, 0o600)  # one left readable by an older version is made private first
    with open(descriptor, "w") as out:
        out.write(
            "# Written by scripts/run.py while HACS runs; removed when it stops.\n"
            + "\n".join(lines)
            + "\n"
        )


def say(message: str) -> None:
    print(f"\033[1m[hacs]\033[0m {message}", flush=True)


def manage(*args: str, env: dict[str, str], check: bool = True) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [PYTHON, str(ROOT / "manage.py"), *args], env=env, cwd=ROOT, text=True, check=check
    )


def spawn(args: list[str], env: dict[str, str]) -> subprocess.Popen[bytes]:
    return subprocess.Popen(args, env=env, cwd=ROOT, start_new_session=True)


def stop(process: subprocess.Popen[bytes], name: str, timeout: float = 20) -> None:
    if process.poll() is not None:
        return
    try:
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            if not name.startswith("worker"):
                raise
            # A worker waits for its job (warm shutdown); a second signal makes it kill its
            # work-horse, which runs in a process group of its own and would outlive SIGKILL.
            say(f"The {name} is still busy; stopping its job (the job will show interrupted).")
            os.kill(process.pid, signal.SIGTERM)
            process.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        say(f"{name} did not stop in {timeout:.0f} s; killing it.")
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()
    except ProcessLookupError:
        pass


def ensure_admin(env: dict[str, str]) -> None:
    """Create the first admin login, from HACS_ADMIN_USER/HACS_ADMIN_PASSWORD or a random one."""
    username = env.get("HACS_ADMIN_USER", "admin")
    password = env.get("HACS_ADMIN_PASSWORD", "")
    generated = not password
    if generated:
        password = secrets.token_urlsafe(12)
    code = (
        "import sys\n"
        "from django.contrib.auth import get_user_model\n"
        "U = get_user_model()\n"
        "u = U.objects.filter(username=sys.argv[1]).first()\n"
        "if u is None:\n"
        "    U.objects.create_superuser(sys.argv[1], '', sys.argv[2]); print('created')\n"
        "elif sys.argv[3] == 'set':\n"
        "    u.set_password(sys.argv[2]); u.save(); print('updated')\n"
        "else:\n"
        "    print('exists')\n"
    )
    out = subprocess.run(
        [
            PYTHON,
            "-c",
            "import django; django.setup(); exec(open(0).read())",
            username,
            password,
            "keep" if generated else "set",
        ],
        input=code,
        env=env,
        cwd=ROOT,
        text=True,
        capture_output=True,
        check=True,
    )
    if out.stdout.strip() == "created" and generated:
        say(f"Created the admin login — user: {username}  password: {password}")
        say("This password is shown only once; change it under Admin → Users.")
    elif out.stdout.strip() == "created":
        say(f"Created the admin login {username} (password from HACS_ADMIN_PASSWORD).")


def load_demo(env: dict[str, str]) -> None:
    """Give a new installation real-looking data: a small synthetic archive, imported."""
    count = subprocess.run(
        [
            PYTHON,
            "-c",
            "import django; django.setup(); from archive.models import Site; "
            "print(Site.objects.count())",
        ],
        env=env,
        cwd=ROOT,
        text=True,
        capture_output=True,
        check=True,
    ).stdout.strip()
    if count != "0":
        return
    say("Loading the demo archive (a synthetic scholarly collection with known truth)…")
    manage("load_demo", env=env)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--port", type=int, default=int(os.environ.get("HACS_PORT", "8000")))
    parser.add_argument("--workers", type=int, default=int(os.environ.get("HACS_WORKERS", "2")))
    parser.add_argument("--no-demo", action="store_true", help="start without demo data")
    options = parser.parse_args()

    env = dict(os.environ)
    env.setdefault("DJANGO_SETTINGS_MODULE", "hacs_site.settings")
    var = Path(env.get("HACS_VAR_DIR", ROOT / "var"))
    var.mkdir(mode=0o700, parents=True, exist_ok=True)

    redis: LocalServer | None = None
    run_env = var / "run.env"
    children: list[tuple[str, subprocess.Popen[bytes]]] = []
    _interrupt_on_signals()
    try:
        if "REDIS_URL" not in env:
            redis = start_redis(var / "redis", persistent=True)
            env["REDIS_URL"] = redis.url()
            say(f"Redis is running on 127.0.0.1:{redis.port} (its password is in {run_env})")
        write_run_env(run_env, env)
        _prepare_site(env, demo=not options.no_demo and env.get("HACS_DEMO", "1") != "0")
        _start_workers(max(options.workers, 1), env, children)
        port = _start_web(options.port, env, children)
        say(f"HACS is running at http://127.0.0.1:{port}/  (Ctrl-C stops it)")
        say(f"manage.py in another terminal uses the same Redis and database ({run_env}).")
        _watch(children)
    except KeyboardInterrupt:
        say("Stopping…")
        return 0
    except (ServerError, subprocess.CalledProcessError) as error:
        say(f"HACS could not run: {error}")
        return 1
    finally:
        for name, process in reversed(children):
            stop(process, name)
        if redis is not None:
            redis.stop()
        run_env.unlink(missing_ok=True)
        say("Stopped.")


def _interrupt_on_signals() -> None:
    """SIGINT and SIGTERM stop HACS: the first raises KeyboardInterrupt, later ones are ignored
    while it stops. Installed explicitly: a shell that starts HACS in the background leaves
    SIGINT ignored."""
    stopping = False

    def on_signal(signum: int, frame: object) -> None:
        nonlocal stopping
        if not stopping:
            stopping = True
            raise KeyboardInterrupt

    signal.signal(signal.SIGINT, on_signal)
    signal.signal(signal.SIGTERM, on_signal)


def _prepare_site(env: dict[str, str], *, demo: bool) -> None:
    """The database migrated, the static files collected, an admin, and the demo if asked."""
    manage("migrate", "--no-input", "--verbosity", "0", env=env)
    say("Database is up to date.")
    # Pages name their CSS, JS and Plotly by content hash, compressed: collected once here.
    manage("collectstatic", "--no-input", "--verbosity", "0", env=env)
    ensure_admin(env)
    if demo:
        load_demo(env)


def _start_workers(
    workers: int, env: dict[str, str], children: list[tuple[str, subprocess.Popen[bytes]]]
) -> None:
    """The job workers and the cron scheduler, added to ``children`` as each starts."""
    # A worker reads jobs as JSON and runs only HACS's job functions, whatever its command
    # line says (settings RQ["WORKER_CLASS"], jobs.services.JobWorker).
    for n in range(workers):
        name = f"hacs-{os.getpid()}-{n}"
        command = [PYTHON, str(ROOT / "manage.py"), "rqworker", *worker_queues(n, workers)]
        worker = spawn([*command, "--with-scheduler", "--name", name], env)
        children.append((f"worker {n}", worker))
    cron = spawn([PYTHON, str(ROOT / "manage.py"), "rqcron", "operations.cron"], env)
    children.append(("cron scheduler", cron))


def _start_web(
    wanted: int, env: dict[str, str], children: list[tuple[str, subprocess.Popen[bytes]]]
) -> int:
    """The web server on port ``wanted``, or a free one when it is busy; its port once it
    answers."""
    port = wanted if not port_open(wanted) else free_port()
    if port != wanted:
        say(f"Port {wanted} is busy; using {port} instead.")
    web = spawn(web_command(port, env), env)
    children.append(("web server", web))
    deadline = time.monotonic() + 30
    while not port_open(port) and time.monotonic() < deadline and web.poll() is None:
        time.sleep(0.1)
    if web.poll() is not None or not port_open(port):
        raise ServerError("The web server did not start; see the messages above.")
    return port


def _watch(children: list[tuple[str, subprocess.Popen[bytes]]]) -> NoReturn:
    """Wait, until a child stops (an error) or a signal stops HACS."""
    while True:
        for name, process in children:
            if process.poll() is not None:
                raise ServerError(f"The {name} stopped (exit code {process.returncode}).")
        time.sleep(1)


if __name__ == "__main__":
    sys.exit(main())
