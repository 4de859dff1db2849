"""hacs.formats.warc: captures streamed from WARC files, bad records counted, damage located.

Importing them into the database (batches stored as they arrive, the next file still run) is
tested in ``tests/test_bad_input.py``.
"""

from __future__ import annotations

import io
import random
from datetime import UTC, datetime

import pytest
from warcio.statusandheaders import StatusAndHeaders
from warcio.warcwriter import WARCWriter

from hacs.formats.cdx import RowLimits
from hacs.formats.warc import WarcCapture, WarcError, WarcStats, read_warc

LIMITS = RowLimits.until_tomorrow(datetime(2026, 11, 24, tzinfo=UTC))


def warc(dates: list[str], *, compress: bool = True) -> tuple[bytes, list[int]]:
    """A WARC of 200 HTML responses, one per WARC-Date, and where each record ends."""
    stream = io.BytesIO()
    writer = WARCWriter(stream, gzip=compress, warc_version="WARC/1.0")
    ends = []
    for n, date in enumerate(dates):
        body = f"<html><a href='http://x.org/{n}'>{n}</a>{'x' * 300}</html>".encode()
        http = StatusAndHeaders("200 OK", [("Content-Type", "text/html")], protocol="HTTP/1.1")
        record = writer.create_warc_record(
            f"http://a.edu/~bar/{n}",
            "response",
            payload=io.BytesIO(body),
            length=len(body),
            http_headers=http,
            warc_headers_dict={"WARC-Date": date},
        )
        writer.write_record(record)
        ends.append(stream.tell())
    return stream.getvalue(), ends


TEN = [f"2017-01-{day:02d}T00:00:00Z" for day in range(1, 11)]


def read(data: bytes, stats: WarcStats | None = None) -> list[WarcCapture]:
    return list(read_warc(io.BytesIO(data), max_body=1000, stats=stats, limits=LIMITS))


@pytest.mark.parametrize("compress", [True, False])
def test_it_reads_every_response_with_its_offset_and_length(compress: bool) -> None:
    data, ends = warc(TEN, compress=compress)
    captures = read(data)
    assert [c.record.original for c in captures] == [f"http://a.edu/~bar/{n}" for n in range(10)]
    assert [c.offset for c in captures] == [0, *ends[:-1]]
    assert all(c.body is not None and c.body.startswith(b"<html>") for c in captures)
    if compress:  # a gzip member's length is the whole member
        starts = [0, *ends[:-1]]
        assert [c.record.length for c in captures] == [
            end - start for start, end in zip(starts, ends, strict=True)
        ]


@pytest.mark.parametrize("compress", [True, False])
def test_garbage_after_good_records_is_damage_at_its_offset_after_the_good_ones(
    compress: bool,
) -> None:
    data, ends = warc(TEN, compress=compress)
    got: list[WarcCapture] = []
    with pytest.raises(WarcError) as raised:
        got.extend(read_warc(io.BytesIO(data + random.Random(5).randbytes(5000)), max_body=1000))
    assert len(got) == 10
    assert raised.value.reason == "not a WARC record (Invalid WARC record)"
    assert raised.value.offset == (ends[-1] if compress else ends[-1] - 4)


@pytest.mark.parametrize("compress", [True, False])
def test_every_cut_of_a_file_is_found_and_only_complete_records_are_yielded(compress: bool) -> None:
    """Cut the file at every byte: warcio alone ends quietly on most of these cuts."""
    data, ends = warc(TEN[:3], compress=compress)
    blank = 0 if compress else 4  # an uncompressed record is followed by two blank lines
    for cut in range(1, len(data)):
        got: list[WarcCapture] = []
        try:
            got.extend(read_warc(io.BytesIO(data[:cut]), max_body=1000))
        except WarcError as error:
            assert "truncated" in error.reason or "not a WARC record" in error.reason, cut
            at_boundary = False
        else:
            at_boundary = True
        complete = sum(1 for end in ends if end - blank <= cut)
        assert len(got) == complete, cut
        assert at_boundary == any(end - blank <= cut <= end for end in ends), cut


def test_records_that_cannot_be_captures_are_counted_with_their_offsets() -> None:
    data, ends = warc(
        ["2017-01-01T00:00:00Z", "2017-13-45T00:00:00Z", "2099-01-01T00:00:00Z", TEN[3]]
    )
    stats = WarcStats()
    captures = read(data, stats)
    assert [c.record.original for c in captures] == ["http://a.edu/~bar/0", "http://a.edu/~bar/3"]
    assert (stats.captures, stats.skipped) == (2, 2)
    assert [offset for offset, _why in stats.problems] == ends[:2]
    assert stats.problems[0][1].startswith("WARC-Date '2017-13-45T00:00:00Z': impossible timestamp")
    assert stats.problems[1][1] == "timestamp 20990101000000 is in the future (after 2026-11-25)"
