"""A long line costs no more memory than the bound it is read with: CDX files and WARC headers.

Before, a 2.1 MB ``.cdx.gz`` holding one 2 GiB line peaked at 4.40 GB, and a 1 MB WARC with a
1 GiB header line at 3.36 GB: each line was read whole (``bench.decompression`` prints both
files' figures). Here the lines are 64 MiB, compressed to a few dozen KB; Python's allocations
while reading are traced (``tracemalloc``: no timing, a count of bytes) and must stay far below
the line's size, which reading it whole costs several times over.
"""

from __future__ import annotations

import io
import tracemalloc
import zlib
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from typing import Any

import pytest
from warcio.statusandheaders import StatusAndHeaders
from warcio.warcwriter import WARCWriter

from hacs.formats.cdx import (
    MAX_JSON_CHARS,
    MAX_LINE_CHARS,
    CdxError,
    CdxStats,
    RowLimits,
    read_cdx_file,
)
from hacs.formats.warc import MAX_HEADER_BYTES, MAX_HEADER_LINE, WarcError, WarcStats, read_warc

LIMITS = RowLimits.until_tomorrow(datetime(2026, 11, 24, tzinfo=UTC))
MIB = 1024 * 1024
LONG = 64 * MIB
BOUNDED = 16 * MIB  # what reading a CDX file may allocate at its peak: a quarter of the line
# warcio decompresses 16 KiB of a gzip member at a time, up to 16.5 MB of bytes as repeated as
# these: a WARC is read in at most three such blocks' worth, whatever the line's length.
BOUNDED_WARC = LONG
LINE = "edu,a)/~bar/{n} 20170101000000 http://a.edu/~bar/{n} text/html 200 ABC 1000"


def gzip_of(parts: Iterator[bytes]) -> bytes:
    """The gzip of the parts' bytes, compressed a part at a time (never held whole)."""
    packer = zlib.compressobj(6, zlib.DEFLATED, 31)
    return b"".join(packer.compress(part) for part in parts) + packer.flush()


def repeated(byte: bytes, size: int) -> Iterator[bytes]:
    block = byte * MIB
    for done in range(0, size, MIB):
        yield block[: min(MIB, size - done)]


def traced_peak(read: Callable[[], Any]) -> tuple[Any, int]:
    """What ``read`` returns (or the exception it raised), and the peak of the bytes Python
    allocated meanwhile."""
    tracemalloc.start()
    try:
        try:
            result = read()
        except (CdxError, WarcError) as error:
            result = error
        return result, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


# --- CDX files -------------------------------------------------------------------------------


def cdx_file(long_line: int) -> bytes:
    """Two good lines around one of ``long_line`` characters, gzip-compressed."""
    first, last = LINE.format(n=1).encode(), LINE.format(n=3).encode()
    return gzip_of(iter([first + b"\n", *repeated(b"x", long_line), b"\n" + last + b"\n"]))


def test_a_64_mib_line_of_a_cdx_gz_is_one_bad_line_read_in_bounded_memory() -> None:
    data = cdx_file(LONG)
    stats = CdxStats()
    records, peak = traced_peak(lambda: list(read_cdx_file(io.BytesIO(data), stats, LIMITS)))
    assert [r.original for r in records] == ["http://a.edu/~bar/1", "http://a.edu/~bar/3"]
    assert stats.problems == [(2, f"the line is longer than {MAX_LINE_CHARS:,} characters")]
    assert peak < BOUNDED, f"{peak:,} bytes allocated"


def test_a_long_first_line_is_skipped_and_the_dialect_read_from_its_start() -> None:
    data = gzip_of(iter([*repeated(b"y", 3 * MIB), b"\n", LINE.format(n=2).encode(), b"\n"]))
    stats = CdxStats()
    records = list(read_cdx_file(io.BytesIO(data), stats, LIMITS))
    assert [r.original for r in records] == ["http://a.edu/~bar/2"]
    assert [line for line, _reason in stats.problems] == [1]


def test_a_line_of_exactly_the_limit_is_read_and_one_more_character_is_not() -> None:
    exact = LINE.format(n=1).ljust(MAX_LINE_CHARS)
    over = LINE.format(n=2).ljust(MAX_LINE_CHARS + 1)
    stats = CdxStats()
    data = f"{exact}\n{over}\n".encode()
    records = list(read_cdx_file(io.BytesIO(data), stats, LIMITS))
    assert [r.original for r in records] == ["http://a.edu/~bar/1"]
    assert [line for line, _reason in stats.problems] == [2]


