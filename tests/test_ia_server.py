"""The fake Internet Archive (``testbed.ia_server``) answers CDX queries as the real one.

Plain HTTP requests to the fake on 127.0.0.1 and hand-worked expectations; no HACS code. The
real server's rules come from its code (the key ranges of ``UrlSurtRangeComputer``, the read
loop of ``CDXServer.writeCdxResponse``, ``ZipNumIndex.getNthPage``) and its recorded answers
(edgi-govdata-archiving/wayback's cassettes); ``testbed/ia_server.py`` cites them.
"""

from __future__ import annotations

import gzip
import json
from collections.abc import Iterator
from typing import Any
from urllib.parse import unquote_plus

import pytest
import requests

from testbed.ia_server import Fault, IAArchive, Row, resume_key


def row(
    key: str, stamp: str, url: str, digest: str, mime: str = "text/html", status: str = "200"
) -> Row:
    return Row(key, stamp, url, mime, status, digest, "9")


# The index, numbered as the expectations below use it; sorted as text, it is in this order.
ROWS = [
    row("edu,example)/", "20170105000000", "http://www.example.edu/", "R1"),
    row("edu,example)/~a", "20170101000000", "http://example.edu/~a/", "A1"),
    row("edu,example)/~a", "20170201000000", "http://example.edu/~a/", "A2"),
    row("edu,example)/~a", "20170301000000", "https://example.edu/~a/", "A2", "warc/revisit", "-"),
    row("edu,example)/~a/pubs.html", "20170115000000", "http://example.edu/~a/pubs.html", "P1"),
    row("edu,example)/~ab", "20170110000000", "http://example.edu/~ab/", "B1"),
    row("edu,example)/~b", "20160105000000", "http://example.edu/~b/", "C1", status="301"),
    row("edu,example,cs)/~c", "20170107000000", "http://cs.example.edu/~c/", "D1"),
    row("edu,example:8080)/x", "20170108000000", "http://example.edu:8080/x", "E1"),
    row("edu,examples)/", "20170109000000", "http://examples.edu/", "F1"),
    row("edu,other)/~a", "20170101000000", "http://other.edu/~a/", "G1"),
]
HOST = [1, 2, 3, 4, 5, 6, 7]  # every row of example.edu itself


@pytest.fixture()
def archive() -> Iterator[IAArchive]:
    with IAArchive(reversed(ROWS)) as served:  # given out of order: the index sorts them
        yield served


def get(archive: IAArchive, **params: str) -> requests.Response:
    return requests.get(archive.cdx_url, params=params, timeout=10)


def numbers(answer: list[list[str]]) -> list[int]:
    """The numbers (1-based, in ``ROWS``) of a JSON answer's rows, header and key left out."""
    rows = answer[1:]
    if [] in rows:
        rows = rows[: rows.index([])]
    lines = [r.as_list() for r in ROWS]
    return [lines.index(row) + 1 for row in rows]


def found(archive: IAArchive, **params: str) -> list[int]:
    answer = get(archive, output="json", **params)
    assert answer.status_code == 200, answer.text
    return numbers(answer.json())


# --- Match types -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("params", "expected"),
    [
        ({"url": "example.edu/~a/"}, [2, 3, 4]),  # exact is the default
        ({"url": "https://www.EXAMPLE.edu/~A", "matchType": "exact"}, [2, 3, 4]),
        ({"url": "example.edu/~a", "matchType": "prefix"}, [2, 3, 4, 5, 6]),
        ({"url": "example.edu/~a/", "matchType": "prefix"}, [5]),  # the slash stays
        ({"url": "example.edu/~a/*"}, [5]),  # "/*" means prefix on what precedes it
        ({"url": "example.edu/", "matchType": "prefix"}, HOST),  # the root: a host query
        ({"url": "example.edu/~a/", "matchType": "host"}, HOST),  # no subdomain, no port
        ({"url": "example.edu", "matchType": "domain"}, [*HOST, 8]),  # subdomains, no port
        ({"url": "*.example.edu"}, [*HOST, 8]),  # "*." means domain
        ({"url": "example.edu/~a/", "matchType": "Prefix"}, [2, 3, 4]),  # unknown: exact
        ({"url": "other.edu/~a", "matchType": "prefix"}, [11]),
        ({"url": "nowhere.edu/", "matchType": "host"}, []),
    ],
)
def test_each_match_type_answers_its_key_range_in_urlkey_then_time_order(
    archive: IAArchive, params: dict[str, str], expected: list[int]
) -> None:
    assert found(archive, **params) == expected


