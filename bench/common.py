"""What the benches share: the project root, the demo archive's period and how a bench reads the
archive (its timelines for the replay, its tables for the evaluation), the Evaluation 2 and
closed-loop replay loops that several benches run with candidates of their own, the
``--sites``/``--seed`` options, and HACS's commands run in child processes (their environment
on a throw-away SQLite database, against the fake Internet Archive or not).
"""

from __future__ import annotations

import argparse
import calendar
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from datetime import date
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from hacs.bayes import GammaPrior, IntervalEvidence, fit_interval_prior, interval_evidence
from hacs.defaults import E_DAYS
from hacs.estimators import estimate_many
from hacs.evaluation import ObservationTable, evaluate
from hacs.replay import ReplayState, replay
from hacs.updates import timeline_order
from hacs_demo import DemoArchive, build_demo_archive
from testbed.demo_tables import truth_tables

FloatArray = NDArray[np.float64]
#: Each site's observations (days since START, update flags), in timeline order.
Observed = list[tuple[list[float], list[bool]]]
#: An extra model of Evaluation 2: (t, sites, the window's scorer columns) → a score per site.
Scorer = Callable[[float, np.ndarray, object], FloatArray]

ROOT = Path(__file__).resolve().parent.parent

EPOCH = date(1970, 1, 1)
START, END = date(2015, 6, 1), date(2018, 6, 1)  # the demo archive's period, and the paper's
#: The same period in days since 1970, as an ``ObservationTable`` holds times.
START_DAYS, END_DAYS = float((START - EPOCH).days), float((END - EPOCH).days)
EVAL_E_DAYS = 7.0  # Evaluation 2's e: a week
PRIOR_WEEKS = 12  # HACS fits its prior at t on every site's 12-week window ending at t


# Options ----------------------------------------------------------------------------------


def argument_parser(doc: str | None) -> argparse.ArgumentParser:
    """A bench's argument parser, described by its docstring's first paragraph, its usage line
    the command that runs it (``python -m bench.NAME``)."""
    spec = getattr(sys.modules["__main__"], "__spec__", None)
    return argparse.ArgumentParser(
        prog=f"python -m {spec.name}" if spec is not None else None,
        description=(doc or "").split("\n\n")[0],
    )


def bench_parser(
    doc: str | None, *, sites: int, seed: int = 0, demo: bool = True, sites_help: str = ""
) -> argparse.ArgumentParser:
    """:func:`argument_parser` with ``--sites`` (``sites_help`` says which, where it needs
    saying) and ``--seed`` (the seed a bench prints; the same seed repeats its figures) and,
    for a bench on the demo archive (``demo``), ``--no-bursts``: the demo without bursts
    (``demo_archive``'s ``bursts``)."""
    parser = argument_parser(doc)
    help_sites = f"{sites_help}, default {sites:,}" if sites_help else f"default {sites:,}"
    parser.add_argument("--sites", type=int, default=sites, help=help_sites)
    parser.add_argument("--seed", type=int, default=seed, help=f"default {seed}")
    if demo:
        parser.add_argument(
            "--no-bursts",
            action="store_true",
            help="the demo without bursts: pages add links as plain Poisson processes",
        )
    return parser


def add_evaluation_and_replay_options(parser: argparse.ArgumentParser) -> None:
    """``--replay-sites``, ``--skip-evaluation`` and ``--skip-replay``, for the benches that run
    Evaluation 2 (on ``--sites``) and then the replay (:func:`pak_windows`,
    :func:`replay_totals`)."""
    parser.add_argument("--replay-sites", type=int, default=500, help="default 500")
    parser.add_argument("--skip-evaluation", action="store_true")
    parser.add_argument("--skip-replay", action="store_true")


# The demo archive ---------------------------------------------------------------------------


@contextmanager
def demo_archive(sites: int, seed: int, *, bursts: bool = True) -> Iterator[DemoArchive]:
    """A demo archive with known truth (``hacs_demo``) over START … END, written into a temporary
    directory that goes when the block ends; ``bursts`` False: the demo without bursts."""
    with tempfile.TemporaryDirectory(prefix="hacs-bench-") as tmp:
        yield build_demo_archive(
            Path(tmp) / "demo", sites=sites, seed=seed, start=START, end=END, bursts=bursts
        )


