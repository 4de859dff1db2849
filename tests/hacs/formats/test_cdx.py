"""hacs.formats.cdx: timestamps, the four CDX dialects, bad lines, real archive answers.

DESIGN.md rule 1 (which rows are observations, ``classify``) lives in ``hacs.updates`` and is
tested in ``tests/hacs/test_updates.py``.
"""

from __future__ import annotations

import gzip
import io
import json
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from hacs.formats.cdx import (
    MAX_PROBLEMS,
    CdxError,
    CdxRecord,
    CdxStats,
    Dialect,
    RowLimits,
    format_timestamp,
    is_html_type,
    iter_cdxj,
    iter_ia_json,
    iter_ia_text,
    iter_pywb_json,
    parse_cdx,
    parse_timestamp,
    read_cdx_file,
    row_problem,
    sniff_dialect,
)
from hacs.updates import OBSERVATION_KINDS, classify

# ../shared/realdata beside the checkout (this file is tests/hacs/formats/test_cdx.py).
REALDATA = Path(__file__).resolve().parents[4] / "shared" / "realdata"


def at(
    year: int, month: int, day: int, hour: int = 0, minute: int = 0, second: int = 0
) -> datetime:
    return datetime(year, month, day, hour, minute, second, tzinfo=UTC)


# --- timestamps --------------------------------------------------------------------------


def test_it_parses_a_14_digit_timestamp_as_utc() -> None:
    moment = parse_timestamp("20191001012455")
    assert moment == at(2019, 10, 1, 1, 24, 55)
    assert moment.tzinfo is UTC


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("2019", at(2019, 1, 1)),
        ("201910", at(2019, 10, 1)),
        ("20191007", at(2019, 10, 7)),
        ("2019100713", at(2019, 10, 7, 13)),
        ("201910071342", at(2019, 10, 7, 13, 42)),
        ("2019100713425", at(2019, 10, 7, 13, 42, 50)),
        # Wayback pads character by character from 00000101000000, so a lone month digit "1"
        # becomes month 11: this is what the server does with such a query, odd as it is.
        ("20191", at(2019, 11, 1)),
    ],
)
def test_it_pads_short_timestamps_as_wayback_does(text: str, expected: datetime) -> None:
    assert parse_timestamp(text) == expected


def test_it_drops_fractions_of_a_second_beyond_14_digits() -> None:
    assert parse_timestamp("20191001012455123") == at(2019, 10, 1, 1, 24, 55)
    assert parse_timestamp("20191001012455123456") == at(2019, 10, 1, 1, 24, 55)


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ("20191301000000", "month"),  # month 13
        ("20190001000000", "month"),  # month 00
        ("20000012170449", "month"),  # the IA's inserted "00" before the month
        ("20191000120000", "day"),  # day 00
        ("20000800241623", "day"),  # the IA's inserted "00" before the day
        ("20190230120000", "day"),  # Feb 30
        ("20190229120000", "day"),  # Feb 29 in a common year
        ("20191001240000", "hour"),  # hour 24
        ("20191001126000", "minute"),  # minute 60
        ("20191001120060", "second"),  # second 60
        ("00000101000000", "year"),  # year 0
        ("2019-10-01", "digits"),
        ("2019100101245x", "digits"),
        ("", "digits"),
        ("-2019", "digits"),
        ("２０１９", "digits"),  # full-width digits are digits to str.isdigit, not to Wayback
        ("201", "too short"),
        ("201910010124551234567", "too long"),
    ],
)
def test_it_rejects_impossible_timestamps(text: str, why: str) -> None:
    with pytest.raises(CdxError, match=why):
        parse_timestamp(text)


def test_leap_days_are_possible() -> None:
    assert parse_timestamp("20200229235959") == at(2020, 2, 29, 23, 59, 59)


def test_it_formats_the_14_digit_timestamp_back() -> None:
    assert format_timestamp(at(2001, 4, 10, 3, 4, 5)) == "20010410030405"
    assert format_timestamp(datetime(2001, 4, 10, 3, 4, 5)) == "20010410030405"  # naive = UTC
    eastern = timezone(timedelta(hours=-5))
    assert format_timestamp(datetime(2001, 4, 9, 22, 4, 5, tzinfo=eastern)) == "20010410030405"


