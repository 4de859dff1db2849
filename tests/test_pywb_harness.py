"""The pywb harness (testbed/pywb.py) serves the demo archive the way HACS expects.

These also pin down what pywb 2.10's CDX API and id_ mementos really answer, so that HACS's
archive client is written against observed behaviour rather than against documentation.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import psutil
import pytest
from warcio.archiveiterator import ArchiveIterator

from hacs_demo import DemoArchive, build_demo_archive
from testbed.pywb import PywbServer, ensure_pywb_venv, http_get

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> DemoArchive:
    # Ten sites: site 9 shares site 8's host with a longer user name (~bar and ~barx).
    return build_demo_archive(tmp_path_factory.mktemp("pywb-demo"), sites=10, seed=1)


@pytest.fixture(scope="module")
def truth(demo: DemoArchive) -> dict[str, Any]:
    doc: dict[str, Any] = json.loads(demo.truth_path.read_text(encoding="utf-8"))
    return doc


@pytest.fixture(scope="module")
def pywb(demo: DemoArchive) -> Iterator[PywbServer]:
    with PywbServer([demo.warc_path], "demo") as server:
        yield server


def clean_cdx_lines(demo: DemoArchive, truth: dict[str, Any]) -> list[list[str]]:
    dirty = {d["line"] for d in truth["cdx_dirt"]}
    lines = demo.cdx_path.read_text(encoding="utf-8").splitlines()
    return [line.split(" ") for n, line in enumerate(lines, start=1) if n > 1 and n not in dirty]


def warc_payload(demo: DemoArchive, url: str, timestamp: str) -> bytes:
    """The HTTP payload of the response record for (url, timestamp), read via the CDX."""
    for fields in demo.cdx_path.read_text(encoding="utf-8").splitlines()[1:]:
        f = fields.split(" ")
        if len(f) == 11 and f[2] == url and f[1] == timestamp and f[3] != "warc/revisit":
            with open(demo.warc_path, "rb") as fh:
                fh.seek(int(f[9]))
                record = next(iter(ArchiveIterator(fh)))
                return bytes(record.content_stream().read())
    raise LookupError((url, timestamp))


def cdx_query(pywb: PywbServer, **params: str) -> tuple[int, dict[str, str], str]:
    status, headers, body = http_get(f"{pywb.cdx_url}?{urlencode(params)}")
    return status, headers, body.decode("utf-8")


def busiest_site(truth: dict[str, Any], index: int | None = None) -> dict[str, Any]:
    sites = truth["sites"] if index is None else [truth["sites"][index]]
    return max(sites, key=lambda s: len(s["captures"]))


# ------------------------------------------------------------------------------------------


def test_venv_is_built_once_and_reused() -> None:
    first = ensure_pywb_venv()
    again = ensure_pywb_venv()
    assert first == again
    for path in (first.wayback, first.wb_manager, first.cdx_indexer):
        assert path.is_file()
    assert first.bin_dir.parent.name == ".venv-pywb"


def test_cdx_indexer_writes_exactly_the_demo_cdx_minus_its_dirt(
    demo: DemoArchive, truth: dict[str, Any]
) -> None:
    tools = ensure_pywb_venv()
    result = subprocess.run(
        [str(tools.cdx_indexer), "--sort", demo.warc_path.name],
        cwd=demo.outdir,
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
    )
    dirty = {d["line"] for d in truth["cdx_dirt"]}
    lines = demo.cdx_path.read_text(encoding="utf-8").splitlines(keepends=True)
    assert result.stdout == "".join(line for n, line in enumerate(lines, 1) if n not in dirty)


def test_prefix_query_returns_one_json_object_per_line_for_the_sites_captures(
    pywb: PywbServer, demo: DemoArchive, truth: dict[str, Any]
) -> None:
    site = busiest_site(truth)
    status, headers, body = cdx_query(
        pywb,
        url=f"{site['host']}/~{site['user']}",
        matchType="prefix",
        allowFuzzy="0",
        output="json",
    )
    assert status == 200
    assert headers["Content-Type"].startswith("text/x-ndjson")
    rows = [json.loads(line) for line in body.splitlines()]
    prefix = site["captures"][0]["urlkey"].split(")")[0] + f")/~{site['user']}"
    expected = {(f[0], f[1]) for f in clean_cdx_lines(demo, truth) if f[0].startswith(prefix)}
    assert {(r["urlkey"], r["timestamp"]) for r in rows} == expected
    assert len(rows) == len(expected)  # no line twice
    mine = {c["cdx_line"]: c for c in site["captures"] if c["in_warc"]}
    by_key = {(c["urlkey"], c["timestamp"]): c for c in mine.values()}
    for row in rows:
        capture = by_key[(row["urlkey"], row["timestamp"])]
        assert row["url"] == capture["url"] and row["digest"] == capture["digest"]
        if capture["status"] is None:
            # pywb's JSON leaves "status" out of revisit rows (the text CDX says "-").
            assert row["mime"] == "warc/revisit" and "status" not in row
        else:
            assert row["mime"] == capture["mime"] and row["status"] == str(capture["status"])


def test_prefix_query_also_returns_a_longer_user_name_on_the_same_host(
    pywb: PywbServer, truth: dict[str, Any]
) -> None:
    """DESIGN.md: "~barx is not under ~bar" -- the CDX server does not know that."""
    bar, barx = truth["sites"][8], truth["sites"][9]
    assert bar["host"] == barx["host"] and barx["user"].startswith(bar["user"])
    _, _, body = cdx_query(
        pywb, url=f"{bar['host']}/~{bar['user']}", matchType="prefix", allowFuzzy="0", output="json"
    )
    users = {json.loads(line)["urlkey"].split(")/")[1].split("/")[0] for line in body.splitlines()}
    assert bar["captures"] and barx["captures"]
    assert users == {f"~{bar['user']}", f"~{barx['user']}"}


def test_exact_query_and_trailing_star_and_no_match(
    pywb: PywbServer, truth: dict[str, Any]
) -> None:
    site = busiest_site(truth)
    home_key = site["captures"][0]["urlkey"].split(")")[0] + f")/~{site['user']}"
    url = f"{site['host']}/~{site['user']}/"
    _, _, exact = cdx_query(pywb, url=url, allowFuzzy="0", output="json")
    assert {json.loads(line)["urlkey"] for line in exact.splitlines()} == {home_key}
    _, _, star = cdx_query(pywb, url=url[:-1] + "*", allowFuzzy="0", output="json")
    _, _, prefix = cdx_query(pywb, url=url[:-1], matchType="prefix", allowFuzzy="0", output="json")
    assert star == prefix
    status, _, nothing = cdx_query(pywb, url="nothing.example.edu/~nobody", output="json")
    assert status == 200 and nothing == ""  # no captures: an empty 200, not a 404


def test_id_memento_returns_the_original_html_bytes(
    pywb: PywbServer, demo: DemoArchive, truth: dict[str, Any]
) -> None:
    site = busiest_site(truth)
    checked = 0
    for capture in site["captures"]:
        if capture["kind"] != "observation" or checked >= 5:
            continue
        status, headers, body = http_get(pywb.memento_url(capture["timestamp"], capture["url"]))
        assert status == 200
        assert body == warc_payload(demo, capture["url"], capture["timestamp"])
        assert headers["Memento-Datetime"]
        checked += 1
    assert checked == 5


def test_revisit_memento_resolves_to_the_original_payload(
    pywb: PywbServer, demo: DemoArchive, truth: dict[str, Any]
) -> None:
    revisits = [
        (site, c) for site in truth["sites"] for c in site["captures"] if c["kind"] == "revisit"
    ]
    assert revisits
    for site, capture in revisits[:: max(1, len(revisits) // 5)]:
        original = next(
            c
            for c in site["captures"]
            if c["urlkey"] == capture["urlkey"] and c["timestamp"] == capture["refers_to"]
        )
        status, headers, body = http_get(pywb.memento_url(capture["timestamp"], capture["url"]))
        assert status == 200
        assert body == warc_payload(demo, original["url"], original["timestamp"])
        assert capture["timestamp"] in headers["Content-Location"]  # the revisit, not the original


def test_archived_errors_keep_their_status_and_say_they_are_mementos(
    pywb: PywbServer, truth: dict[str, Any]
) -> None:
    errors = [c for s in truth["sites"] for c in s["captures"] if c["kind"] == "error"]
    assert errors
    capture = errors[0]
    status, headers, _ = http_get(pywb.memento_url(capture["timestamp"], capture["url"]))
    assert status == capture["status"]
    assert "Memento-Datetime" in headers  # an archived 404, unlike "no capture here"
    status, headers, _ = http_get(pywb.memento_url("20160101000000", "http://nothing.example/"))
    assert status == 404 and "Memento-Datetime" not in headers


def test_server_leaves_no_process_or_directory_behind(demo: DemoArchive) -> None:
    with PywbServer([demo.warc_path], "leftovers") as server:
        assert server.pid is not None and server.directory is not None
        leader = psutil.Process(server.pid)
        group = [leader, *leader.children(recursive=True)]
        directory = server.directory
        status, _, _ = http_get(f"{server.cdx_url}?url=example.edu/&output=json")
        assert status == 200
    for proc in group:
        assert not proc.is_running() or proc.status() == psutil.STATUS_ZOMBIE
    assert not directory.exists()
    for proc in psutil.process_iter(["cmdline", "cwd"]):
        try:
            assert str(directory) != (proc.info["cwd"] or "")
        except psutil.Error:
            continue


def test_server_rejects_a_missing_warc(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="no such WARC"):
        PywbServer([tmp_path / "nope.warc.gz"])
