"""Imports that survive real archives' bad input (issue 12, points 2, 5 and 7).

One bad row costs that row, named with its line or byte offset, never the good rows around it;
a damaged file keeps what came before the damage, says where it stopped, and the next file still
runs; a command that met a damaged file exits non-zero. Every test here runs against whatever
``DATABASE_URL`` names: on PostgreSQL each bad row below used to fail its whole batch with a
``DataError`` (SQLite stores anything), so the PostgreSQL leg is the one that proves them.
"""

from __future__ import annotations

import gzip
import io
import random
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command
from warcio.statusandheaders import StatusAndHeaders
from warcio.warcwriter import WARCWriter

from archive.captures import ScopeIndex, captures_store
from archive.models import Capture, Site
from archive.pipeline import FromCdxFiles, FromWarcFiles, sites_import
from archive.seeds import seeds_import
from hacs.formats.canon import canonical_url
from hacs.formats.cdx import CdxRecord, format_timestamp
from operations.refresh import sites_refresh
from scheduling.models import Estimate
from tests.factories import make_site

pytestmark = pytest.mark.django_db

SEED = "http://a.edu/~bar/"
T0 = datetime(2017, 1, 2, 3, 4, 5, tzinfo=UTC)


def bar_site() -> Site:
    return make_site(seed_url=SEED, canonical_key="edu,a)/~bar", author="Bar")


def at(days: float) -> datetime:
    return T0 + timedelta(days=days)


def cdx_line(
    url: str, stamp: str, *, status: str = "200", length: str = "1000", urlkey: str = ""
) -> str:
    key = urlkey or canonical_url(url.replace("\x00", ""))
    return f"{key} {stamp} {url} text/html {status} DIGEST{stamp} {length}"


def good_lines(count: int, *, start: float = 0) -> list[str]:
    return [cdx_line(SEED, format_timestamp(at(start + n))) for n in range(count)]


def run_command(name: str, *args: object) -> tuple[str, str, CommandError | None]:
    out, err = io.StringIO(), io.StringIO()
    try:
        call_command(name, *args, stdout=out, stderr=err)
    except CommandError as error:
        return out.getvalue(), err.getvalue(), error
    return out.getvalue(), err.getvalue(), None


# --- 2. One bad row costs one row ------------------------------------------------------------


def test_one_bad_row_costs_that_row_with_its_line_and_the_good_rows_are_stored(
    tmp_path: Path,
) -> None:
    site = bar_site()
    long_path = SEED + "a" * 2100
    lines = [
        cdx_line(SEED, "20170102030405"),
        cdx_line(SEED + "\x00x", "20170103030405"),  # NUL in the URL
        cdx_line(long_path, "20170104030405"),  # a urlkey over 2,000 characters
        cdx_line(SEED, "20170105030405", status="99999"),
        cdx_line(SEED, "20170106030405", length="99999999999999999999"),  # over bigint
        cdx_line(SEED, "20170107030405"),
        cdx_line(SEED, "20990101000000"),  # in the future
        cdx_line(SEED, "19900101000000"),  # before web archives
    ]
    path = tmp_path / "bar.cdx"
    path.write_text("\n".join(lines) + "\n")

    report = sites_import(FromCdxFiles([path], fetch=False))

    stored = Capture.objects.filter(site=site).order_by("timestamp")
    assert [c.timestamp for c in stored] == [
        datetime(2017, 1, 2, 3, 4, 5, tzinfo=UTC),
        datetime(2017, 1, 7, 3, 4, 5, tzinfo=UTC),
    ]
    assert report.failed_files == [] and report.bad_lines == 6
    problems = dict(p.split(": ", 1) for p in report.problems)
    assert set(problems) == {f"bar.cdx line {n}" for n in (2, 3, 4, 5, 7, 8)}
    assert problems["bar.cdx line 2"] == "the URL contains a NUL byte"
    assert problems["bar.cdx line 3"] == "the urlkey is 2,112 characters long; at most 2,000 fit"
    assert problems["bar.cdx line 4"] == "status 99999 is not an HTTP status (100-999)"
    assert problems["bar.cdx line 5"].startswith("length 99999999999999999999 is out of range")
    assert problems["bar.cdx line 7"].startswith("timestamp 20990101000000 is in the future")
    assert problems["bar.cdx line 8"] == (
        "timestamp 19900101000000 is before 1996, when web archiving began"
    )