@given(st.datetimes(min_value=datetime(1991, 1, 1), max_value=datetime(2999, 12, 31)))
def test_timestamps_round_trip(moment: datetime) -> None:
    moment = moment.replace(microsecond=0, tzinfo=UTC)
    assert parse_timestamp(format_timestamp(moment)) == moment


def test_a_cdx_error_names_the_line() -> None:
    error = CdxError("bad status", 12)
    assert str(error) == "line 12: bad status"
    assert (error.line_number, error.reason) == (12, "bad status")
    assert str(CdxError("not JSON")) == "not JSON"
    assert isinstance(error, ValueError)


# --- Internet Archive text ---------------------------------------------------------------

IA_TEXT = """\
edu,example)/~ada 20150101120000 http://www.example.edu/~ada/ text/html 200 AAAA 2301
edu,example)/~ada 20150201120000 https://example.edu/~ada/ warc/revisit - AAAA 512
edu,example)/~ada 20150301120000 http://example.edu/~ada unk 301 RRRR -
edu,example)/~ada/cv.pdf 20150401120000 http://example.edu/~ada/cv.pdf application/pdf 200 PPPP 9021
edu,example)/~ada/x 20150501120000 http://example.edu/~ada/x text/html 404 NNNN 300
"""


def test_it_reads_the_ia_seven_field_lines() -> None:
    result = parse_cdx(IA_TEXT)
    assert result.dialect is Dialect.IA_TEXT
    assert (result.parsed, result.skipped, result.problems) == (5, 0, ())
    first, revisit, redirect = result.records[:3]
    assert first == CdxRecord(
        urlkey="edu,example)/~ada",
        timestamp=at(2015, 1, 1, 12),
        original="http://www.example.edu/~ada/",
        mimetype="text/html",
        status=200,
        digest="AAAA",
        length=2301,
    )
    assert first.timestamp14 == "20150101120000"
    assert (revisit.mimetype, revisit.status, revisit.length) == ("warc/revisit", None, 512)
    assert revisit.is_revisit and not first.is_revisit
    assert (redirect.status, redirect.length) == (301, None)


def test_it_skips_malformed_lines_and_says_why() -> None:
    text = (
        "edu,example)/~ada 20150101120000 http://example.edu/~ada/ text/html 200 AAAA 2301\n"
        "edu,example)/~ada 20150101120001 http://example.edu/~ada/ text/html 200 AAAA\n"
        "edu,example)/~ada 20151301120000 http://example.edu/~ada/ text/html 200 AAAA 1\n"
        "edu,example)/~ada 20150101120002 http://example.edu/~ada/ text/html OK AAAA 1\n"
        "edu,example)/~ada 20150101120003 http://example.edu/~ada/ text/html 200 AAAA big\n"
        "Blocked Site Error\n"
        "edu,example)/~ada 20150101120004 http://example.edu/~ada/ text/html 200 BBBB 7\n"
    )
    result = parse_cdx(text)
    assert result.parsed == 2
    assert result.skipped == 5
    lines = [line for line, _ in result.problems]
    assert lines == [2, 3, 4, 5, 6]
    reasons = dict(result.problems)
    assert "found 6" in reasons[2]
    assert "month" in reasons[3]
    assert "status 'OK'" in reasons[4]
    assert "length 'big'" in reasons[5]
    assert "found 3" in reasons[6]
    assert [r.digest for r in result.records] == ["AAAA", "BBBB"]


def test_it_takes_the_resume_key_after_the_blank_line() -> None:
    text = IA_TEXT + "\nedu%2Cexample%29%2F%7Eada+20150601000000\n"
    result = parse_cdx(text)
    assert result.parsed == 5
    assert result.skipped == 0
    assert result.resume_key == "edu%2Cexample%29%2F%7Eada+20150601000000"
    assert parse_cdx(IA_TEXT).resume_key is None


