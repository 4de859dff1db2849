"""The synthetic archive (``hacs_demo``): its files agree with each other and with the truth,
and its pieces -- the editing-session model, page histories, link writing, rendering, capture
planning -- each keep the promises the truth relies on."""

from __future__ import annotations

import csv
import json
import math
import subprocess
import sys
from collections import defaultdict
from datetime import date
from pathlib import Path
from typing import Any

import pytest
import surt
from warcio.archiveiterator import ArchiveIterator

from hacs_demo import CDX_HEADER, DemoArchive, build_demo_archive, canonical_link
from tests.hacs_demo._helpers import parse_links, sha1_b32

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> DemoArchive:
    return build_demo_archive(tmp_path_factory.mktemp("demo"), sites=40, seed=0)


@pytest.fixture(scope="module")
def truth(demo: DemoArchive) -> dict[str, Any]:
    doc: dict[str, Any] = json.loads(demo.truth_path.read_text(encoding="utf-8"))
    return doc


@pytest.fixture(scope="module")
def warc_records(demo: DemoArchive) -> list[dict[str, Any]]:
    """Every record of the WARC, read with warcio, with its offset and length."""
    records = []
    with open(demo.warc_path, "rb") as f:
        it = ArchiveIterator(f)
        for rec in it:
            entry = {
                "type": rec.rec_type,
                "uri": rec.rec_headers.get_header("WARC-Target-URI"),
                "date": rec.rec_headers.get_header("WARC-Date"),
                "payload_digest": rec.rec_headers.get_header("WARC-Payload-Digest"),
                "refers_to_uri": rec.rec_headers.get_header("WARC-Refers-To-Target-URI"),
                "refers_to_date": rec.rec_headers.get_header("WARC-Refers-To-Date"),
                "profile": rec.rec_headers.get_header("WARC-Profile"),
                "status": rec.http_headers.get_statuscode() if rec.http_headers else None,
                "content_type": rec.http_headers.get_header("Content-Type")
                if rec.http_headers
                else None,
                "body": rec.content_stream().read(),
                "offset": it.get_record_offset(),
            }
            records.append(entry)
    return records


def warc_ts(iso: str) -> str:
    return iso.replace("-", "").replace(":", "").replace("T", "").replace("Z", "")


def all_captures(truth: dict[str, Any]) -> list[dict[str, Any]]:
    return [c for site in truth["sites"] for c in site["captures"]]


# ------------------------------------------------------------------------------------------
# Determinism and arguments


def test_same_seed_gives_byte_identical_files(tmp_path: Path) -> None:
    a = build_demo_archive(tmp_path / "a", sites=6, seed=7)
    b = build_demo_archive(tmp_path / "b", sites=6, seed=7)
    for name in ("demo.warc.gz", "demo.cdx", "seeds.csv", "truth.json"):
        assert (a.outdir / name).read_bytes() == (b.outdir / name).read_bytes(), name
    c = build_demo_archive(tmp_path / "c", sites=6, seed=8)
    assert c.cdx_path.read_bytes() != a.cdx_path.read_bytes()