def read_truth(demo: DemoArchive) -> dict[str, Any]:
    """The demo archive's ``truth.json``."""
    truth: dict[str, Any] = json.loads(demo.truth_path.read_text(encoding="utf-8"))
    return truth


def day_of(stamp: str) -> float:
    """Days since START (00:00 UTC) of a 14-digit CDX timestamp."""
    moment = calendar.timegm(time.strptime(stamp, "%Y%m%d%H%M%S"))
    return (moment - calendar.timegm(START.timetuple())) / 86400.0


def load(truth: dict[str, Any], level: str) -> tuple[Observed, list[list[float]], list[float]]:
    """Each site's observations (days since START, update flags) at ``level`` (the homepage, or
    every page of depth ≤ 2 on one timeline), its true change times and its true rate."""
    observed, changes, rates = [], [], []
    for site in truth["sites"]:
        rows = [
            c
            for c in site["captures"]
            if c["observation"] and (c["depth"] == 0 if level == "homepage" else c["depth"] <= 2)
        ]
        times = np.array([day_of(c["timestamp"]) for c in rows])
        pages = {page: i for i, page in enumerate(sorted({c["page"] for c in rows}))}
        page = np.array([pages[c["page"]] for c in rows], dtype=np.int64)
        order = timeline_order(np.zeros(len(rows), dtype=np.int64), times, page)
        observed.append(
            ([float(times[i]) for i in order], [bool(rows[i]["update"]) for i in order])
        )
        changes.append([float(x) for x in site["update_times"][level]])
        rates.append(float(site["rate_per_day"][level]))
    return observed, changes, rates


def before(observed: Observed, start: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(times, flags, offsets) of every observation before ``start``, the first of each site's
    history its baseline: the history a replay starts from."""
    times: list[float] = []
    flags: list[bool] = []
    offsets = [0]
    for site_times, site_flags in observed:
        kept = [i for i, t in enumerate(site_times) if t < start]
        times += [site_times[i] for i in kept]
        kept_flags = [site_flags[i] for i in kept]
        if kept_flags:
            kept_flags[0] = False  # the first observation of the history is its baseline
        flags += kept_flags
        offsets.append(len(times))
    return np.array(times), np.array(flags, dtype=bool), np.array(offsets, dtype=np.int64)


def demo_tables(demo: DemoArchive) -> dict[str, ObservationTable]:
    """Both levels of a demo archive as the database would hold them, times in days since 1970
    (``testbed.demo_tables``, which the test suite checks against the database)."""
    return truth_tables(read_truth(demo), n_sites=demo.sites)


# Evaluation 2 with extra models -------------------------------------------------------------


def kernel_evidence(
    times: FloatArray, flags: NDArray[np.bool_], offsets: NDArray[np.int64]
) -> tuple[FloatArray, FloatArray, IntervalEvidence]:
    """The Gamma kernel λ^m exp(−λT) of each timeline's likelihood with its mode (the observed
    MLE) and curvature: m = λ̂² Σ t_c² / (4 sinh²(λ̂ t_c / 2)), T = m / λ̂; without an update,
    m = 0 and T the span. Returns (m, T) and the exact evidence. (The reading HACS shipped
    before the exact likelihood: docs/readings.md.)"""
    evidence = interval_evidence(times, flags, offsets)
    lam = estimate_many(times, flags, offsets).rate
    n = evidence.n_sites
    span = evidence.unchanged + np.bincount(evidence.owner, evidence.changed, minlength=n)
    updates = np.zeros(n)
    exposure = np.where(lam == 0, span, 0.0)
    positive = np.isfinite(lam) & (lam > 0)
    x = lam[evidence.owner] * evidence.changed
    with np.errstate(over="ignore", invalid="ignore"):
        terms = np.where(x > 0, (evidence.changed / (2.0 * np.sinh(x / 2.0))) ** 2, 0.0)
    info = np.bincount(evidence.owner, terms, minlength=n)
    updates[positive] = lam[positive] ** 2 * info[positive]
    exposure[positive] = updates[positive] / lam[positive]
    return updates, exposure, evidence


class Windows:
    """A homepage table's observations in (site, time) order, windows read by time."""

    def __init__(self, table: ObservationTable) -> None:
        order = np.lexsort((table.page_index, table.time, table.site))
        self.site = table.site[order]
        self.time = table.time[order]
        self.page_index = table.page_index[order]
        self.floor = table.link_floor[order]
        self._hacs_priors: dict[float, GammaPrior] = {}

    def timelines(self, lo: float, hi: float) -> tuple[np.ndarray, ...]:
        """The window's timelines: owners, times, flags (rule 3), offsets, newest copies."""
        inside = (self.time >= lo) & (self.time <= hi)
        site, time = self.site[inside], self.time[inside]
        index, floor = self.page_index[inside], self.floor[inside]
        starts = np.flatnonzero(np.r_[True, site[1:] != site[:-1]])
        counts = np.diff(np.r_[starts, site.size])
        first_index = np.repeat(index[starts], counts)
        flags = (index > first_index) & (floor < first_index)
        offsets = np.r_[starts, site.size].astype(np.int64)
        last = time[np.r_[starts[1:], site.size] - 1]
        return site[starts], time, flags, offsets, last

    def hacs_prior(self, t: float) -> GammaPrior:
        """HACS's Gamma prior at t: fitted on the exact likelihoods of every site's
        PRIOR_WEEKS-week window ending at t (``hacs.bayes.fit_interval_prior``)."""
        if t not in self._hacs_priors:
            _, times, flags, offsets, _ = self.timelines(t - 7.0 * PRIOR_WEEKS, t)
            self._hacs_priors[t] = fit_interval_prior(interval_evidence(times, flags, offsets))
        return self._hacs_priors[t]