def test_a_lone_token_without_the_blank_line_is_a_bad_line() -> None:
    result = parse_cdx(IA_TEXT + "edu%2Cexample%29%2F+20150601000000\n")
    assert result.resume_key is None
    assert result.problems == ((6, "expected 7, 9, 10 or 11 fields, found 1"),)


def test_it_accepts_crlf_line_ends_and_blank_lines() -> None:
    result = parse_cdx("\r\n" + IA_TEXT.replace("\n", "\r\n\r\n"))
    assert (result.parsed, result.skipped) == (5, 0)


def test_it_reads_classic_eleven_field_files_with_a_header() -> None:
    text = (
        " CDX N b a m s k r M S V g\n"
        "edu,example)/~ada 20150101120000 http://example.edu/~ada/ text/html 200 AAAA - - "
        "2301 1234 crawl-00001.warc.gz\n"
        "edu,example)/~ada 20150201120000 http://example.edu/~ada/ warc/revisit - AAAA - - "
        "512 99 crawl-00002.warc.gz\n"
        "edu,example)/~ada 20150301120000 http://example.edu/~ada/ text/html 200 CCCC 2301\n"
    )
    result = parse_cdx(text)
    assert result.parsed == 2
    assert [r.length for r in result.records] == [2301, 512]
    assert result.problems == ((4, "expected 11 fields (per the CDX header), found 7"),)


def test_it_recognises_headerless_9_10_and_11_field_lines() -> None:
    text = (
        "edu,example)/a 20150101120000 http://example.edu/a text/html 200 AAAA - 1234 f.warc.gz\n"
        "edu,example)/b 20150101120000 http://example.edu/b text/html 200 BBBB - - 1234 f.warc.gz\n"
        "edu,example)/c 20150101120000 http://example.edu/c text/html 200 CCCC - - 77 1234 f.warc\n"
    )
    result = parse_cdx(text)
    assert result.parsed == 3
    assert [(r.urlkey, r.length) for r in result.records] == [
        ("edu,example)/a", None),
        ("edu,example)/b", None),
        ("edu,example)/c", 77),
    ]


def test_a_header_without_a_timestamp_column_is_an_error() -> None:
    with pytest.raises(CdxError, match="line 1: the CDX header has no timestamp column"):
        parse_cdx(" CDX N a m s k\nedu,example)/a http://example.edu/a text/html 200 AAAA\n")


def test_it_parses_lines_from_a_file_object_lazily() -> None:
    stats = CdxStats()
    records = iter_ia_text(io.StringIO(IA_TEXT + "junk\n"), stats)
    assert stats.parsed == 0
    assert len(list(records)) == 5
    assert (stats.parsed, stats.skipped, stats.problems[0][0]) == (5, 1, 6)


def test_it_keeps_at_most_max_problems_reasons_but_counts_every_bad_line() -> None:
    text = "bad line\n" * (MAX_PROBLEMS + 50)
    result = parse_cdx(text)
    assert result.skipped == MAX_PROBLEMS + 50
    assert len(result.problems) == MAX_PROBLEMS


# --- Internet Archive JSON ---------------------------------------------------------------

IA_HEADER = ["urlkey", "timestamp", "original", "mimetype", "statuscode", "digest", "length"]
IA_ROWS = [
    [
        "edu,example)/~ada",
        "20150101120000",
        "http://example.edu/~ada/",
        "text/html",
        "200",
        "AAAA",
        "2301",
    ],
    [
        "edu,example)/~ada",
        "20150201120000",
        "http://example.edu/~ada/",
        "warc/revisit",
        "-",
        "AAAA",
        "512",
    ],
]


def ia_json(rows: list[list[str]], resume_key: str | None = None) -> str:
    table: list[list[str]] = [IA_HEADER, *rows]
    if resume_key is not None:
        table += [[], [resume_key]]
    # The IA writes one row per line, like this.
    return "[" + ",\n".join(json.dumps(row) for row in table) + "]\n"


def test_it_reads_ia_json_with_its_header_row() -> None:
    result = parse_cdx(ia_json(IA_ROWS))
    assert result.dialect is Dialect.IA_JSON
    assert (result.parsed, result.skipped, result.resume_key) == (2, 0, None)
    assert result.records[1].status is None
    assert result.records[1].is_revisit