def test_an_ia_json_file_on_one_line_is_read_whole_up_to_its_own_limit() -> None:
    rows = [["urlkey", "timestamp", "original", "mimetype", "statuscode", "digest", "length"]]
    rows += [LINE.format(n=n).split() for n in range(40_000)]  # about 3 MB, one line
    import json

    data = json.dumps(rows).encode()
    assert len(data) > MAX_LINE_CHARS
    records = list(read_cdx_file(io.BytesIO(data), CdxStats(), LIMITS))
    assert len(records) == 40_000


def test_an_ia_json_document_over_its_limit_is_refused_without_being_held() -> None:
    data = gzip_of(iter([b'[["urlkey", "timestamp"]', *repeated(b" ", MAX_JSON_CHARS), b"]"]))
    error, peak = traced_peak(lambda: list(read_cdx_file(io.BytesIO(data), CdxStats(), LIMITS)))
    assert isinstance(error, CdxError)
    assert error.line_number == 1
    assert f"a JSON document longer than {MAX_JSON_CHARS:,} characters" in error.reason
    assert peak < 4 * MAX_JSON_CHARS + 16 * MIB  # the document's bound, once


# --- WARC headers ----------------------------------------------------------------------------


def warc_file(*, warc_header: str = "", http_header: str = "", size: int = LONG) -> bytes:
    """Three gzip-compressed responses, the third holding a WARC or HTTP header line of ``size``
    bytes; the third record's offset follows, in 8 bytes."""
    stream = io.BytesIO()
    writer = WARCWriter(stream, gzip=True, warc_version="WARC/1.0")
    offset = 0
    for n in range(3):
        long = n == 2 and size
        headers = [("Content-Type", "text/html")]
        headers += [(http_header, "h" * size)] if long and http_header else []
        warc_headers = {"WARC-Date": "2017-01-01T00:00:00Z"}
        warc_headers |= {warc_header: "w" * size} if long and warc_header else {}
        body = f"<html><a href='http://x.org/{n}'>{n}</a></html>".encode()
        offset = stream.tell()
        writer.write_record(
            writer.create_warc_record(
                f"http://a.edu/~bar/{n}",
                "response",
                payload=io.BytesIO(body),
                length=len(body),
                http_headers=StatusAndHeaders("200 OK", headers, protocol="HTTP/1.1"),
                warc_headers_dict=warc_headers,
            )
        )
    return stream.getvalue() + offset.to_bytes(8, "big")


def read_long_warc(data: bytes) -> tuple[list[str], WarcStats, Any, int, int]:
    offset = int.from_bytes(data[-8:], "big")
    stats = WarcStats()
    kept: list[str] = []

    def read() -> None:
        for capture in read_warc(io.BytesIO(data[:-8]), max_body=1000, stats=stats, limits=LIMITS):
            kept.append(capture.record.original)

    error, peak = traced_peak(read)
    return kept, stats, error, peak, offset


@pytest.mark.parametrize("where", ["warc_header", "http_header"])
def test_a_64_mib_header_line_ends_the_file_at_its_record_with_the_records_before_kept(
    where: str,
) -> None:
    kept, _stats, error, peak, offset = read_long_warc(warc_file(**{where: "X-Long"}))
    assert kept == ["http://a.edu/~bar/0", "http://a.edu/~bar/1"]
    assert isinstance(error, WarcError)
    assert error.offset == offset
    assert error.reason == (
        f"a record's header line is longer than {MAX_HEADER_LINE:,} bytes: the rest of the file "
        "is not read"
    )
    assert peak < BOUNDED_WARC, f"{peak:,} bytes allocated"


def test_headers_of_many_short_lines_past_their_bound_end_the_file_at_their_record() -> None:
    stream = io.BytesIO()
    writer = WARCWriter(stream, gzip=True, warc_version="WARC/1.0")
    many = [(f"X-Cookie-{n}", "c" * 100) for n in range(MAX_HEADER_BYTES // 100)]
    http = StatusAndHeaders("200 OK", [("Content-Type", "text/html"), *many], protocol="HTTP/1.1")
    body = b"<html></html>"
    writer.write_record(
        writer.create_warc_record(
            "http://a.edu/~bar/",
            "response",
            payload=io.BytesIO(body),
            length=len(body),
            http_headers=http,
            warc_headers_dict={"WARC-Date": "2017-01-01T00:00:00Z"},
        )
    )
    with pytest.raises(WarcError) as raised:
        list(read_warc(io.BytesIO(stream.getvalue()), max_body=1000, limits=LIMITS))
    assert raised.value.offset == 0
    assert f"headers hold more than {MAX_HEADER_BYTES:,} bytes" in raised.value.reason


def test_a_100_kb_header_line_is_read_as_before() -> None:
    data = warc_file(http_header="Set-Cookie", size=100_000)
    kept, stats, error, _peak, _offset = read_long_warc(data)
    assert error is None
    assert kept == [f"http://a.edu/~bar/{n}" for n in range(3)]
    assert stats.skipped == 0