def pak_windows(
    table: ObservationTable, scorers: Callable[[int], dict[str, Scorer]], level: str = "homepage"
) -> dict[str, list[float]]:
    """Mean weighted P@K at ``level`` for w = 1 … 12 (``hacs.evaluation.evaluate``): HACS's
    posterior, Cho–Garcia-Molina, Last-Obs and each of ``scorers(w)``, by model. At website
    level HACS's posterior reads the pages' new links, as the database's tables let it."""
    rows: dict[str, list[float]] = {}
    for w in range(1, 13):
        extra = scorers(w)
        result = evaluate(
            {level: table},
            start=START_DAYS,
            end=END_DAYS,
            w_weeks=[w],
            e_days=EVAL_E_DAYS,
            method="interpolated",
            scorers={level: extra},
        )
        pak = {row["model"]: row["weighted_p_at_k"] for row in result["pak"]}
        for model in ("posterior", "cho_garcia_molina", "last_obs", *extra):
            rows.setdefault(model, []).append(float(pak[model]))
    return rows


def print_pak(
    rows: dict[str, list[float]], hacs_label: str, note: str = "", level: str = "homepage"
) -> None:
    """The P@K rows, each candidate with its wins: the w where it is above both
    Cho–Garcia-Molina and Last-Obs (to three decimals)."""
    print(f"\nmean weighted P@K, {level}, w = 1 … 12 (wins: above Cho–Garcia-Molina and Last-Obs)")
    if note:
        print(f"  {note}")
    best_baseline = np.maximum(rows["cho_garcia_molina"], rows["last_obs"])
    for model, values in rows.items():
        wins = int((np.round(values, 3) > np.round(best_baseline, 3)).sum())
        label = hacs_label if model == "posterior" else model
        tail = "" if model in ("cho_garcia_molina", "last_obs") else f"   wins {wins}/12"
        print(f"  {label:22} " + " ".join(f"{v:.3f}" for v in values) + tail)


# The replay with extra policies -------------------------------------------------------------