def test_a_sites_world_does_not_depend_on_how_many_sites_there_are(tmp_path: Path) -> None:
    small = json.loads(build_demo_archive(tmp_path / "s", sites=3).truth_path.read_text())
    large = json.loads(build_demo_archive(tmp_path / "l", sites=7).truth_path.read_text())
    for one, other in zip(small["sites"], large["sites"], strict=False):
        for key in ("seed_url", "author", "rate_per_day", "events", "pages", "link_sets"):
            assert one[key] == other[key], key


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"sites": 0}, "sites"),
        ({"seed": -1}, "seed"),
        ({"start": date(2018, 1, 1), "end": date(2017, 1, 1)}, "after start"),
    ],
)
def test_it_rejects_bad_arguments(tmp_path: Path, kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        build_demo_archive(tmp_path, **kwargs)


def test_a_short_span_and_other_dates_work(tmp_path: Path) -> None:
    demo = build_demo_archive(tmp_path, sites=3, start=date(2020, 2, 1), end=date(2020, 5, 1))
    truth = json.loads(demo.truth_path.read_text())
    stamps = [c["timestamp"] for c in all_captures(truth) if c["in_warc"]]
    assert stamps and min(stamps) >= "20200201" and max(stamps) < "20200501"


def test_the_package_stays_out_of_django() -> None:
    code = (
        "import importlib, pkgutil, sys, hacs_demo\n"
        "names = [m.name for m in pkgutil.walk_packages(hacs_demo.__path__, 'hacs_demo.')]\n"
        "for name in names:\n"
        "    importlib.import_module(name)\n"
        "assert len(names) > 10, names\n"
        "assert 'django' not in sys.modules, sorted(sys.modules)\n"
    )
    subprocess.run([sys.executable, "-c", code], cwd=ROOT, check=True)


def test_the_public_names_stay_importable() -> None:
    import hacs_demo

    for name in (
        "build_demo_archive",
        "DemoArchive",
        "CDX_HEADER",
        "canonical_link",
        "WARC_NAME",
        "CDX_NAME",
        "SEEDS_NAME",
        "TRUTH_NAME",
        "TRUTH_SCHEMA",
    ):
        assert name in hacs_demo.__all__ and hasattr(hacs_demo, name), name


# ------------------------------------------------------------------------------------------
# WARC, CDX and truth agree


def test_every_warc_record_parses_and_digests_are_right(
    demo: DemoArchive, warc_records: list[dict[str, Any]]
) -> None:
    assert warc_records[0]["type"] == "warcinfo"
    captures = warc_records[1:]
    assert {r["type"] for r in captures} == {"response", "revisit"}
    assert len(captures) == demo.captures
    for r in captures:
        assert r["payload_digest"].startswith("sha1:")
        if r["type"] == "response":
            assert r["payload_digest"] == "sha1:" + sha1_b32(r["body"])
        else:
            assert r["profile"].endswith("/revisit/identical-payload-digest")
            assert r["body"] == b""
            assert r["refers_to_uri"] and r["refers_to_date"]


def test_revisits_point_at_a_response_with_the_same_payload(
    warc_records: list[dict[str, Any]], truth: dict[str, Any]
) -> None:
    responses = {(r["uri"], r["date"]): r for r in warc_records if r["type"] == "response"}
    orphans = {
        (c["url"], c["timestamp"]) for c in all_captures(truth) if c["kind"] == "orphan_revisit"
    }
    assert orphans, "the demo should hold a few revisits whose original is elsewhere"
    for r in warc_records:
        if r["type"] != "revisit":
            continue
        original = responses.get((r["refers_to_uri"], r["refers_to_date"]))
        if (r["uri"], warc_ts(r["date"])) in orphans:
            assert original is None
            continue
        assert original is not None, r["uri"]
        assert original["payload_digest"] == r["payload_digest"]
        assert surt.surt(original["uri"]) == surt.surt(r["uri"])
        assert original["date"] < r["date"]


def test_cdx_header_and_clean_lines_match_the_warc(
    demo: DemoArchive, truth: dict[str, Any], warc_records: list[dict[str, Any]]
) -> None:
    lines = demo.cdx_path.read_text(encoding="utf-8").splitlines()
    assert lines[0] == CDX_HEADER
    dirty = {d["line"] for d in truth["cdx_dirt"]}
    clean = [line for n, line in enumerate(lines, start=1) if n > 1 and n not in dirty]
    assert len(lines) - 1 == demo.cdx_lines == len(clean) + len(dirty)
    assert len(clean) == demo.captures == truth["counts"]["captures"]
    assert clean == sorted(clean)

    by_offset = {r["offset"]: r for r in warc_records}
    for line in clean:
        key, ts, url, mime, status, digest, redirect, meta, length, offset, name = line.split(" ")
        record = by_offset[int(offset)]
        assert (record["uri"], warc_ts(record["date"])) == (url, ts)
        assert key == surt.surt(url)
        assert record["payload_digest"] == "sha1:" + digest
        assert (redirect, meta, name) == ("-", "-", "demo.warc.gz")
        if record["type"] == "revisit":
            assert (mime, status) == ("warc/revisit", "-")
        else:
            assert status == record["status"]
            assert mime == record["content_type"].split(";")[0].strip()
    offsets = sorted(int(line.split(" ")[9]) for line in clean)
    lengths = {int(line.split(" ")[9]): int(line.split(" ")[8]) for line in clean}
    for here, after in zip(offsets, offsets[1:], strict=False):
        assert here + lengths[here] == after  # records are back to back
    assert offsets[-1] + lengths[offsets[-1]] == demo.warc_path.stat().st_size


def test_truth_lists_each_cdx_line_once(demo: DemoArchive, truth: dict[str, Any]) -> None:
    lines = demo.cdx_path.read_text(encoding="utf-8").splitlines()
    numbers = sorted(c["cdx_line"] for c in all_captures(truth))
    assert numbers == list(range(2, len(lines) + 1))
    for c in all_captures(truth):
        fields = lines[c["cdx_line"] - 1].split(" ")
        if c["in_warc"]:
            assert fields[:3] == [c["urlkey"], c["timestamp"], c["url"]]
            assert fields[5] == c["digest"]
            assert (fields[4] == "-") == (c["status"] is None)


def test_dirty_lines_are_where_the_truth_says(demo: DemoArchive, truth: dict[str, Any]) -> None:
    lines = demo.cdx_path.read_text(encoding="utf-8").splitlines()
    dirt = truth["cdx_dirt"]
    assert truth["counts"]["dirty_lines"] == demo.dirty_lines == len(dirt)
    kinds = defaultdict(list)
    for d in dirt:
        assert lines[d["line"] - 1] == d["text"]
        kinds[d["reason"].split(" (")[0]].append(d)
        if d["kind"] == "duplicate":
            assert d["text"] == lines[d["of_line"] - 1]
    assert len(kinds["repeated line"]) >= 2
    (month13,) = kinds["impossible timestamp"]
    assert month13["text"].split(" ")[1][4:6] == "13"
    (truncated,) = kinds["truncated line"]
    assert len(truncated["text"].split()) < 11
    # Everything else is a well-formed 11-field line with a real date.
    listed = {d["line"] for d in dirt}
    for n, line in enumerate(lines[1:], start=2):
        if n in listed and "repeated" not in next(d["reason"] for d in dirt if d["line"] == n):
            continue
        fields = line.split(" ")
        assert len(fields) == 11
        date(int(fields[1][:4]), int(fields[1][4:6]), int(fields[1][6:8]))


# ------------------------------------------------------------------------------------------
# Links and update flags


def test_truth_link_sets_match_a_plain_parse_of_the_stored_html(
    truth: dict[str, Any], warc_records: list[dict[str, Any]]
) -> None:
    link_sets = {d: set(links) for site in truth["sites"] for d, links in site["link_sets"].items()}
    checked = 0
    for r in warc_records:
        if r["type"] != "response" or r["status"] != "200" or "html" not in r["content_type"]:
            continue
        assert parse_links(r["body"], r["uri"]) == link_sets[r["payload_digest"][5:]], r["uri"]
        checked += 1
    assert checked > 1000


def test_truth_link_sets_match_archive_links_extract_links(
    truth: dict[str, Any], warc_records: list[dict[str, Any]]
) -> None:
    """The same check through HACS's own extractor, which answers in SURT form."""
    links_module = pytest.importorskip("hacs.formats.links")
    link_sets = {d: links for site in truth["sites"] for d, links in site["link_sets"].items()}
    mismatches = []
    for r in warc_records:
        if r["type"] != "response" or r["status"] != "200" or "html" not in r["content_type"]:
            continue
        want = {surt.surt(u) for u in link_sets[r["payload_digest"][5:]]}
        got = set(links_module.extract_links(r["body"], r["uri"]))
        if got != want:
            mismatches.append((r["uri"], sorted(want - got)[:3], sorted(got - want)[:3]))
    assert not mismatches, f"{len(mismatches)} pages differ, e.g. {mismatches[:3]}"


def rule3_flags(
    captures: list[dict[str, Any]], link_sets: dict[str, list[str]], fold_index: bool = False
) -> dict[int, bool]:
    """DESIGN.md rule 3 over the whole history, keyed by CDX line."""

    def links(digest: str) -> set[str]:
        found = set(link_sets[digest])
        if fold_index:
            found = {u.removesuffix("/index.html") for u in found}
        return found

    seen: dict[str, set[str]] = {}
    flags = {}
    for c in sorted(
        (c for c in captures if c["observation"]), key=lambda c: (c["timestamp"], c["cdx_line"])
    ):
        current = links(c["digest"])
        if c["page"] in seen:
            flags[c["cdx_line"]] = not current <= seen[c["page"]]
            seen[c["page"]] |= current
        else:
            flags[c["cdx_line"]] = False
            seen[c["page"]] = current
    return flags


def test_update_flags_follow_rule_3_and_do_not_hinge_on_index_html(truth: dict[str, Any]) -> None:
    updates = 0
    for site in truth["sites"]:
        flags = rule3_flags(site["captures"], site["link_sets"])
        assert flags == rule3_flags(site["captures"], site["link_sets"], fold_index=True)
        for c in site["captures"]:
            assert c["update"] == flags.get(c["cdx_line"])
        updates += sum(flags.values())
    assert updates > 100


def test_capture_kinds_are_consistent(truth: dict[str, Any]) -> None:
    counts: dict[str, int] = defaultdict(int)
    for site in truth["sites"]:
        responses: dict[str, set[str]] = defaultdict(
            set
        )  # urlkey -> digests of earlier 200 HTML responses
        caps = sorted(site["captures"], key=lambda c: (c["timestamp"], c["cdx_line"]))
        for c in caps:
            counts[c["kind"]] += 1
            html_type = c["mime"] in ("text/html", "application/xhtml+xml")
            assert c["observation"] == (c["kind"] in ("observation", "revisit"))
            if c["kind"] == "observation":
                assert c["status"] == 200 and html_type
            elif c["kind"] in ("revisit", "orphan_revisit"):
                assert c["status"] is None and c["mime"] == "warc/revisit"
                assert (c["digest"] in responses[c["urlkey"]]) == (c["kind"] == "revisit")
            elif c["kind"] == "redirect":
                assert c["status"] in (301, 302) and c["location"]
            elif c["kind"] == "error":
                assert c["status"] in (404, 503)
            elif c["kind"] == "non_html":
                assert c["mime"] in ("application/pdf", "image/jpeg", "warc/revisit")
            else:
                assert c["kind"] in ("duplicate", "bad_line") and not c["in_warc"]
            if c["kind"] == "observation":
                responses[c["urlkey"]].add(c["digest"])
    for kind in ("observation", "revisit", "redirect", "error", "non_html", "duplicate"):
        assert counts[kind] > 0, kind
    assert sum(counts[k] for k in ("observation", "revisit")) == truth["counts"]["observations"]


def test_the_world_has_the_traps_it_promises(truth: dict[str, Any]) -> None:
    pages = [p for site in truth["sites"] for p in site["pages"]]
    assert {p["depth"] for p in pages} == {0, 1, 2, 3}
    assert any(p["base_href"] for p in pages)
    assert any(p["mime"] == "application/xhtml+xml" for p in pages)
    assert {site["charset"] for site in truth["sites"]} == {"utf-8", "iso-8859-1"}
    # A user directory that extends another one on the same host (~bar and ~barx).
    homes = [(site["host"], site["user"]) for site in truth["sites"]]
    assert any(h1 == h2 and u2.startswith(u1) and u1 != u2 for h1, u1 in homes for h2, u2 in homes)
    urls = {c["url"] for c in all_captures(truth)}
    assert any(u.endswith("/index.html") for u in urls)
    assert any(u.startswith("https://") for u in urls) and any("://www." in u for u in urls)
    kinds = {e["kind"] for site in truth["sites"] for e in site["events"]}
    assert kinds == {"add", "remove", "readd", "cosmetic", "restyle"}


def test_captures_come_in_bursts_with_long_gaps(truth: dict[str, Any]) -> None:
    close = long = 0
    for site in truth["sites"]:
        home = sorted(c["timestamp"] for c in site["captures"] if c["depth"] == 0 and c["in_warc"])
        days = [
            date(int(t[:4]), int(t[4:6]), int(t[6:8])).toordinal() + int(t[8:10]) / 24 for t in home
        ]
        gaps = [b - a for a, b in zip(days, days[1:], strict=False)]
        close += sum(g < 0.5 for g in gaps)
        long += sum(g > 60 for g in gaps)
    assert close > 200 and long > 20


# ------------------------------------------------------------------------------------------
# Rates


def span_days(truth: dict[str, Any]) -> int:
    return (
        date.fromisoformat(truth["generator"]["end"])
        - date.fromisoformat(truth["generator"]["start"])
    ).days


def test_long_run_mean_rates_are_recovered_from_the_events(truth: dict[str, Any]) -> None:
    """``rate_per_day`` is each site's long-run mean rate. Clustered additions make counts
    overdispersed (a session brings 1.7-3.3 links), so the check is loose: within 20% over all
    sites, within a factor of 4 for every site expecting more than 25 additions."""
    span = span_days(truth)
    for level in ("homepage", "website"):
        expected = sum(site["rate_per_day"][level] * span for site in truth["sites"])
        observed = sum(len(site["update_times"][level]) for site in truth["sites"])
        assert 0.8 < observed / expected < 1.25, (level, observed, expected)
        for site in truth["sites"]:
            times = site["update_times"][level]
            assert times == sorted(times) and all(0 < t < span for t in times)
            if site["rate_per_day"][level] * span > 25:
                ratio = len(times) / (site["rate_per_day"][level] * span)
                assert 0.25 < ratio < 4, (site["seed_url"], level, ratio)
    intervals = sorted(1 / site["rate_per_day"]["homepage"] for site in truth["sites"])
    assert 60 < intervals[len(intervals) // 2] < 200  # median near 110 days
    faster = [s["rate_per_day"]["website"] >= s["rate_per_day"]["homepage"] for s in truth["sites"]]
    assert all(faster)


def gap_statistics(
    days: dict[str, list[float]], rates: dict[str, float]
) -> tuple[list[float], int, float, int]:
    """Over a site's pages' addition days: each page's coefficient of variation of the gaps
    (pages with four gaps or more), the gaps under a week, how many a Poisson process of the
    page's rate would give, and the number of gaps."""
    cvs, short, expected, intervals = [], 0, 0.0, 0
    for page, times in days.items():
        gaps = [b - a for a, b in zip(times, times[1:], strict=False)]
        if len(gaps) >= 4:
            mean = sum(gaps) / len(gaps)
            cvs.append((sum((g - mean) ** 2 for g in gaps) / len(gaps)) ** 0.5 / mean)
        short += sum(g < 7 for g in gaps)
        expected += len(gaps) * (1 - math.exp(-7 * rates[page]))
        intervals += len(gaps)
    return cvs, short, expected, intervals


def test_link_additions_cluster_in_editing_sessions(truth: dict[str, Any]) -> None:
    """Not memoryless: intervals between a page's additions have a coefficient of variation
    above 1 (a Poisson process's is 1) and far more of them are under a week than the page's
    long-run rate would give; the truth's sessions say which additions belong together."""
    cvs, short, expected_short, intervals = [], 0, 0.0, 0
    sessions: dict[tuple[int, str, int], list[float]] = defaultdict(list)
    for site in truth["sites"]:
        assert 0.4 <= site["update_model"]["branching_ratio"] <= 0.7
        assert 0.5 < site["update_model"]["follow_up_mean_days"] < 30
        rates = {p["url"]: p["rate_per_day"] for p in site["pages"]}
        days: dict[str, list[float]] = defaultdict(list)
        for e in site["events"]:
            assert (e["session"] is not None) == (e["kind"] == "add")
            if e["kind"] == "add":
                days[e["page"]].append(e["day"])
                sessions[(site["index"], e["page"], e["session"])].append(e["day"])
        page_cvs, page_short, page_expected, page_intervals = gap_statistics(days, rates)
        cvs += page_cvs
        short += page_short
        expected_short += page_expected
        intervals += page_intervals
    assert sorted(cvs)[len(cvs) // 2] > 1.2, sorted(cvs)
    assert short > 3 * expected_short, (short, expected_short, intervals)
    sizes = [len(times) for times in sessions.values()]
    assert sum(s > 1 for s in sizes) > 0.25 * len(sizes)  # many sessions hold several links
    assert sum(sizes) / len(sizes) < 4  # ... but not many links each
    spans = sorted(max(times) - min(times) for times in sessions.values() if len(times) > 1)
    assert spans[len(spans) // 2] < 21  # a typical session is over within three weeks


def test_the_demo_without_bursts_adds_links_as_poisson_processes(tmp_path: Path) -> None:
    """``bursts=False``: no follow-ups and no term starts, so a page's intervals between additions
    have a coefficient of variation near 1 and about the share under a week that its rate gives;
    the sites, their rates and the captures' times are the bursty demo's."""
    plain = json.loads(
        build_demo_archive(tmp_path / "p", sites=40, seed=0, bursts=False).truth_path.read_text()
    )
    bursty = json.loads(build_demo_archive(tmp_path / "b", sites=40, seed=0).truth_path.read_text())
    assert plain["update_model"]["bursts"] is False and bursty["update_model"]["bursts"] is True
    cvs, short, expected_short = [], 0, 0.0
    for site, other in zip(plain["sites"], bursty["sites"], strict=True):
        assert site["seed_url"] == other["seed_url"]
        assert site["rate_per_day"] == other["rate_per_day"]
        assert site["update_model"]["branching_ratio"] == 0.0
        assert not any(p["term_sessions"] for p in site["pages"])
        rates = {p["url"]: p["rate_per_day"] for p in site["pages"]}
        days: dict[str, list[float]] = defaultdict(list)
        for e in site["events"]:
            if e["kind"] == "add":
                days[e["page"]].append(e["day"])
        page_cvs, page_short, page_expected, _ = gap_statistics(days, rates)
        cvs += page_cvs
        short += page_short
        expected_short += page_expected
    assert 0.8 < sorted(cvs)[len(cvs) // 2] < 1.1, sorted(cvs)
    assert 0.7 * expected_short < short < 1.4 * expected_short, (short, expected_short)


def test_teaching_sessions_gather_around_term_starts(truth: dict[str, Any]) -> None:
    near = total = 0
    for site in truth["sites"]:
        term_pages = {p["url"] for p in site["pages"] if p["term_sessions"]}
        assert term_pages <= {p["url"] for p in site["pages"] if "teaching/" in p["path"]}
        for e in site["events"]:
            if e["kind"] != "add" or e["page"] not in term_pages:
                continue
            day = date(int(e["timestamp"][:4]), int(e["timestamp"][4:6]), int(e["timestamp"][6:8]))
            starts = [date(day.year + k, m, d) for k in (-1, 0, 1) for m, d in ((1, 10), (8, 25))]
            near += min(abs((day - s).days) for s in starts) <= 14
            total += 1
    assert total > 50
    assert near > 0.35 * total  # 29 days in every half year: about 15% by chance


def test_website_rate_is_the_sum_of_its_html_pages(truth: dict[str, Any]) -> None:
    for site in truth["sites"]:
        pages = [p for p in site["pages"] if p["depth"] <= 2]
        assert site["rate_per_day"]["website"] == pytest.approx(
            sum(p["rate_per_day"] for p in pages)
        )
        adds = [e for e in site["events"] if e["kind"] == "add"]
        assert all(e["added"] for e in adds)  # every add event brings at least one new link
        depth = {p["url"]: p["depth"] for p in site["pages"]}
        assert len(site["update_times"]["website"]) == sum(depth[e["page"]] <= 2 for e in adds)


# ------------------------------------------------------------------------------------------
# Seeds


def test_seeds_csv_rows_match_the_truth(demo: DemoArchive, truth: dict[str, Any]) -> None:
    with open(demo.seeds_path, newline="", encoding="utf-8") as f:
        rows = list(csv.reader(f))
    assert rows[0] == ["url", "author", "tags"]
    assert len(rows) - 1 == demo.seed_rows == len(truth["seeds"])
    for seed in truth["seeds"]:
        assert rows[seed["line"] - 1] == [seed["url"], seed["author"], seed["tags"]]
    statuses = defaultdict(list)
    for seed in truth["seeds"]:
        statuses[seed["status"]].append(seed)
    assert len(statuses["ok"]) == len(truth["sites"])
    assert {s["reason"] for s in statuses["bad"]} == {"not an http(s) URL", "empty URL"}
    (dup,) = statuses["duplicate"]
    original = truth["sites"][dup["site"]]
    assert dup["url"] != original["seed_url"]
    assert canonical_link(dup["url"]).removesuffix("/index.html") == original["homepage"]
    assert any("," in s["author"] for s in statuses["ok"])  # a quoted "Last, First"
    assert any(s["url"].startswith("https://") for s in statuses["ok"])


# ------------------------------------------------------------------------------------------
# The management command


def test_make_demo_archive_command_writes_the_files(tmp_path: Path) -> None:
    if not (ROOT / "manage.py").exists():
        pytest.skip("manage.py does not exist yet")
    result = subprocess.run(
        [
            sys.executable,
            "manage.py",
            "make_demo_archive",
            str(tmp_path),
            "--sites",
            "3",
            "--seed",
            "5",
            "--start",
            "2016-01-01",
            "--end",
            "2016-07-01",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    assert "captures" in result.stdout
    truth = json.loads((tmp_path / "truth.json").read_text())
    assert truth["generator"] == {"seed": 5, "sites": 3, "start": "2016-01-01", "end": "2016-07-01"}
    bad = subprocess.run(
        [sys.executable, "manage.py", "make_demo_archive", str(tmp_path), "--sites", "0"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert bad.returncode != 0 and "sites must be a positive integer" in bad.stderr
