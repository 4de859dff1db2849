"""What the library's crawlers write, for the read-back tests: WARC files, WACZ files, and a
Heritrix job directory in which WARC files appear as Heritrix writes them.

* :func:`warc_bytes` — a gzip WARC of 200 HTML responses (with links) and other records;
* :func:`wacz_bytes` — a WACZ (ZIP) holding WARC files under ``archive/`` beside an index,
  pages and ``datapackage.json``, written to a seekable file (sizes in the local headers, as
  py-wacz writes it) or streamed (sizes in data descriptors after each entry, as
  browsertrix-crawler and stream-zip write it);
* :class:`HeritrixJob` — ``JOB/YYYYMMDDhhmmss/warcs/`` with a ``latest`` link to the newest
  launch, where a WARC is first written as ``….warc.gz.open`` and renamed when closed.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import zipfile
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from warcio.statusandheaders import StatusAndHeaders
from warcio.warcwriter import WARCWriter


@dataclass(frozen=True)
class Page:
    """One capture a crawler made: a URL at an instant, with the links its HTML holds (or a
    status and type of its own)."""

    url: str
    when: datetime
    links: Sequence[str] = ()
    status: int = 200
    mime: str = "text/html"
    padding: int = 0  # bytes of text that make the body longer
    body: bytes | None = None  # given bytes instead of HTML built from the links


def html(links: Iterable[str], padding: int = 0) -> bytes:
    anchors = "".join(f'<li><a href="{link}">{link}</a></li>' for link in links)
    return f"<html><body><ul>{anchors}</ul><p>{'x' * padding}</p></body></html>".encode()


def warc_bytes(pages: Iterable[Page], *, compress: bool = True) -> bytes:
    stream = io.BytesIO()
    warc_write(stream, pages, compress=compress)
    return stream.getvalue()


def warc_write(
    stream: io.BufferedIOBase | io.BytesIO, pages: Iterable[Page], *, compress: bool = True
) -> None:
    writer = WARCWriter(stream, gzip=compress, warc_version="WARC/1.1")
    for page in pages:
        body = page.body if page.body is not None else html(page.links, page.padding)
        reason = {200: "OK", 301: "Moved Permanently", 404: "Not Found"}.get(page.status, "X")
        http = StatusAndHeaders(
            f"{page.status} {reason}", [("Content-Type", page.mime)], protocol="HTTP/1.1"
        )
        record = writer.create_warc_record(
            page.url,
            "response",
            payload=io.BytesIO(body),
            length=len(body),
            http_headers=http,
            warc_headers_dict={"WARC-Date": page.when.strftime("%Y-%m-%dT%H:%M:%SZ")},
        )
        writer.write_record(record)


class _Unseekable(io.RawIOBase):
    """A write-only stream that cannot seek, so that zipfile writes data descriptors."""

    def __init__(self, sink: io.BytesIO) -> None:
        self.sink = sink

    def writable(self) -> bool:
        return True

    def write(self, data: bytes) -> int:  # type: ignore[override]
        return self.sink.write(data)


def wacz_bytes(
    warcs: dict[str, bytes],
    *,
    streaming: bool = False,
    extra: dict[str, bytes] | None = None,
    stored: bool = True,
) -> bytes:
    """A WACZ: each of ``warcs`` as ``archive/NAME`` (stored, as WACZ writers keep gzip WARCs,
    or deflated), an index, pages and a datapackage; ``extra`` entries are added as given."""
    sink = io.BytesIO()
    target = _Unseekable(sink) if streaming else sink
    method = zipfile.ZIP_STORED if stored else zipfile.ZIP_DEFLATED
    with zipfile.ZipFile(target, "w") as archive:  # type: ignore[arg-type]
        resources = []
        for name, data in warcs.items():
            archive.writestr(zipfile.ZipInfo(f"archive/{name}"), data, compress_type=method)
            resources.append(
                {
                    "name": name,
                    "path": f"archive/{name}",
                    "bytes": len(data),
                    "hash": "sha256:" + hashlib.sha256(data).hexdigest(),
                }
            )
        archive.writestr("indexes/index.cdx", b"", compress_type=zipfile.ZIP_DEFLATED)
        pages = b'{"format": "json-pages-1.0", "id": "pages", "title": "All Pages"}\n'
        archive.writestr("pages/pages.jsonl", pages, compress_type=zipfile.ZIP_DEFLATED)
        for name, data in (extra or {}).items():
            archive.writestr(name, data)
        package = {"profile": "data-package", "wacz_version": "1.1.1", "resources": resources}
        archive.writestr("datapackage.json", json.dumps(package))
    return sink.getvalue()


@dataclass
class HeritrixJob:
    """A Heritrix 3 job directory as a running job leaves it: ``action/``, one directory per
    launch with its ``warcs/``, and ``latest`` pointing to the newest launch."""

    path: Path
    launches: list[str] = field(default_factory=list)
    serial: int = 0

    def __post_init__(self) -> None:
        (self.path / "action").mkdir(parents=True, exist_ok=True)

    def launch(self, stamp: str) -> Path:
        warcs = self.path / stamp / "warcs"
        warcs.mkdir(parents=True)
        self.launches.append(stamp)
        latest = self.path / "latest"
        if latest.is_symlink():
            latest.unlink()
        latest.symlink_to(stamp)
        return warcs

    def open_warc(self, pages: Iterable[Page]) -> Path:
        """A WARC being written: ``….warc.gz.open`` in the newest launch's ``warcs/``."""
        self.serial += 1
        name = f"HACS-{self.launches[-1]}-{self.serial:05d}-4242~crawler~8443.warc.gz.open"
        path = self.path / self.launches[-1] / "warcs" / name
        path.write_bytes(warc_bytes(pages))
        return path

    def close_warc(self, path: Path) -> Path:
        """Heritrix closes a WARC by renaming it without ``.open``."""
        done = path.with_name(path.name.removesuffix(".open"))
        os.replace(path, done)
        return done

    def write_warc(self, pages: Iterable[Page]) -> Path:
        return self.close_warc(self.open_warc(pages))