def test_it_returns_the_json_resume_key() -> None:
    result = parse_cdx(ia_json(IA_ROWS, resume_key="edu%2Cexample%29%2F%7Eada+20150301"))
    assert result.parsed == 2
    assert result.resume_key == "edu%2Cexample%29%2F%7Eada+20150301"


def test_it_skips_bad_json_rows_by_row_number() -> None:
    rows = [
        IA_ROWS[0],
        [
            "edu,example)/~ada",
            "20150230120000",
            "http://example.edu/~ada/",
            "text/html",
            "200",
            "B",
            "1",
        ],
        ["too", "short"],
        IA_ROWS[1],
    ]
    text = ia_json(rows)[:-2] + ',\n"not a row"]\n'
    result = parse_cdx(text)
    assert result.parsed == 2
    assert [line for line, _ in result.problems] == [3, 4, 6]
    assert "day is out of range" in result.problems[0][1]


def test_it_reads_the_eleven_field_timemap_json() -> None:
    header = [*IA_HEADER[:6], "redirect", "robotflags", "length", "offset", "filename"]
    row = ["edu,example)/~ada", "20150101120000", "http://example.edu/~ada/", "text/html"]
    row += ["200", "AAAA", "-", "-", "2301", "123", "crawl.arc.gz"]
    result = parse_cdx(json.dumps([header, row]))
    assert result.records[0].length == 2301


def test_empty_json_answers_have_no_records() -> None:
    assert parse_cdx("[]").records == ()
    assert parse_cdx(json.dumps([IA_HEADER])).records == ()
    assert parse_cdx("").records == ()


def test_a_broken_json_document_is_an_error() -> None:
    with pytest.raises(CdxError, match="not valid JSON"):
        parse_cdx('[["urlkey","timestamp"],\n["a"', Dialect.IA_JSON)
    with pytest.raises(CdxError, match="array of rows"):
        list(iter_ia_json('{"urlkey": "x"}'))
    with pytest.raises(CdxError, match="line 1: the header row has no 'timestamp'"):
        parse_cdx('[["urlkey","original"],["a","http://a.edu/"]]')


# --- pywb JSON lines and CDXJ ------------------------------------------------------------


def test_it_reads_pywb_json_lines_including_revisits() -> None:
    lines = [
        {
            "urlkey": "edu,example)/~ada",
            "timestamp": "20150101120000",
            "url": "http://example.edu/~ada/",
            "mime": "text/html",
            "status": "200",
            "digest": "AAAA",
            "length": "2301",
            "offset": "0",
            "filename": "a.warc.gz",
        },
        {
            "urlkey": "edu,example)/~ada",
            "timestamp": "20150201120000",
            "url": "http://example.edu/~ada/",
            "mime": "warc/revisit",
            "digest": "AAAA",
            "length": "512",
        },
        {
            "urlkey": "edu,example)/~ada",
            "timestamp": "20150301120000",
            "url": "http://example.edu/~ada/",
            "mime": "warc/revisit",
            "status": "-",
            "digest": "AAAA",
        },
        {
            "urlkey": "edu,example)/~ada",
            "timestamp": "20150401120000",
            "url": "http://example.edu/~ada/",
            "status": 200,
            "length": 77,
        },
    ]
    result = parse_cdx("\n".join(json.dumps(line) for line in lines) + "\n")
    assert result.dialect is Dialect.PYWB_JSON
    assert result.parsed == 4
    assert [(r.status, r.mimetype, r.length) for r in result.records] == [
        (200, "text/html", 2301),
        (None, "warc/revisit", 512),
        (None, "warc/revisit", None),
        (200, "-", 77),
    ]


