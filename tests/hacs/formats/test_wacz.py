"""hacs.formats.wacz: the WARC files inside a WACZ, streamed; hostile ZIPs refused with a
sentence; a truncated WACZ keeps its complete records.

Importing WACZ files into the database (the command, the crawl inbox, Browsertrix) is tested in
``tests/test_readback.py``; memory and speed on a 1 GiB WACZ are measured by
``bench.wacz_import``.
"""

from __future__ import annotations

import io
import struct
import zipfile
from datetime import UTC, datetime

import pytest

from hacs.formats.wacz import MAX_RATIO, WaczError, is_wacz, read_wacz
from hacs.formats.warc import WarcError, read_warc
from testbed.crawls import Page, wacz_bytes, warc_bytes

WHEN = datetime(2024, 3, 1, 12, tzinfo=UTC)


def pages(prefix: str, n: int) -> list[Page]:
    return [
        Page(f"http://a.edu/~{prefix}/{i}", WHEN, [f"http://b.org/{prefix}/{i}"], padding=1500)
        for i in range(n)
    ]


def urls_read(data: bytes) -> tuple[list[str], str, list[str]]:
    """The URLs of every record read, the WaczError's reason (or ""), and each entry's failure
    (a WarcError's or the stream's own)."""
    urls: list[str] = []
    failures: list[str] = []
    try:
        for _entry, stream in read_wacz(io.BytesIO(data)):
            try:
                for capture in read_warc(stream, max_body=100_000):
                    urls.append(capture.record.original)
            except WarcError as error:
                failures.append(str(error))
            if stream.failure:
                failures.append(stream.failure)
    except WaczError as error:
        return urls, error.reason, failures
    return urls, "", failures


A, B = pages("a", 40), pages("b", 40)
EXPECTED = [p.url for p in A + B]


@pytest.mark.parametrize("streaming", [False, True], ids=["sizes-in-headers", "descriptors"])
@pytest.mark.parametrize("stored", [True, False], ids=["stored", "deflated"])
def test_it_reads_every_warc_entry_in_file_order(streaming: bool, stored: bool) -> None:
    data = wacz_bytes(
        {"a.warc.gz": warc_bytes(A), "b.warc": warc_bytes(B, compress=False)},
        streaming=streaming,
        stored=stored,
    )
    assert is_wacz(io.BytesIO(data))
    assert urls_read(data) == (EXPECTED, "", [])


def test_a_warc_file_is_not_taken_for_a_wacz() -> None:
    assert not is_wacz(io.BytesIO(warc_bytes(A)))


def record_ends(records: list[Page]) -> list[int]:
    """Where each record of ``warc_bytes(records)`` ends in the WARC file."""
    return [len(warc_bytes(records[: n + 1])) for n in range(len(records))]


@pytest.mark.parametrize("streaming", [False, True], ids=["sizes-in-headers", "descriptors"])
@pytest.mark.parametrize("share", [0.3, 0.6, 0.97])
def test_a_truncated_wacz_keeps_every_record_complete_before_the_cut(
    streaming: bool, share: float
) -> None:
    warcs = {"a.warc.gz": warc_bytes(A), "b.warc.gz": warc_bytes(B)}
    data = wacz_bytes(warcs, streaming=streaming)
    cut = int(len(data) * share)
    complete = [
        page.url
        for name, records in (("a.warc.gz", A), ("b.warc.gz", B))
        for page, end in zip(records, record_ends(records), strict=True)
        if data.find(warcs[name]) + end <= cut  # stored: the WARC's bytes lie in the ZIP as is
    ]
    urls, reason, _failures = urls_read(data[:cut])
    assert "truncated" in reason and "complete records" in reason
    assert urls == complete


@pytest.mark.parametrize("streaming", [False, True], ids=["sizes-in-headers", "descriptors"])
@pytest.mark.parametrize("share", [0.3, 0.6, 0.97])
def test_a_truncated_wacz_of_deflated_entries_keeps_its_records_in_order(
    streaming: bool, share: float
) -> None:
    data = wacz_bytes(
        {"a.warc.gz": warc_bytes(A), "b.warc.gz": warc_bytes(B)}, streaming=streaming, stored=False
    )
    urls, reason, _failures = urls_read(data[: int(len(data) * share)])
    assert "truncated" in reason
    assert urls == EXPECTED[: len(urls)]  # in order, none invented
    assert len(urls) >= int(80 * share) - 8  # records are about the same size


def test_a_file_that_is_no_zip_at_all_is_refused_with_a_sentence() -> None:
    assert urls_read(b"PK\x03\x04 not really")[1] != ""
    assert "not a ZIP" in urls_read(b"garbage, not a zip")[1]


def test_a_wacz_without_warc_files_is_refused() -> None:
    data = wacz_bytes({}, extra={"archive/readme.txt": b"hello"})
    assert "holds no WARC file under archive/" in urls_read(data)[1]


@pytest.mark.parametrize(
    "name",
    [
        "../../etc/passwd.warc.gz",
        "archive/../../x.warc.gz",
        "/etc/archive.warc.gz",
        "archive\\..\\..\\x.warc",
        "C:/archive/x.warc.gz",
    ],
)
def test_entries_with_absolute_or_climbing_names_are_refused(name: str) -> None:
    data = wacz_bytes({"a.warc.gz": warc_bytes(A)}, extra={name: b"x"})
    urls, reason, _ = urls_read(data)
    assert urls == []  # refused before any record
    assert "absolute name" in reason or "'..'" in reason