def replay_totals(
    observed: Observed,
    changes: list[list[float]],
    rates: list[float],
    *,
    seed: int,
    budget: int,
    extra: dict[str, Callable[[ReplayState], FloatArray]],
) -> dict[str, list[int]]:
    """[changes found, crawls, overlisted sites] per policy over the last 3 × 28 days, with the
    crawl list's e (``hacs.replay``): HACS's, round-robin, random, the true rates and ``extra``."""
    span = (END - START).days
    totals: dict[str, list[int]] = {}
    for start in (span - 28 * (k + 1) for k in range(3)):
        results = replay(
            history=before(observed, start),
            changes=changes,
            start=float(start),
            days=28,
            budget=budget,
            policies=["hacs", "round_robin", "random", "true_rates"],
            e_days=E_DAYS,
            true_rates=rates,
            seed=seed + start,
            extra=extra,
        )
        for r in results:
            found = totals.setdefault(r.policy, [0, 0, 0])
            found[0] += r.found
            found[1] += r.crawls
            found[2] += r.overlisted_sites
    return totals


def replay_cells(totals: dict[str, list[int]], hacs_label: str) -> str:
    """One line: each policy's changes found / crawls, and its overlisted sites."""
    cells = []
    for name, (found, crawls, over) in totals.items():
        label = hacs_label if name == "hacs" else name
        cells.append(f"{label} {found}/{crawls}" + (f" ({over} overlisted)" if over else ""))
    return "  ".join(cells)


# --- HACS's commands in a child process -------------------------------------------------------

CHILD_ENV = {"DJANGO_SETTINGS_MODULE": "hacs_site.settings", "PYTHONPATH": str(ROOT)}


def database_env(database: Path, var: Path | None = None, *, quiet: bool = False) -> dict[str, str]:
    """The environment of HACS's commands (and of a bench's children that set Django up) on
    the SQLite file ``database``; ``var`` their HACS_VAR_DIR, ``quiet`` only warnings logged."""
    env = {**os.environ, "DATABASE_URL": f"sqlite:///{database}", **CHILD_ENV}
    if var is not None:
        env["HACS_VAR_DIR"] = str(var)
    if quiet:
        env["LOG_LEVEL"] = "WARNING"
    return env


def fake_archive_env(archive: Any, redis_url: str, database: Path) -> dict[str, str]:
    """The environment of HACS's commands run against the fake Internet Archive ``archive``
    (``testbed.ia_server``), in the SQLite file ``database``, at rates that never wait."""
    return {
        **database_env(database),
        "REDIS_URL": redis_url,
        "HACS_CDX_URL": archive.cdx_url,
        "HACS_CDX_DIALECT": "ia",
        "HACS_WAYBACK_URL": archive.wayback_url,
        "HACS_CDX_RATE_PER_MINUTE": "6000",
        "HACS_MEMENTO_RATE_PER_MINUTE": "60000",
    }


def run_python(env: Mapping[str, str], *args: str, timeout: float | None = None) -> str:
    """``python *args`` in a child process at the project root, with ``env``; its standard
    output. A failure raises ``subprocess.CalledProcessError`` (both outputs on it), a child
    still running after ``timeout`` seconds ``subprocess.TimeoutExpired``."""
    done = subprocess.run(
        [sys.executable, *args],
        env=env,
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
        timeout=timeout,
    )
    return done.stdout


def manage(env: Mapping[str, str], *args: str) -> str:
    """One of HACS's commands (``manage.py *args``) in a child process; its standard output."""
    return run_python(env, str(ROOT / "manage.py"), *args)


def last_json(output: str) -> Any:
    """What a child process printed last, as JSON: its result."""
    return json.loads(output.strip().splitlines()[-1])


def bench_child(env: Mapping[str, str], module: str, *arguments: str) -> dict[str, Any]:
    """``python -m MODULE --child ARGUMENTS``: a part of a bench run in a process of its own
    (so that its peak memory is its own); its result, the JSON it printed last. A failure
    ends the bench with the ends of both outputs."""
    out = subprocess.run(
        [sys.executable, "-m", module, "--child", *arguments],
        env=env,
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    if out.returncode != 0:
        sys.exit(f"{arguments[0]} failed:\n{out.stdout[-3000:]}\n{out.stderr[-5000:]}")
    result: dict[str, Any] = last_json(out.stdout)
    return result