def test_it_skips_bad_pywb_lines() -> None:
    text = (
        '{"urlkey": "edu,example)/a", "timestamp": "20150101120000", "url": "http://example.edu/a"}\n'
        '{"urlkey": "edu,example)/a", "timestamp": "2015010112", "url": "http://example.edu/a"\n'
        '["not", "an", "object"]\n'
        '{"message": "No Captures found for: http://example.edu/b"}\n'
        '{"urlkey": "edu,example)/a", "timestamp": "20150101120000"}\n'
        '{"urlkey": "edu,example)/a", "timestamp": "20150101120000", "url": "x", "status": "2x"}\n'
    )
    result = parse_cdx(text, Dialect.PYWB_JSON)
    assert result.parsed == 1
    assert [line for line, _ in result.problems] == [2, 3, 4, 5, 6]
    assert "timestamp field is missing" in dict(result.problems)[4]
    assert "original URL is missing" in dict(result.problems)[5]


def test_it_derives_a_missing_urlkey_from_the_original() -> None:
    line = '{"timestamp": "20150101120000", "url": "https://www.example.edu/~ada/"}'
    assert parse_cdx(line).records[0].urlkey == "edu,example)/~ada"


def test_it_reads_cdxj_lines() -> None:
    text = (
        "!OpenWayback-CDXJ 1.0\n"
        'edu,example)/~ada 20150101120000 {"url": "http://example.edu/~ada/", "mime": "text/html", '
        '"status": "200", "digest": "AAAA", "length": "2301"}\n'
        'edu,example)/~ada 20150201120000 {"url": "http://example.edu/~ada/", '
        '"mime": "warc/revisit", "digest": "AAAA"}\n'
        "edu,example)/~ada 20150301120000 not-json\n"
        'edu,example)/~ada 20150401120000 {"url": "http://example.edu/~ada/", "status": \n'
        'edu,example)/~ada 2015130112 {"url": "http://example.edu/~ada/"}\n'
    )
    result = parse_cdx(text)
    assert result.dialect is Dialect.CDXJ
    assert result.parsed == 2
    assert result.records[1].status is None
    assert [line for line, _ in result.problems] == [4, 5, 6]
    stats = CdxStats()
    assert len(list(iter_cdxj(text.splitlines(), stats))) == 2
    assert stats.skipped == 3


def test_it_sniffs_each_dialect() -> None:
    assert sniff_dialect(IA_TEXT) is Dialect.IA_TEXT
    assert sniff_dialect(" CDX N b a m s k r M S V g\n") is Dialect.IA_TEXT
    assert sniff_dialect("\n\n" + ia_json(IA_ROWS)) is Dialect.IA_JSON
    assert sniff_dialect('{"urlkey": "a"}\n') is Dialect.PYWB_JSON
    assert sniff_dialect('edu,example)/ 20150101120000 {"url": "http://example.edu/"}') is (
        Dialect.CDXJ
    )
    assert sniff_dialect("") is Dialect.IA_TEXT


def test_parse_cdx_takes_bytes_with_a_bom() -> None:
    result = parse_cdx(b"\xef\xbb\xbf" + IA_TEXT.encode())
    assert result.parsed == 5
    spoiled = parse_cdx(b"\xff" + IA_TEXT.encode())  # a stray byte loses nothing else
    assert spoiled.parsed == 5
    assert spoiled.records[0].urlkey == "\ufffdedu,example)/~ada"


def test_each_iterator_works_with_its_own_stats() -> None:
    assert len(list(iter_ia_text(IA_TEXT))) == 5
    assert len(list(iter_ia_json(ia_json(IA_ROWS)))) == 2
    assert len(list(iter_pywb_json('{"timestamp": "2015", "url": "http://a.edu/"}'))) == 1


# --- HTML types (used by DESIGN.md rule 1) ---------------------------------------------


def test_html_types_ignore_parameters_and_case() -> None:
    for mime in ("text/html", "text/html; charset=UTF-8", "TEXT/HTML", "application/xhtml+xml"):
        assert is_html_type(mime), mime
    for mime in (None, "", "-", "unk", "application/pdf", "text/plain", "warc/revisit"):
        assert not is_html_type(mime), mime


# --- real archive answers (optional: skipped when ../shared/realdata is absent) ------------