def test_an_entry_named_twice_is_refused() -> None:
    warc = warc_bytes(A)
    sink = io.BytesIO()
    with zipfile.ZipFile(sink, "w") as archive:
        archive.writestr("archive/a.warc.gz", warc)
        with pytest.warns(UserWarning):
            archive.writestr("archive/a.warc.gz", warc)
    assert "two entries are named archive/a.warc.gz" in urls_read(sink.getvalue())[1]


def _set_encrypted(data: bytes, name: str) -> bytes:
    """Set the 'encrypted' flag of one entry in its local header and in the directory."""
    out = bytearray(data)
    info = zipfile.ZipFile(io.BytesIO(data)).getinfo(name)
    out[info.header_offset + 6] |= 0x1
    at = out.find(b"PK\x01\x02")
    while at >= 0:
        length = struct.unpack_from("<H", out, at + 28)[0]
        if out[at + 46 : at + 46 + length] == name.encode():
            out[at + 8] |= 0x1
        at = out.find(b"PK\x01\x02", at + 4)
    return bytes(out)


def test_an_encrypted_entry_is_refused() -> None:
    data = _set_encrypted(wacz_bytes({"a.warc.gz": warc_bytes(A)}), "archive/a.warc.gz")
    urls, reason, _ = urls_read(data)
    assert urls == [] and "archive/a.warc.gz is encrypted" in reason


@pytest.mark.parametrize("name", ["archive/inner.wacz", "extra/crawl.zip"])
def test_an_archive_named_inside_the_archive_is_refused(name: str) -> None:
    inner = wacz_bytes({"a.warc.gz": warc_bytes(A)})
    data = wacz_bytes({"b.warc.gz": warc_bytes(B)}, extra={name: inner})
    urls, reason, _ = urls_read(data)
    assert urls == [] and f"{name} is an archive inside the archive" in reason


def test_a_warc_entry_that_is_itself_a_zip_is_refused() -> None:
    inner = wacz_bytes({"a.warc.gz": warc_bytes(A)})
    data = wacz_bytes({"a.warc.gz": inner})
    assert "archive/a.warc.gz is a ZIP file, not a WARC file" in urls_read(data)[1]


def test_a_zip_bomb_is_refused_before_anything_is_inflated() -> None:
    sink = io.BytesIO()
    with zipfile.ZipFile(sink, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("archive/a.warc.gz", warc_bytes(A))
        archive.writestr("indexes/index.cdx", b"\0" * (50 * 1024 * 1024))
    urls, reason, _ = urls_read(sink.getvalue())
    assert urls == [] and "indexes/index.cdx" in reason and "ZIP bomb" in reason
    assert f"more than {MAX_RATIO} times" in reason


def test_a_bomb_whose_sizes_come_after_its_data_is_stopped_while_it_inflates() -> None:
    """A streamed ZIP cut before its directory: the declared size is not known in advance,
    so the entry is stopped once it has inflated past the ratio."""
    size = 60 * 1024 * 1024  # one record whose body is zeros: its lines are short, its body long
    head = (
        "WARC/1.1\r\nWARC-Type: resource\r\nWARC-Record-ID: <urn:uuid:0>\r\n"
        "WARC-Target-URI: https://www.cs.example.edu/~a/\r\nWARC-Date: 2020-01-01T00:00:00Z\r\n"
        f"Content-Type: application/octet-stream\r\nContent-Length: {size}\r\n\r\n"
    )
    bomb = head.encode() + b"\0" * size
    data = wacz_bytes({"a.warc": bomb}, streaming=True, stored=False)
    cut = data[: data.rfind(b"PK\x01\x02")]  # no directory
    _urls, reason, failures = urls_read(cut)
    assert any("stopped there as a ZIP bomb" in f for f in failures), failures
    assert "truncated" in reason


def test_entries_sharing_their_data_are_refused_as_a_bomb() -> None:
    """The non-recursive ZIP bomb: many directory entries point into one compressed stream."""
    data = bytearray(wacz_bytes({"a.warc.gz": warc_bytes(A), "b.warc.gz": warc_bytes(A)}))
    directory = zipfile.ZipFile(io.BytesIO(bytes(data)))
    first = directory.getinfo("archive/a.warc.gz").header_offset
    at = data.find(b"PK\x01\x02")
    while at >= 0:
        length = struct.unpack_from("<H", data, at + 28)[0]
        if data[at + 46 : at + 46 + length] == b"archive/b.warc.gz":
            struct.pack_into("<L", data, at + 42, first + 10)
        at = data.find(b"PK\x01\x02", at + 4)
    urls, reason, _ = urls_read(bytes(data))
    assert urls == [] and "overlaps the next one" in reason


def test_a_damaged_entry_ends_with_its_complete_records_and_a_sentence() -> None:
    warc = warc_bytes(A)
    data = bytearray(wacz_bytes({"a.warc.gz": warc}))
    middle = data.find(warc) + len(warc) // 2
    data[middle : middle + 50] = b"\0" * 50  # the CRC no longer matches
    urls, reason, failures = urls_read(bytes(data))
    assert reason == ""
    assert 0 < len(urls) < 40 and urls == EXPECTED[: len(urls)]
    assert failures


def test_memory_stays_bounded_reading_a_large_entry() -> None:
    """A WARC entry is streamed: the reader holds a bounded window, not the entry."""
    big = pages("big", 400)
    data = wacz_bytes({"a.warc.gz": warc_bytes(big)})
    for _entry, stream in read_wacz(io.BytesIO(data)):
        for _capture in read_warc(stream, max_body=100_000):
            held = stream._kept_bytes  # type: ignore[attr-defined]
            assert held <= 256 * 1024 + 64 * 1024