def test_an_empty_answer_is_an_empty_json_array(archive: IAArchive) -> None:
    assert get(archive, url="nowhere.edu/", output="json").text == "[]"


# --- from and to -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("bounds", "expected"),
    [
        ({"from": "201702"}, [3, 4]),
        ({"from": "2017020"}, [3, 4]),  # any number of digits compares as text
        ({"from": "20170201000000"}, [3, 4]),  # inclusive
        ({"from": "20170201000001"}, [4]),
        ({"to": "201701"}, [1, 2, 5, 6, 7]),  # the whole of January 2017 and before
        ({"to": "20170101000000"}, [2, 7]),
        ({"from": "2017", "to": "2017"}, [1, 2, 3, 4, 5, 6]),
        ({"from": "2018"}, []),
    ],
)
def test_from_and_to_keep_captures_by_their_leading_digits(
    archive: IAArchive, bounds: dict[str, str], expected: list[int]
) -> None:
    assert found(archive, url="example.edu", matchType="host", **bounds) == expected


def test_to_ends_an_exact_query_at_the_bound(archive: IAArchive) -> None:
    assert found(archive, url="example.edu/~a/", to="201702") == [2, 3]


def test_a_malformed_timestamp_is_refused(archive: IAArchive) -> None:
    answer = get(archive, url="example.edu/~a/", **{"from": "2017-01"})
    assert answer.status_code == 400 and "1 to 14 digits" in answer.text


# --- limit and resume keys -------------------------------------------------------------------


def test_a_full_page_ends_with_the_key_of_the_next_second_urlencoded_like_java(
    archive: IAArchive,
) -> None:
    answer = get(
        archive, url="example.edu", matchType="host", output="json", limit="3", showResumeKey="true"
    ).json()
    assert numbers(answer) == [1, 2, 3]
    assert answer[-2:] == [[], ["edu%2Cexample%29%2F%7Ea+20170201000001"]]


def test_resume_keys_page_through_the_whole_answer(archive: IAArchive) -> None:
    pages: list[list[int]] = []
    keys: list[str] = []
    params = {
        "url": "example.edu",
        "matchType": "host",
        "output": "json",
        "limit": "3",
        "showResumeKey": "true",
    }
    while True:
        answer = get(archive, **params, **({"resumeKey": keys[-1]} if keys else {})).json()
        pages.append(numbers(answer))
        if answer[-2:-1] != [[]]:
            break
        keys.append(answer[-1][0])
    assert pages == [[1, 2, 3], [4, 5, 6], [7]]
    assert keys[1] == "edu%2Cexample%29%2F%7Eab+20170110000001"


def test_a_key_is_accepted_as_printed_or_decoded(archive: IAArchive) -> None:
    printed = "edu%2Cexample%29%2F%7Ea+20170201000001"
    base = {"url": "example.edu", "matchType": "host", "limit": "3", "showResumeKey": "true"}
    # requests encodes the printed key again, as edgi wayback and HACS send it.
    assert found(archive, **base, resumeKey=printed)[:3] == [4, 5, 6]
    assert found(archive, **base, resumeKey=unquote_plus(printed))[:3] == [4, 5, 6]


def test_a_page_ending_exactly_with_the_rows_still_has_a_key_and_the_next_page_is_empty(
    archive: IAArchive,
) -> None:
    params = {
        "url": "example.edu",
        "matchType": "host",
        "output": "json",
        "limit": "7",
        "showResumeKey": "true",
    }
    first = get(archive, **params).json()
    assert numbers(first) == HOST and first[-2] == []
    assert get(archive, **params, resumeKey=first[-1][0]).text == "[]"


