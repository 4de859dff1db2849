"""``demo.cdx``: the captures as an 11-field CDX file, plus deliberate dirt.

The clean lines are byte for byte what pywb's ``cdx-indexer --sort`` writes for
``demo.warc.gz``, so HACS's CDX reader is tested against the real tool's output. Real CDX
files are not clean, though, so the demo adds what librarians meet in them -- exact duplicate
lines, a line dated in month 13 and a truncated line -- and lists each in the truth.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from hacs_demo.files import CDX_HEADER, WARC_NAME
from hacs_demo.model import Capture
from hacs_demo.span import Span

DIRT_STREAM = 1_000_003  # the dirt's random stream, apart from every site's


@dataclass
class CdxDirt:
    """A dirty CDX line: a copy of ``cap``'s line, or that line spoiled."""

    kind: str  # duplicate | bad_line
    reason: str
    cap: Capture
    line: int = 0  # 1-based line number in the file (the header is line 1)
    text: str = ""
    of_line: int | None = None  # duplicates: the line it repeats


_Line = tuple[str, CdxDirt | None, Capture]  # text with newline, its dirt if dirty, capture


def write_cdx(
    path: Path, seed: int, span: Span, captures: list[Capture], warc_name: str = WARC_NAME
) -> tuple[int, list[CdxDirt]]:
    """Write the CDX of the WARC file ``warc_name`` as ``cdx-indexer --sort`` would, then add
    dirt; returns the number of data lines and the dirt. Sets each capture's ``cdx_line``."""
    lines = _with_dirt(seed, _clean_lines(span, captures, warc_name))
    dirt: list[CdxDirt] = []
    with open(path, "w", encoding="utf-8", newline="") as f:
        f.write(CDX_HEADER + "\n")
        for lineno, (text, info, cap) in enumerate(lines, start=2):
            f.write(text)
            if info is None:
                cap.cdx_line = lineno
            else:
                info.line, info.text = lineno, text.rstrip("\n")
                dirt.append(info)
    for d in dirt:
        d.of_line = d.cap.cdx_line if d.kind == "duplicate" else None
    return len(lines), dirt


def _clean_lines(span: Span, captures: list[Capture], warc_name: str) -> list[tuple[str, Capture]]:
    lines = []
    for cap in captures:
        status = "-" if cap.record_type == "revisit" else str(cap.status)
        fields = (
            cap.urlkey,
            span.ts14(cap.sec),
            cap.url,
            cap.mime,
            status,
            cap.digest,
            "-",
            "-",
            str(cap.length),
            str(cap.offset),
            warc_name,
        )
        lines.append((" ".join(fields) + "\n", cap))
    # pywb sorts the text lines, newline included (SortedCDXWriter); so do we.
    lines.sort(key=lambda pair: pair[0])
    return lines


def _with_dirt(seed: int, lines: list[tuple[str, Capture]]) -> list[_Line]:
    """The sorted lines with one line in 400 (at least two) repeated, one truncated and one
    given month 13; a tiny archive (a site or two, rarely captured) gets no dirt."""
    rng = np.random.default_rng([seed, DIRT_STREAM])
    n = len(lines)
    n_dup = max(2, n // 400)
    if n < n_dup + 2:
        dup_idx, bad_idx, trunc_idx = set[int](), -1, -1
    else:
        picks = rng.choice(n, size=n_dup + 2, replace=False).tolist()
        dup_idx, bad_idx, trunc_idx = set(picks[:n_dup]), picks[n_dup], picks[n_dup + 1]

    out: list[_Line] = []
    for i, (text, cap) in enumerate(lines):
        out.append((text, None, cap))
        if i in dup_idx:
            out.append((text, CdxDirt("duplicate", "repeated line", cap), cap))
        if i == trunc_idx:
            cut = text.rstrip("\n")
            cut = cut[: int(len(cut) * 0.55)]
            why = f"truncated line ({len(cut.split())} of 11 fields)"
            out.append((cut + "\n", CdxDirt("bad_line", why, cap), cap))
    if bad_idx >= 0:
        # The impossible date goes where a sort would put it.
        text, cap = lines[bad_idx]
        key, ts, rest = text.split(" ", 2)
        bad_text = f"{key} {ts[:4]}13{ts[6:]} {rest}"
        month13 = CdxDirt("bad_line", "impossible timestamp (month 13)", cap)
        pos = bisect.bisect_right([t for t, _, _ in out], bad_text)
        out.insert(pos, (bad_text, month13, cap))
    return out
