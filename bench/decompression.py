"""Peak memory of the archive client reading compressed answers: bombs and big accepted ones.

Run from the project root: ``.venv/bin/python -m bench.decompression``. It serves gzip bodies
(``Content-Encoding: gzip``) of NUL bytes from a server on 127.0.0.1 in this process and reads
each one with ``archive.wayback.ArchiveClient`` in a fresh child process (one attempt, no
retries; a throw-away Redis holds the rate limit) as an import does (a CDX answer through
``cdx_pages`` and the CDX parser, a memento through ``fetch_memento``), which prints

* ``rss before``: the child's resident memory after its imports, before the request;
* ``peak rss``: its high-water mark during the request (``VmHWM``, reset just before it
  through ``/proc/self/clear_refs``; ``ru_maxrss`` would also count the parent's memory at
  the fork), so the growth the request caused is the difference;
* ``traced peak``: the peak of memory Python allocated during the request (``tracemalloc``,
  started just before it), which leaves out the interpreter and its imports;
* what the client did with the answer (accepted, or refused with its sentence).

Cases: a 100 MB answer (about 100 KB of gzip) with the default CDX cap and with a cap it fits
under (what an accepted big answer costs), a 1 GiB bomb (about 1 MB of gzip) under a 100 MiB
cap and under the default one, and the same bomb as a memento under the default memento cap.
The defaults are ``ArchiveConfig``'s, which equal the settings' defaults.

Then files with one long line, imported as a librarian imports files, by the ``import_cdx``
and ``import_warc`` commands (``--no-fetch``; a fresh SQLite database, migrated before): a
2.1 MB ``.cdx.gz`` holding a 2 GiB line between two good lines, and a 1 MB ``.warc.gz`` whose
second record holds a 1 GiB header line, among its WARC headers or its HTTP headers. Each
prints the same figures and what the command said. ``--answers`` or ``--files`` runs one half
only. Nothing is random.
"""

from __future__ import annotations

import http.server
import json
import os
import subprocess
import sys
import tempfile
import threading
import uuid
import zlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from bench.common import ROOT, argument_parser, database_env, last_json, manage, run_python
from scripts.localservers import start_redis

MB = 1000 * 1000
MIB = 1024 * 1024

# Run in the child: everything it prints is one JSON line.
CHILD = r"""
import json, sys, time, tracemalloc
import redis
from archive.wayback import ArchiveClient, ArchiveConfig, ArchiveError
from hacs.formats.cdx import parse_cdx

args = json.loads(sys.argv[1])
caps = {k: v for k, v in args["caps"].items() if v is not None}
config = ArchiveConfig(cdx_url=args["base"] + "/cdx", wayback_url=args["base"] + "/web",
                       retries=0, cdx_per_minute=6000, memento_per_minute=6000, **caps)
client = ArchiveClient(config, redis.Redis.from_url(args["redis"]))

def status(field):
    with open("/proc/self/status") as lines:
        kib = next(line.split()[1] for line in lines if line.startswith(field + ":"))
    return int(kib) * 1024

with open("/proc/self/clear_refs", "w") as clear:
    clear.write("5")  # the high-water mark starts again from the present size
before = status("VmRSS")
tracemalloc.start()
started = time.monotonic()
try:
    if args["kind"] == "cdx":
        # As an import reads a query: every page, parsed by the CDX parser as it arrives.
        pages = list(client.cdx_pages("example.edu/~a", lambda text: (parse_cdx(text), None)))
        outcome = (f"accepted ({sum(p.parsed for p in pages):,} records, "
                   f"{sum(p.skipped for p in pages):,} lines skipped)")
    else:
        memento = client.fetch_memento("20170101000000", "http://example.edu/~a/")
        cut = ", cut at the cap" if memento.truncated else ""
        outcome = f"accepted ({len(memento.body):,} bytes{cut})"
except ArchiveError as error:
    outcome = "refused: " + str(error)
seconds = time.monotonic() - started
traced = tracemalloc.get_traced_memory()[1]
peak = status("VmHWM")
print(json.dumps({"before": before, "peak": peak, "traced": traced,
                  "seconds": seconds, "outcome": outcome, "cap": config.max_cdx_bytes
                  if args["kind"] == "cdx" else config.max_memento_bytes}))
"""