def test_it_reads_real_internet_archive_cdx_answers() -> None:
    folder = REALDATA / "edgi-wayback"
    if not folder.is_dir():
        pytest.skip("../shared/realdata is not present")
    texts = sorted((folder / "bodies").glob("*.cdx.txt"))
    jsons = sorted((folder / "bodies").glob("test_search_v2*.json"))
    assert texts and jsons
    parsed = skipped = 0
    for path in texts + jsons:
        result = parse_cdx(path.read_bytes())
        parsed += result.parsed
        skipped += result.skipped
        assert result.dialect is (Dialect.IA_JSON if path.suffix == ".json" else Dialect.IA_TEXT)
        kinds = classify(result.records)
        assert len(kinds) == len(result.records)
        for record, kind in zip(result.records, kinds, strict=True):
            if kind in OBSERVATION_KINDS:
                assert record.status in (200, None)
    assert parsed > 9000
    assert skipped <= 2  # the IA's "blocked site" message, at most
    bad = parse_cdx((folder / "test_files" / "bad_timestamp_cdx.txt").read_bytes())
    assert bad.skipped == 2 and all("impossible timestamp" in why for _, why in bad.problems)


def test_bare_digest_drops_the_sha1_prefix_only() -> None:
    from hacs.formats.cdx import bare_digest

    assert bare_digest("sha1:ABCDEF") == "ABCDEF"
    assert bare_digest(" SHA1:ABCDEF ") == "ABCDEF"
    assert bare_digest("ABCDEF") == "ABCDEF"
    assert bare_digest("-") == "-"


# --- rows a database can store (issue 12) -------------------------------------------------

NOW = at(2026, 11, 24, 2, 30)
LIMITS = RowLimits.until_tomorrow(NOW)


def good(**kw: object) -> CdxRecord:
    fields: dict[str, object] = {
        "urlkey": "edu,a)/~bar",
        "timestamp": at(2017, 1, 2),
        "original": "http://a.edu/~bar/",
        "mimetype": "text/html",
        "status": 200,
        "digest": "AAAA",
        "length": 10,
    }
    fields.update(kw)
    return CdxRecord(**fields)  # type: ignore[arg-type]


def test_captures_may_be_dated_from_1996_to_the_end_of_tomorrow() -> None:
    assert LIMITS.latest == at(2026, 11, 25, 23, 59, 59)
    assert row_problem(good(timestamp=at(1996, 1, 1)), LIMITS) is None
    assert row_problem(good(timestamp=at(2026, 11, 25, 23, 59, 59)), LIMITS) is None
    assert row_problem(good(timestamp=at(2026, 11, 26)), LIMITS) == (
        "timestamp",
        "timestamp 20261126000000 is in the future (after 2026-11-25)",
    )
    assert row_problem(good(timestamp=at(1995, 12, 31, 23, 59, 59)), LIMITS) == (
        "timestamp",
        "timestamp 19951231235959 is before 1996, when web archiving began",
    )


@pytest.mark.parametrize(
    ("changes", "field", "reason"),
    [
        ({"original": "http://a.edu/~bar/\x00"}, "url", "the URL contains a NUL byte"),
        ({"urlkey": "edu,a)/\x00"}, "urlkey", "the urlkey contains a NUL byte"),
        ({"digest": "\ud800"}, "digest", "the digest holds a lone surrogate (not valid Unicode)"),
        ({"status": 99999}, "status", "status 99999 is not an HTTP status (100-999)"),
        ({"status": 42}, "status", "status 42 is not an HTTP status (100-999)"),
        ({"length": 2**63}, "length", f"length {2**63} is out of range (0-{2**63 - 1:,})"),
    ],
)
def test_rows_no_database_can_store_are_named_by_field(
    changes: dict[str, object], field: str, reason: str
) -> None:
    assert row_problem(good(**changes), LIMITS) == (field, reason)


def test_column_sizes_are_checked_only_when_given() -> None:
    long_key = good(urlkey="edu,a)/" + "a" * 2000)
    assert row_problem(long_key, LIMITS) is None
    sized = RowLimits(latest=LIMITS.latest, urlkey=2000, mimetype=20, digest=4)
    assert row_problem(long_key, sized) == (
        "urlkey",
        "the urlkey is 2,007 characters long; at most 2,000 fit",
    )
    assert row_problem(good(digest="AAAAA"), sized) == (
        "digest",
        "the digest is 5 characters long; at most 4 fit",
    )
    assert row_problem(good(), sized) is None