def test_a_page_boundary_inside_one_second_loses_the_later_capture_of_that_second() -> None:
    """The key skips every line of its second (incLastChar): two captures of one URL in one
    second (http and https) split by a page boundary lose the second."""
    same = [
        Row(
            "edu,example)/~d",
            "20170101000000",
            f"{scheme}://example.edu/~d/",
            "text/html",
            "200",
            "X",
            "9",
        )
        for scheme in ("http", "https")
    ]
    with IAArchive(same) as archive:
        params = {"url": "example.edu/~d/", "output": "json", "limit": "1", "showResumeKey": "true"}
        first = get(archive, **params).json()
        assert [row[2] for row in first[1:2]] == ["http://example.edu/~d/"]
        assert first[-1] == ["edu%2Cexample%29%2F%7Ed+20170101000001"]
        assert get(archive, **params, resumeKey=first[-1][0]).text == "[]"
        assert len(get(archive, url="example.edu/~d/", output="json").json()) == 3


def test_resume_key_is_the_next_second_of_the_last_line() -> None:
    assert resume_key("com,cnn)/ 20010414005939 http://www.cnn.com:80/ text/html 200 D 1") == (
        "com%2Ccnn%29%2F+2001041400593%3A"  # as web.archive.org printed it (edgi cassette)
    )


# --- The read cap (queryMaxLimit) ------------------------------------------------------------


def test_lines_thrown_away_by_from_count_against_the_read_cap_and_the_answer_ends_silently() -> (
    None
):
    with IAArchive(ROWS, max_lines_read=4) as archive:
        params = {
            "url": "example.edu",
            "matchType": "host",
            "output": "json",
            "limit": "10",
            "showResumeKey": "true",
        }
        # Lines 1-4 read, 2 thrown away: 5 and 6 (from 10 and 15 January) are never read,
        # and no key says so.
        short = get(archive, **params, **{"from": "20170105"}).json()
        assert numbers(short) == [1, 3, 4] and short[-2:-1] != [[]]
        logged = archive.requests_to("cdx")[-1]
        assert (logged.rows, logged.read, logged.cut_short) == (3, 4, True)
        # Without from, every line read is written: the page is full and has a key.
        plain = get(archive, **params).json()
        assert numbers(plain) == [1, 2, 3, 4] and plain[-2] == []
        assert not archive.requests_to("cdx")[-1].cut_short


# --- Paged queries ---------------------------------------------------------------------------


@pytest.fixture()
def zipnum() -> Iterator[IAArchive]:
    """Blocks of 2 lines: [1 2] [3 4] [5 6] [7 8] [9 10] [11]; at most 2 blocks a page."""
    with IAArchive(ROWS, lines_per_block=2, max_page_size=2) as served:
        yield served


def test_show_num_pages_counts_the_blocks_the_range_touches(zipnum: IAArchive) -> None:
    host = {"url": "example.edu", "matchType": "host"}
    answer = get(zipnum, **host, showNumPages="true")
    assert answer.text == "2\n" and answer.headers["X-CDX-Num-Pages"] == "2"  # blocks 1-4
    assert get(zipnum, **host, showNumPages="true", pageSize="1").text == "4\n"
    assert get(zipnum, **host, showNumPages="true", pageSize="9").text == "2\n"  # at most 2
    assert get(zipnum, **host, showNumPages="true", **{"from": "2018"}).text == "2\n"
    assert get(zipnum, url="example.edu/~a/", showNumPages="true").text == "1\n"
    assert get(zipnum, url="nowhere.edu/", showNumPages="true").text == "1\n"


def test_pages_hold_their_blocks_rows_and_together_the_whole_answer(zipnum: IAArchive) -> None:
    host = {"url": "example.edu", "matchType": "host"}
    assert found(zipnum, **host, page="0") == [1, 2, 3, 4]
    assert found(zipnum, **host, page="1") == [5, 6, 7]  # 8 is in the block, not the range
    assert [found(zipnum, **host, page=str(p), pageSize="1") for p in range(4)] == [
        [1, 2],
        [3, 4],
        [5, 6],
        [7],
    ]
    after = get(zipnum, **host, page="2", output="json")
    assert after.status_code == 200 and after.text == ""
    assert found(zipnum, **host, page="1", **{"from": "201702"}) == []  # pages ignore from
    assert get(zipnum, **host, page="0").headers["X-CDX-Max-Lines"] == "4"