# Run in the child for a file: the command's output, and the same figures.
FILE_CHILD = r"""
import io, json, sys, time, tracemalloc
import django
django.setup()
from django.core.management import call_command
from django.core.management.base import CommandError

args = json.loads(sys.argv[1])

def status(field):
    with open("/proc/self/status") as lines:
        kib = next(line.split()[1] for line in lines if line.startswith(field + ":"))
    return int(kib) * 1024

with open("/proc/self/clear_refs", "w") as clear:
    clear.write("5")
before = status("VmRSS")
tracemalloc.start()
started = time.monotonic()
out, err = io.StringIO(), io.StringIO()
extra = ["--no-fetch"] if args["command"] == "import_cdx" else []
try:
    call_command(args["command"], args["file"], *extra, stdout=out, stderr=err)
    outcome = out.getvalue().strip()
except CommandError as error:
    outcome = "refused: " + str(error)
said = " | ".join(line.strip()[:160] for line in err.getvalue().splitlines() if line.strip())
print(json.dumps({"before": before, "peak": status("VmHWM"),
                  "traced": tracemalloc.get_traced_memory()[1],
                  "seconds": time.monotonic() - started, "outcome": outcome, "said": said}))
"""

GOOD_CDX = "edu,example)/~a{n} 20170101000000 http://example.edu/~a{n}/ text/html 200 D{n} 1000\n"


def gzip_of_zeros(size: int) -> bytes:
    """``size`` NUL bytes, gzip-compressed a MiB at a time (the bomb is never held whole)."""
    packer = zlib.compressobj(9, zlib.DEFLATED, 31)
    block = bytes(MIB)
    parts = [packer.compress(block[: min(MIB, size - done)]) for done in range(0, size, MIB)]
    return b"".join(parts) + packer.flush()


def serve(payloads: dict[str, bytes]) -> http.server.ThreadingHTTPServer:
    """Answer ``/<name>/...`` with ``payloads[name]`` as a gzip-encoded 200."""

    class Bomb(http.server.BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:
            return

        def do_GET(self) -> None:
            body = payloads[self.path.split("/")[1]]
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Encoding", "gzip")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            try:
                self.wfile.write(body)
            except OSError:
                pass  # the client stopped reading at its cap

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Bomb)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def gzip_member(parts: Iterator[bytes]) -> bytes:
    """One gzip member of the parts' bytes, compressed as they come (never held whole)."""
    packer = zlib.compressobj(9, zlib.DEFLATED, 31)
    return b"".join(packer.compress(part) for part in parts) + packer.flush()


def long_part(byte: bytes, size: int) -> Iterator[bytes]:
    block = byte * MIB
    for done in range(0, size, MIB):
        yield block[: min(MIB, size - done)]


def cdx_with_a_long_line(size: int) -> bytes:
    """A CDX file: a good line, ``size`` bytes without a line break, a good line; gzipped."""
    first, last = GOOD_CDX.format(n=1).encode(), GOOD_CDX.format(n=2).encode()
    return gzip_member(iter([first, *long_part(b"x", size), b"\n", last]))


def warc_record(target: str, warc_extra: tuple[bytes, int], http_extra: tuple[bytes, int]) -> bytes:
    """A gzipped WARC response record; ``warc_extra`` and ``http_extra`` are a header name and a
    value length (0: none), its value ``size`` bytes of one letter."""
    body = b"<html><a href='http://example.org/'>a</a></html>"
    http_name, http_size = http_extra
    http_head = b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\n"
    http_tail = b"Content-Length: %d\r\n\r\n" % len(body) + body
    block = len(http_head) + len(http_tail) + (len(http_name) + 4 + http_size if http_size else 0)
    warc_name, warc_size = warc_extra
    head = (
        f"WARC/1.0\r\nWARC-Type: response\r\nWARC-Target-URI: {target}\r\n"
        "WARC-Date: 2017-01-01T00:00:00Z\r\n"
        f"WARC-Record-ID: <urn:uuid:{uuid.uuid5(uuid.NAMESPACE_URL, target)}>\r\n"
        "Content-Type: application/http; msgtype=response\r\n"
    ).encode()
    parts: list[Any] = [head]
    if warc_size:
        parts += [warc_name + b": ", long_part(b"w", warc_size), b"\r\n"]
    parts += [b"Content-Length: %d\r\n\r\n" % block, http_head]
    if http_size:
        parts += [http_name + b": ", long_part(b"h", http_size), b"\r\n"]
    parts += [http_tail, b"\r\n\r\n"]
    return gzip_member(p for part in parts for p in ([part] if isinstance(part, bytes) else part))


