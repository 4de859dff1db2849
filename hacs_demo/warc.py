"""``demo.warc.gz``: a ``warcinfo`` record, then every capture as a WARC/1.0 record.

Records are ``response`` and ``revisit`` records, one gzip member each, in crawl (time) order.
There are no ``request`` records: pywb's indexer (``cdx-indexer``, ``wb-manager add``) only
reads them to append POST bodies to the urlkey, and every capture here is a GET.
"""

from __future__ import annotations

import hashlib
import io
import uuid
from pathlib import Path
from typing import Any

from warcio.statusandheaders import StatusAndHeaders
from warcio.warcwriter import WARCWriter

from hacs_demo.model import Capture
from hacs_demo.responses import resolve
from hacs_demo.world import World

_REASONS = {
    200: "OK",
    301: "Moved Permanently",
    302: "Found",
    404: "Not Found",
    503: "Service Unavailable",
}


def write_warc(world: World, path: Path) -> list[Capture]:
    """Write every site's planned captures; returns them in WARC order, with their offsets."""
    plans = [c for s in world.sites for c in s.captures]
    # A crawl writes in time order; ties broken by site then plan order (stable sort).
    plans.sort(key=lambda c: (c.sec, c.site))
    with open(path, "wb") as f:
        writer = WARCWriter(f, gzip=True, warc_version="WARC/1.0")
        writer.write_record(_warcinfo(world, writer, path.name))
        for n, cap in enumerate(plans, start=1):
            resolve(world.sites[cap.site], cap)
            cap.offset = f.tell()
            writer.write_record(_record(world, writer, cap, n))
            cap.length = f.tell() - cap.offset
            cap.body = b""  # not needed any more; keeps memory flat at 500 sites
    return plans


def _warcinfo(world: World, writer: WARCWriter, path_name: str) -> Any:
    span = world.span
    info = (
        "software: hacs archive.demo\r\n"
        "format: WARC File Format 1.0\r\n"
        f"description: synthetic scholarly web archive, seed={world.seed}, "
        f"sites={len(world.sites)}, {span.start}..{span.end}\r\n"
        "isPartOf: hacs-demo\r\n"
    ).encode()
    return writer.create_warc_record(
        "",
        "warcinfo",
        payload=io.BytesIO(info),
        length=len(info),
        warc_content_type="application/warc-fields",
        warc_headers_dict={
            "WARC-Record-ID": record_id(world.seed, 0),
            "WARC-Date": span.iso(0),
            "WARC-Filename": path_name,
        },
    )


def record_id(seed: int, n: int) -> str:
    """The ``n``-th record's ``WARC-Record-ID``: a UUID derived from the seed, not random."""
    raw = hashlib.blake2b(f"hacs-demo/{seed}/{n}".encode(), digest_size=16).digest()
    return f"<urn:uuid:{uuid.UUID(bytes=raw, version=4)}>"


def _record(world: World, writer: WARCWriter, cap: Capture, n: int) -> Any:
    http_headers = StatusAndHeaders(
        f"{cap.status} {_REASONS[cap.status]}", cap.http_headers, protocol="HTTP/1.1"
    )
    headers = {
        "WARC-Record-ID": record_id(world.seed, n),
        "WARC-Date": world.span.iso(cap.sec),
        "WARC-IP-Address": world.sites[cap.site].author.ip,
    }
    if cap.record_type == "revisit":
        refers = cap.refers_to_url_date
        return writer.create_revisit_record(
            cap.url,
            digest="sha1:" + cap.digest,
            refers_to_uri=refers[0],
            refers_to_date=refers[1],
            http_headers=http_headers,
            warc_headers_dict=headers,
        )
    headers["WARC-Payload-Digest"] = "sha1:" + cap.digest
    return writer.create_warc_record(
        cap.url,
        "response",
        payload=io.BytesIO(cap.body),
        length=len(cap.body),
        http_headers=http_headers,
        warc_headers_dict=headers,
    )