def test_paged_answers_lack_captures_after_the_zipnum_was_built() -> None:
    with IAArchive(ROWS, paged_until="20170131235959") as archive:
        host = {"url": "example.edu", "matchType": "host"}
        assert found(archive, **host, page="0") == [1, 2, 5, 6, 7]
        assert found(archive, **host) == HOST


def test_a_server_without_the_pagination_api_answers_the_size_question_with_rows() -> None:
    with IAArchive(ROWS, paginated=False) as archive:
        host = {"url": "example.edu", "matchType": "host"}
        answer = get(archive, **host, showNumPages="true", pageSize="1")
        assert answer.status_code == 200 and "X-CDX-Num-Pages" not in answer.headers
        assert answer.text.splitlines()[0].startswith("edu,example)/ 20170105000000 ")
        assert found(archive, **host, page="1") == HOST  # page ignored too


def test_a_proxy_answers_the_size_question_with_an_html_page_and_200() -> None:
    page = b"<!DOCTYPE html><html><body><h1>Service Unavailable</h1></body></html>"
    with IAArchive(ROWS, size_page=page) as archive:
        answer = get(archive, url="example.edu", matchType="host", showNumPages="true")
        assert answer.status_code == 200 and answer.content == page
        assert answer.headers["Content-Type"].startswith("text/html")
        assert found(archive, url="example.edu", matchType="host") == HOST  # queries answer


# --- The recall gap --------------------------------------------------------------------------


def test_exact_only_captures_are_left_out_of_every_wider_query() -> None:
    hidden = Row(
        "edu,example)/~a", "20170215000000", "http://example.edu/~a/", "text/html", "200", "A9", "9"
    )
    with IAArchive(ROWS, exact_only=[hidden]) as archive:
        exact = get(archive, url="example.edu/~a/", output="json").json()
        assert [row[1] for row in exact[1:]] == [
            "20170101000000",
            "20170201000000",
            "20170215000000",
            "20170301000000",
        ]
        for params in (
            {"matchType": "prefix", "url": "example.edu/~a"},
            {"matchType": "host", "url": "example.edu"},
            {"matchType": "domain", "url": "example.edu"},
            {"url": "example.edu/~a/", "page": "0"},
        ):
            answer = get(archive, output="json", **params).json()
            assert "20170215000000" not in [row[1] for row in answer], params


# --- Fields and formats ----------------------------------------------------------------------


def test_fl_chooses_and_orders_the_fields_and_names_them_in_the_header(archive: IAArchive) -> None:
    answer = get(archive, url="example.edu/~a/", output="json", fl="timestamp,digest").json()
    assert answer == [
        ["timestamp", "digest"],
        ["20170101000000", "A1"],
        ["20170201000000", "A2"],
        ["20170301000000", "A2"],
    ]


def test_plain_text_has_one_line_a_capture_and_the_key_after_a_blank_line(
    archive: IAArchive,
) -> None:
    answer = get(archive, url="example.edu/~a/", fl="timestamp", limit="2", showResumeKey="true")
    assert answer.headers["Content-Type"].startswith("text/plain")
    assert answer.text == (
        "20170101000000\n20170201000000\n\nedu%2Cexample%29%2F%7Ea+20170201000001\n"
    )


def test_collapse_is_ignored_and_options_the_fake_lacks_are_refused(archive: IAArchive) -> None:
    assert found(archive, url="example.edu/~a/", collapse="digest") == [2, 3, 4]
    refused = get(archive, url="example.edu/~a/", filter="statuscode:200")
    assert refused.status_code == 400 and "filter" in refused.text
    assert get(archive, url="example.edu/~a/", limit="-1").status_code == 400
    assert get(archive, url="example.edu/~a/", fl="urlkey,robotflags").status_code == 400
    assert get(archive, matchType="host").status_code == 400  # no url