def warc_with_a_long_header(size: int, *, http: bool) -> bytes:
    """Three records; the second holds a header line of ``size`` bytes (WARC's, or HTTP's)."""
    long = (b"X-Long", size)
    records = [
        warc_record("http://example.edu/~a1/", (b"", 0), (b"", 0)),
        warc_record(
            "http://example.edu/~a2/", (b"", 0) if http else long, long if http else (b"", 0)
        ),
        warc_record("http://example.edu/~a3/", (b"", 0), (b"", 0)),
    ]
    return b"".join(records)


#: The long-line files: (title, file name, the command that imports it, its maker).
FILE_CASES: list[tuple[str, str, str, Callable[[], bytes]]] = [
    (
        "CDX file, one 2 GiB line",
        "long-line.cdx.gz",
        "import_cdx",
        lambda: cdx_with_a_long_line(2 * 1024 * MIB),
    ),
    (
        "WARC file, a 1 GiB WARC header line",
        "long-warc-header.warc.gz",
        "import_warc",
        lambda: warc_with_a_long_header(1024 * MIB, http=False),
    ),
    (
        "WARC file, a 1 GiB HTTP header line",
        "long-http-header.warc.gz",
        "import_warc",
        lambda: warc_with_a_long_header(1024 * MIB, http=True),
    ),
]


def file_cases(directory: Path) -> None:
    """The long-line files, each imported by its command in a fresh child process."""
    env = database_env(directory / "bench.sqlite3", directory)
    subprocess.run(
        [sys.executable, str(ROOT / "manage.py"), "migrate", "--verbosity", "0"],
        cwd=ROOT,
        env=env,
        check=True,
    )
    seeds = directory / "seeds.txt"
    seeds.write_text("".join(f"http://example.edu/~a{n}/\n" for n in (1, 2, 3)))
    manage(env, "import_seeds", str(seeds))
    for title, name, command, make in FILE_CASES:
        path = directory / name
        path.write_bytes(make())
        child = json.dumps({"command": command, "file": str(path)})
        figures = last_json(run_python(env, "-c", FILE_CHILD, child, timeout=1800))
        print(
            f"{title} ({path.stat().st_size / MB:.1f} MB, {command}): {_memory(figures)}; "
            f"{figures['outcome'][:160]}"
        )
        if figures["said"]:
            print(f"  {figures['said'][:300]}")
        path.unlink()


def _memory(figures: dict[str, Any]) -> str:
    """A child's memory and time, as the bench prints them."""
    return (
        f"rss before {figures['before'] / MIB:,.0f} MiB, "
        f"peak rss {figures['peak'] / MIB:,.0f} MiB, "
        f"traced peak {figures['traced'] / MIB:,.1f} MiB, {figures['seconds']:.1f} s"
    )


def main() -> None:
    parser = argument_parser(__doc__)
    half = parser.add_mutually_exclusive_group()
    half.add_argument("--answers", action="store_true", help="only the archive's answers")
    half.add_argument("--files", action="store_true", help="only the long-line files")
    options = parser.parse_args()
    if not options.files:
        answers()
    if not options.answers:
        with tempfile.TemporaryDirectory(prefix="hacs-bench-") as name:
            file_cases(Path(name))


def answers() -> None:
    payloads = {"100mb": gzip_of_zeros(100 * MB), "1gib": gzip_of_zeros(1024 * MIB)}
    cases = [
        ("100 MB answer, default CDX cap", "100mb", "cdx", None),
        ("100 MB answer, CDX cap 128 MiB", "100mb", "cdx", 128 * MIB),
        ("1 GiB bomb, CDX cap 100 MiB", "1gib", "cdx", 100 * MIB),
        ("1 GiB bomb, default CDX cap", "1gib", "cdx", None),
        ("1 GiB bomb as a memento, default memento cap", "1gib", "memento", None),
    ]
    server = serve(payloads)
    redis_server = start_redis()
    try:
        print(
            f"gzip sizes: 100 MB answer {len(payloads['100mb']):,} bytes, "
            f"1 GiB bomb {len(payloads['1gib']):,} bytes"
        )
        for title, payload, kind, cap in cases:
            args = {
                "base": f"http://127.0.0.1:{server.server_address[1]}/{payload}",
                "redis": redis_server.url(),
                "kind": kind,
                "caps": {"max_cdx_bytes": cap} if kind == "cdx" else {},
            }
            figures = last_json(run_python(os.environ, "-c", CHILD, json.dumps(args), timeout=600))
            print(
                f"{title} (cap {figures['cap'] / MIB:,.0f} MiB): {_memory(figures)}; "
                f"{figures['outcome'][:110]}"
            )
    finally:
        redis_server.stop()
        server.shutdown()
        server.server_close()


if __name__ == "__main__":
    main()
