"""``build_demo_archive``: draw the world, plan its captures, write the four files."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import date
from pathlib import Path

from hacs_demo.captures import plan_captures
from hacs_demo.cdx import write_cdx
from hacs_demo.files import CDX_NAME, SEEDS_NAME, TRUTH_NAME, WARC_NAME
from hacs_demo.seedlist import write_seeds
from hacs_demo.truth import write_truth
from hacs_demo.warc import write_warc
from hacs_demo.world import World

MIN_SPAN_DAYS = 30


@dataclass(frozen=True)
class DemoArchive:
    """Where ``build_demo_archive`` wrote its files and how much it wrote."""

    outdir: Path
    warc_path: Path
    cdx_path: Path
    seeds_path: Path
    truth_path: Path
    sites: int
    pages: int
    captures: int  # response + revisit records in the WARC == clean lines of the CDX
    cdx_lines: int  # data lines of the CDX, dirt included (header excluded)
    dirty_lines: int  # duplicate, impossible-date and truncated CDX lines
    observations: int  # captures that are observations by DESIGN.md rule 1 (any depth)
    update_events: int  # true link-adding events on HTML pages, all depths
    seed_rows: int  # data rows of seeds.csv, bad ones included


def build_demo_archive(
    outdir: Path | str,
    *,
    sites: int = 40,
    seed: int = 0,
    start: date = date(2015, 6, 1),
    end: date = date(2018, 6, 1),
    warc_name: str = WARC_NAME,
    writing: Callable[[str], None] | None = None,
    bursts: bool = True,
) -> DemoArchive:
    """Write ``demo.warc.gz``, ``demo.cdx``, ``seeds.csv`` and ``truth.json`` into ``outdir``.

    ``sites`` authors, random world drawn from ``seed``, captures between ``start`` (00:00 UTC)
    and ``end`` (00:00 UTC, exclusive). Existing files of those names are replaced. The WARC
    file is named ``warc_name`` instead when given (``load_demo`` names the demo archive HACS
    replays itself ``LOCAL_WARC_NAME``); the CDX and the truth name it too. ``writing`` is
    told each file's name as its writing starts (a terminal's progress bar names it).
    ``bursts`` False writes the demo without bursts: every page adds links as a plain Poisson
    process of its rate (``hacs_demo.span.Span``); captures are drawn as before.
    """
    tell = writing or (lambda _name: None)
    _check_arguments(sites, seed, start, end, warc_name)
    out = Path(outdir)
    out.mkdir(parents=True, exist_ok=True)
    world = _world(sites, seed=seed, start=start, end=end, bursts=bursts)
    tell(warc_name)
    captures = write_warc(world, out / warc_name)
    tell(CDX_NAME)
    cdx_lines, dirt = write_cdx(out / CDX_NAME, seed, world.span, captures, warc_name)
    tell(SEEDS_NAME)
    seed_rows = write_seeds(out / SEEDS_NAME, world.sites)
    tell(TRUTH_NAME)
    write_truth(out / TRUTH_NAME, world, captures, dirt, seed_rows, warc_name)

    return DemoArchive(
        outdir=out,
        warc_path=out / warc_name,
        cdx_path=out / CDX_NAME,
        seeds_path=out / SEEDS_NAME,
        truth_path=out / TRUTH_NAME,
        sites=sites,
        pages=sum(len(s.pages) for s in world.sites),
        captures=len(captures),
        cdx_lines=cdx_lines,
        dirty_lines=len(dirt),
        observations=sum(1 for c in captures if c.observation),
        update_events=world.update_events(),
        seed_rows=len(seed_rows),
    )


def _world(sites: int, *, seed: int, start: date, end: date, bursts: bool) -> World:
    """The random world of ``sites`` authors drawn from ``seed``, their captures planned."""
    world = World(seed=seed, start=start, end=end, bursts=bursts)
    for index in range(sites):
        world.add_site(index)
    for site in world.sites:
        plan_captures(site)
    return world


def _check_arguments(sites: int, seed: int, start: date, end: date, warc_name: str) -> None:
    """Refuse arguments a management command or a test might pass by mistake, saying why."""
    if isinstance(sites, bool) or not isinstance(sites, int) or sites < 1:
        raise ValueError(f"sites must be a positive integer, got {sites!r}")
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise ValueError(f"seed must be a non-negative integer, got {seed!r}")
    if not (isinstance(start, date) and isinstance(end, date)):
        raise ValueError("start and end must be dates")
    if (end - start).days < MIN_SPAN_DAYS:
        raise ValueError(f"end ({end}) must be at least {MIN_SPAN_DAYS} days after start ({start})")
    if not warc_name.endswith(".warc.gz") or "/" in warc_name or warc_name.startswith("."):
        raise ValueError(
            f"warc_name must be a plain file name ending in .warc.gz, got {warc_name!r}"
        )