def test_answers_are_gzipped_when_asked_like_the_real_server() -> None:
    with IAArchive(ROWS, gzip=True) as archive:
        answer = requests.get(
            archive.cdx_url,
            params={"url": "example.edu/~a/", "output": "json"},
            headers={"Accept-Encoding": "gzip"},
            stream=True,
            timeout=10,
        )
        raw = answer.raw.read()
        assert answer.headers["Content-Encoding"] == "gzip"
        assert len(json.loads(gzip.decompress(raw))) == 4
        logged = archive.requests_to("cdx")[-1]
        assert logged.sent == len(raw) < logged.raw
        plain = get(archive, url="example.edu/~a/", gzip="false")
        assert "Content-Encoding" not in plain.headers


# --- Faults, for every match type ------------------------------------------------------------


@pytest.mark.parametrize(
    "params",
    [
        {"url": "example.edu/~a/"},
        {"url": "example.edu/~a", "matchType": "prefix"},
        {"url": "example.edu", "matchType": "host"},
        {"url": "example.edu", "matchType": "domain"},
    ],
)
def test_queued_faults_apply_to_every_match_type(
    archive: IAArchive, params: dict[str, str]
) -> None:
    archive.state.faults.extend(
        [
            Fault("status", status=429, retry_after="7", on="cdx"),
            Fault("status", status=503, on="cdx"),
        ]
    )
    throttled = get(archive, **params)
    assert throttled.status_code == 429 and throttled.headers["Retry-After"] == "7"
    assert get(archive, **params).status_code == 503
    assert get(archive, **params).status_code == 200


def test_an_endless_site_makes_every_query_covering_it_endless(archive: IAArchive) -> None:
    archive.state.endless_prefixes.add("example.edu/~a")
    for params in (
        {"url": "example.edu/~a", "matchType": "prefix"},
        {"url": "example.edu", "matchType": "host"},
        {"url": "*.example.edu"},
    ):
        keys = {get(archive, output="json", **params).json()[-1][0] for _ in range(2)}
        assert len(keys) == 2 and all(k.startswith("endless-") for k in keys), params
    assert found(archive, url="example.edu/~b", matchType="prefix") == [7]


def test_a_blocked_site_refuses_its_own_queries_and_drops_out_of_wider_ones(
    archive: IAArchive,
) -> None:
    archive.state.blocked_prefixes.add("example.edu/~b")
    for params in ({"url": "example.edu/~b", "matchType": "prefix"}, {"url": "example.edu/~b/"}):
        refused = get(archive, **params)
        assert refused.status_code == 403
        assert "AdministrativeAccessControlException" in refused.text
    assert found(archive, url="example.edu", matchType="host") == [1, 2, 3, 4, 5, 6]


# --- The index grows; mementos -----------------------------------------------------------------


def test_lines_added_later_are_served_in_order(archive: IAArchive) -> None:
    archive.add_lines(
        [
            "edu,example)/~a 20170401000000 http://example.edu/~a/ text/html 200 A3 9",
            "edu,example)/~a 20170102000000 http://example.edu/~a/ text/html 200 A1 9",
        ]
    )
    answer = get(archive, url="example.edu/~a/", output="json", fl="timestamp").json()
    assert [row[0] for row in answer[1:]] == [
        "20170101000000",
        "20170102000000",
        "20170201000000",
        "20170301000000",
        "20170401000000",
    ]


def test_mementos_come_from_bodies_or_are_made_on_demand() -> None:
    def body_for(stamp: str, url: str) -> Any:
        return (f"<p>{url} at {stamp}</p>".encode(), "text/html") if stamp < "2018" else None

    bodies = {("20170101000000", "http://example.edu/~a/"): (b"given", "text/html")}
    with IAArchive(ROWS, bodies, body_for=body_for) as archive:
        base = archive.wayback_url
        given = requests.get(f"{base}/20170101000000id_/http://example.edu/~a/", timeout=10)
        made = requests.get(f"{base}/20170201000000id_/http://example.edu/~a/", timeout=10)
        missing = requests.get(f"{base}/20190101000000id_/http://example.edu/~a/", timeout=10)
        assert given.content == b"given"
        assert made.text == "<p>http://example.edu/~a/ at 20170201000000</p>"
        assert missing.status_code == 404
        assert len(archive.requests_to("web")) == 3