def test_a_json_line_with_a_lone_surrogate_is_skipped_not_fatal(tmp_path: Path) -> None:
    site = bar_site()
    path = tmp_path / "bar.json"
    path.write_text(
        '{"url": "http://a.edu/~bar/\\ud800", "timestamp": "20170102030405", "mime": '
        '"text/html", "status": "200", "digest": "D1", "length": "10"}\n'
        '{"url": "http://a.edu/~bar/", "timestamp": "20170103030405", "mime": "text/html", '
        '"status": "200", "digest": "D2", "length": "10"}\n'
    )
    report = sites_import(FromCdxFiles([path], fetch=False))
    assert Capture.objects.filter(site=site).count() == 1
    [problem] = report.problems
    assert problem.startswith("bar.json line 1: ") and "surrogates not allowed" in problem


def test_storing_skips_rows_the_table_cannot_hold_whatever_their_source() -> None:
    """The guard under every source, the archive's CDX answers included."""
    site = bar_site()

    def record(url: str = SEED, **kw: object) -> CdxRecord:
        fields: dict[str, object] = {
            "urlkey": canonical_url(SEED) + url[len(SEED) :].replace("\x00", ""),
            "timestamp": T0,
            "original": url,
            "mimetype": "text/html",
            "status": 200,
            "digest": "D1",
            "length": 10,
        }
        fields.update(kw)
        return CdxRecord(**fields)  # type: ignore[arg-type]

    records = [
        record(),
        record(SEED + "\x00"),
        record(SEED + "\ud800"),
        record(urlkey="edu,a)/~bar/" + "b" * 2000),
        record(timestamp=at(1), status=99999),
        record(timestamp=at(2), length=2**63),
        record(timestamp=datetime(2099, 1, 1, tzinfo=UTC)),
        record(timestamp=at(3), digest="D" * 101),
        record(timestamp=at(4), mimetype="text/html" + "x" * 200),
    ]
    counts = captures_store(records=records, source="cdx:test", index=ScopeIndex.for_sites())
    assert counts.added == 1 and Capture.objects.filter(site=site).count() == 1
    assert counts.skipped == {
        "invalid url": 1,
        "invalid urlkey": 2,
        "invalid status": 1,
        "invalid length": 1,
        "invalid timestamp": 1,
        "invalid digest": 1,
        "invalid mimetype": 1,
    }


def test_a_seed_that_outgrows_its_column_when_tidied_is_a_rejected_line() -> None:
    # 1,900 characters as typed (the form allows 2,048); each é becomes %C3%A9.
    long_url = SEED + "é" * 100 + "x" * (1900 - len(SEED) - 100)
    report = seeds_import(data=f"url,author\n{long_url},Long\nhttp://b.edu/~baz/,Baz\n")
    assert [site.author for site in report.added] == ["Baz"]
    assert [(r.line, r.reason) for r in report.parsed.rejected] == [
        (
            2,
            "the URL is too long once tidied (2,400 characters, non-ASCII characters "
            "percent-encoded; the limit is 2,000)",
        )
    ]
    assert Site.objects.count() == 1


def test_tags_given_with_a_list_fit_their_column() -> None:
    report = seeds_import(data="http://b.edu/~baz/\n", extra_tags=["t" * 150])
    site = report.added[0]
    assert [len(name) for name in site.tags.values_list("name", flat=True)] == [100]


def test_more_seeds_than_the_limit_are_refused_whole() -> None:
    from hacs.formats.seeds import SeedFileError

    data = "".join(f"http://a.edu/~u{n}/\n" for n in range(50_001))
    with pytest.raises(SeedFileError, match="The list has 50,001 seeds; the limit is 50,000"):
        seeds_import(data=data)
    assert Site.objects.count() == 0


# --- 5. Whole-file errors: one message naming the file, the next files still run --------------


