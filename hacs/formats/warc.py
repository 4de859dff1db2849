"""Reading WARC files: each response or revisit record as a CDX record, with its HTML body.

Pure (warcio and the CDX reader): HACS imports WARC files a crawler wrote, or that an archive
exported, exactly as it imports CDX rows, and parses the pages' links from the same pass.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime
from typing import BinaryIO

from warcio.archiveiterator import ArchiveIterator

from hacs.formats import cdx
from hacs.formats.canon import canonical_url

__all__ = ["WarcCapture", "read_warc"]


@dataclass
class WarcCapture:
    record: cdx.CdxRecord
    body: bytes | None
    content_type: str | None


def read_warc(stream: BinaryIO, *, max_body: int) -> Iterator[WarcCapture]:
    """Captures (responses and revisits) of a WARC file, with the HTML body of 200 responses.

    ``length`` is the record's compressed length in the file, as CDX indexers print it.
    """
    iterator = ArchiveIterator(stream)
    for record in iterator:
        if record.rec_type not in ("response", "revisit"):
            continue
        url = record.rec_headers.get_header("WARC-Target-URI") or ""
        date = record.rec_headers.get_header("WARC-Date") or ""
        try:
            moment = _warc_date(date)
            urlkey = canonical_url(url)
        except ValueError:
            continue
        http = record.http_headers
        status = int(http.get_statuscode()) if http is not None and http.get_statuscode() else None
        content_type = http.get_header("Content-Type") if http is not None else None
        digest = cdx.bare_digest(record.rec_headers.get_header("WARC-Payload-Digest") or "-")
        body: bytes | None = None
        if record.rec_type == "revisit":
            mimetype = cdx.REVISIT_TYPE
        else:
            mimetype = (content_type or "unk").partition(";")[0].strip().lower() or "unk"
            if status == 200 and cdx.is_html_type(mimetype):
                body = record.content_stream().read(max_body + 1)
        iterator.read_to_end(record)
        length = iterator.get_record_length()
        yield WarcCapture(
            record=cdx.CdxRecord(
                urlkey=urlkey, timestamp=moment, original=url, mimetype=mimetype,
                status=status, digest=digest, length=length,
            ),
            body=body,
            content_type=content_type,
        )  # fmt: skip


def _warc_date(text: str) -> datetime:
    digits = "".join(ch for ch in text if ch.isdigit())[:14]
    return cdx.parse_timestamp(digits)
