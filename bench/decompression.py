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
The defaults are ``ArchiveConfig``'s, which equal the settings' defaults. Nothing is random.
"""

from __future__ import annotations

import http.server
import json
import subprocess
import sys
import threading
import zlib
from typing import Any

from bench.common import ROOT
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

        def do_GET(self) -> None:  # noqa: N802
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


def main() -> None:
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
        print(f"gzip sizes: 100 MB answer {len(payloads['100mb']):,} bytes, "
              f"1 GiB bomb {len(payloads['1gib']):,} bytes")  # fmt: skip
        for title, payload, kind, cap in cases:
            args = {
                "base": f"http://127.0.0.1:{server.server_address[1]}/{payload}",
                "redis": redis_server.url(),
                "kind": kind,
                "caps": {"max_cdx_bytes": cap} if kind == "cdx" else {},
            }
            done = subprocess.run(
                [sys.executable, "-c", CHILD, json.dumps(args)],
                cwd=ROOT, capture_output=True, text=True, check=True, timeout=600,
            )  # fmt: skip
            figures = json.loads(done.stdout.strip().splitlines()[-1])
            print(
                f"{title} (cap {figures['cap'] / MIB:,.0f} MiB): "
                f"rss before {figures['before'] / MIB:,.0f} MiB, "
                f"peak rss {figures['peak'] / MIB:,.0f} MiB, "
                f"traced peak {figures['traced'] / MIB:,.1f} MiB, "
                f"{figures['seconds']:.1f} s; {figures['outcome'][:110]}"
            )
    finally:
        redis_server.stop()
        server.shutdown()
        server.server_close()


if __name__ == "__main__":
    main()