def test_a_truncated_gzip_keeps_the_lines_before_and_the_next_file_runs(tmp_path: Path) -> None:
    site = bar_site()
    whole = gzip.compress(("\n".join(good_lines(400)) + "\n").encode())
    cut = tmp_path / "first.cdx.gz"
    cut.write_bytes(whole[: len(whole) // 2])
    second = tmp_path / "second.cdx"
    second.write_text(good_lines(1, start=1000)[0] + "\n")

    out, err, error = run_command("import_cdx", str(cut), str(second), "--no-fetch")

    assert error is not None
    assert str(error) == (
        "1 of 2 files could not be read to the end (first.cdx.gz); what they held before the "
        "damage was imported."
    )
    [message] = [line for line in err.splitlines() if line.startswith(str(cut))]
    stopped_at = int(message.split("stopped at line ", 1)[1].split(":")[0].replace(",", ""))
    assert message == (
        f"{cut}: stopped at line {stopped_at:,}: the compressed data ends early: the file is "
        f"truncated; the {stopped_at - 1:,} records before it were read and kept"
    )
    assert 1 < stopped_at < 400
    # Every line before the damage is stored, and the second file too.
    assert Capture.objects.filter(site=site).count() == stopped_at - 1 + 1
    assert Capture.objects.filter(site=site, timestamp=at(1000)).exists()
    assert f"{stopped_at} CDX rows read" in out


@pytest.mark.parametrize(
    ("name", "content", "reason"),
    [
        (
            "wrong-header.json",
            '[["url", "time"], ["http://a.edu/~bar/", "20170102030405"]]',
            "stopped at line 1: the header row has no 'timestamp' field; "
            "nothing before it was read",
        ),
        (
            "no-header.json",
            '[["edu,a)/~bar", "20170102030405", "http://a.edu/~bar/", '
            '"text/html", "200", "D1", "10"]]',
            "stopped at line 1: the header row has no 'timestamp' field; "
            "nothing before it was read",
        ),
        (
            "invalid.json",
            '[["urlkey", "timestamp", "original"],\n["edu,a)/~bar", "2017',
            "stopped at line 2: not valid JSON: Unterminated string starting at (column 17); "
            "nothing before it was read",
        ),
        (
            "number.json",
            "[1, 2]",
            "stopped at line 1: the first row is not a header of field "
            "names; nothing before it was read",
        ),
        (
            "no-timestamp.cdx",
            " CDX N a m s k S\nedu,a)/~bar http://a.edu/~bar/ text/html 200 D 1\n",
            "stopped at line 1: the CDX header has no timestamp column; nothing before it was read",
        ),
        ("missing.cdx", None, "cannot be read (No such file or directory)"),
    ],
)
def test_a_file_that_cannot_be_read_gets_one_message_and_the_next_file_runs(
    tmp_path: Path, name: str, content: str | None, reason: str
) -> None:
    site = bar_site()
    bad = tmp_path / name
    if content is not None:
        bad.write_text(content)
    good = tmp_path / "good.cdx"
    good.write_text("\n".join(good_lines(2)) + "\n")

    _out, err, error = run_command("import_cdx", str(bad), str(good), "--no-fetch")

    assert error is not None and f"({name})" in str(error)
    assert f"{bad}: {reason}" in err.splitlines()
    assert "Traceback" not in err
    assert Capture.objects.filter(site=site).count() == 2


def write_warc(
    path: Path, captures: Sequence[tuple[str, str, bytes]], *, gzip_records: bool = True
) -> Path:
    """A WARC file of 200 HTML responses: (url, WARC-Date, body)."""
    with open(path, "wb") as stream:
        writer = WARCWriter(stream, gzip=gzip_records, warc_version="WARC/1.0")
        for url, date, body in captures:
            http = StatusAndHeaders(
                "200 OK", [("Content-Type", "text/html; charset=utf-8")], protocol="HTTP/1.1"
            )
            record = writer.create_warc_record(
                url,
                "response",
                payload=io.BytesIO(body),
                length=len(body),
                http_headers=http,
                warc_headers_dict={"WARC-Date": date},
            )
            writer.write_record(record)
    return path


def page(*links: str) -> bytes:
    anchors = "".join(f'<a href="{link}">{link}</a>' for link in links)
    return f"<html><body>{anchors}</body></html>".encode()


def warc_date(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def ten_pages() -> list[tuple[str, str, bytes]]:
    return [(f"{SEED}p{n}.html", warc_date(at(n)), page(f"http://x.org/{n}")) for n in range(10)]


@pytest.mark.parametrize("gzip_records", [True, False])
def test_garbage_after_ten_good_warc_records_keeps_the_ten(
    tmp_path: Path, gzip_records: bool
) -> None:
    site = bar_site()
    path = write_warc(tmp_path / "ten.warc", ten_pages(), gzip_records=gzip_records)
    size = path.stat().st_size
    with open(path, "ab") as stream:
        stream.write(random.Random(12).randbytes(5000))
    later = write_warc(tmp_path / "later.warc", [(SEED, warc_date(at(50)), page("http://y.org"))])

    out, err, error = run_command("import_warc", str(path), str(later))

    assert error is not None and "(ten.warc)" in str(error)
    end = size if gzip_records else size - 4  # the blank lines after a plain record
    assert (
        f"{path}: stopped at offset {end:,}: not a WARC record (Invalid WARC record); the 10 "
        "records before it were read and kept" in err.splitlines()
    )
    assert Capture.objects.filter(site=site).count() == 11
    assert "11 WARC captures read, 11 captures added, 11 pages parsed" in out


@pytest.mark.parametrize("gzip_records", [True, False])
def test_a_truncated_warc_keeps_its_complete_records_and_says_so(
    tmp_path: Path, gzip_records: bool
) -> None:
    site = bar_site()
    whole = write_warc(tmp_path / "whole.warc", ten_pages(), gzip_records=gzip_records)
    data = whole.read_bytes()
    cut = tmp_path / "cut.warc"
    cut.write_bytes(data[: len(data) * 11 // 20])  # in the middle of the sixth record

    _out, err, error = run_command("import_warc", str(cut))

    assert error is not None and "(cut.warc)" in str(error)
    [message] = [line for line in err.splitlines() if line.startswith(str(cut))]
    assert "truncated" in message
    assert message.endswith("; the 5 records before it were read and kept")
    assert Capture.objects.filter(site=site).count() == 5


def test_dropped_warc_records_are_counted_with_their_offsets(tmp_path: Path) -> None:
    site = bar_site()
    path = write_warc(
        tmp_path / "odd.warc",
        [
            (SEED, warc_date(at(0)), page("http://x.org/1")),
            (SEED + "a.html", "2017-13-45T00:00:00Z", page()),
            (SEED + "b.html", "2099-01-01T00:00:00Z", page()),
            (SEED, warc_date(at(1)), page("http://x.org/2")),
        ],
        gzip_records=False,
    )
    report = sites_import(FromWarcFiles([path], max_body=1 << 20))
    assert Capture.objects.filter(site=site).count() == 2
    assert report.bad_lines == 2 and report.failed_files == []
    assert len(report.problems) == 2
    assert report.problems[0].startswith("odd.warc offset ")
    assert "WARC-Date '2017-13-45T00:00:00Z': impossible timestamp" in report.problems[0]
    assert "timestamp 20990101000000 is in the future" in report.problems[1]


# --- 7. Impossible timestamps are not observations ---------------------------------------------


def test_a_capture_dated_2099_changes_no_estimate(tmp_path: Path) -> None:
    bar = bar_site()
    baz = make_site(seed_url="http://b.edu/~baz/", canonical_key="edu,b)/~baz", author="Baz")
    history = [(at(12.8 * n), page(*(f"http://x.org/{k}" for k in range(n + 1)))) for n in range(8)]
    captures = [
        (seed, warc_date(moment), body)
        for seed in (SEED, "http://b.edu/~baz/")
        for moment, body in history
    ]
    captures.append((SEED, "2099-01-01T00:00:00Z", page("http://x.org/new")))
    path = write_warc(tmp_path / "history.warc", captures)

    report = sites_refresh(FromWarcFiles([path], max_body=1 << 20))

    assert report.bad_lines == 1 and "is in the future" in report.problems[0]
    assert not Capture.objects.filter(timestamp__year=2099).exists()

    def estimates(site: Site) -> list[tuple[str, str, float | None, int]]:
        rows = Estimate.objects.filter(site=site).order_by("level", "method")
        return list(rows.values_list("level", "method", "rate", "observations"))

    assert estimates(bar) == estimates(baz) and estimates(bar)
    observed = Estimate.objects.get(site=bar, level="homepage", method="observed")
    assert observed.rate is not None and 1 / observed.rate < 20  # not 1,727.9 days