def test_every_dialect_skips_unstorable_rows_with_their_line() -> None:
    future = "20990101000000"
    text = (
        f"edu,a)/~bar 20170102000000 http://a.edu/~bar/ text/html 200 AAAA 10\n"
        f"edu,a)/~bar {future} http://a.edu/~bar/ text/html 200 AAAA 10\n"
        f"edu,a)/~bar 20170103000000 http://a.edu/~bar/ text/html 99999 AAAA 10\n"
    )
    result = parse_cdx(text, limits=LIMITS)
    assert [r.timestamp for r in result.records] == [at(2017, 1, 2)]
    assert [n for n, _why in result.problems] == [2, 3]
    rows = [IA_HEADER, ["edu,a)/~bar", future, "http://a.edu/~bar/", "text/html", "200", "A", "1"]]
    assert parse_cdx(json.dumps(rows), limits=LIMITS).problems[0][0] == 2
    pywb = json.dumps({"url": "http://a.edu/~bar/", "timestamp": future, "status": "200"})
    assert parse_cdx("\n" + pywb + "\n", limits=LIMITS).problems[0][0] == 2
    cdxj = f'edu,a)/~bar {future} {{"url": "http://a.edu/~bar/", "status": "200"}}\n'
    assert parse_cdx(cdxj, limits=LIMITS).problems[0][0] == 1


CDX_LINES = [
    f"edu,a)/~bar 2017010{d}000000 http://a.edu/~bar/ text/html 200 D{d} 10\n" for d in range(1, 10)
]


@pytest.mark.parametrize("compress", [False, True])
def test_a_cdx_file_is_read_as_a_stream_plain_or_gzip(compress: bool) -> None:
    data = ("\ufeff" + "".join(CDX_LINES)).encode()
    stream = io.BytesIO(gzip.compress(data) if compress else data)
    stats = CdxStats()
    records = read_cdx_file(stream, stats, LIMITS)
    first = next(records)
    assert first.timestamp == at(2017, 1, 1) and stats.parsed == 1  # lazily
    assert len(list(records)) == 8 and stats.parsed == 9


def test_a_truncated_gzip_yields_every_line_before_the_damage_then_names_the_line() -> None:
    lines = [
        f"edu,a)/~bar {format_timestamp(at(2017, 1, 1) + timedelta(hours=n))} "
        f"http://a.edu/~bar/ text/html 200 D{n} 10\n"
        for n in range(5000)
    ]
    whole = gzip.compress("".join(lines).encode())
    got: list[CdxRecord] = []
    with pytest.raises(CdxError) as raised:
        got.extend(read_cdx_file(io.BytesIO(whole[: len(whole) // 2]), CdxStats(), LIMITS))
    assert raised.value.line_number == len(got) + 1 and 0 < len(got) < 5000
    assert raised.value.reason == "the compressed data ends early: the file is truncated"
    assert got[-1].timestamp == at(2017, 1, 1) + timedelta(hours=len(got) - 1)


def test_garbage_after_a_gzip_member_is_damage_on_the_next_line() -> None:
    stream = io.BytesIO(gzip.compress("".join(CDX_LINES).encode()) + b"not gzip at all")
    got: list[CdxRecord] = []
    with pytest.raises(CdxError, match="compressed data is damaged") as raised:
        got.extend(read_cdx_file(stream, CdxStats(), LIMITS))
    assert len(got) == 9 and raised.value.line_number == 10


def test_a_json_document_in_a_file_is_whole_or_an_error_naming_its_line() -> None:
    rows = [
        IA_HEADER,
        ["edu,a)/~bar", "20170102000000", "http://a.edu/~bar/", "text/html", "200", "A", "1"],
    ]
    text = json.dumps(rows).replace("], [", "],\n[")
    assert len(list(read_cdx_file(io.BytesIO(text.encode()), CdxStats(), LIMITS))) == 1
    with pytest.raises(CdxError, match="line 2: not valid JSON"):
        list(read_cdx_file(io.BytesIO(text[:-10].encode()), CdxStats(), LIMITS))
