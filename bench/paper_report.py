"""The tables ``bench.paper_scale`` prints: what a paper-scale collection asks of the Internet
Archive before and after issue #26, the share of new captures each refresh holds, and whether
a first import fits in a day at the documented rates."""

from __future__ import annotations

from dataclasses import dataclass, field

from bench.collection import Collection
from bench.paper_refresh import (
    CDX_RATE,
    HISTORY_DAYS,
    MEMENTO_RATE,
    Cost,
    FirstImport,
    Night,
    Refresher,
    total,
)


@dataclass
class Shares:
    """The share of new captures each refresh holds after a night, and its recall."""

    night: int
    indexed: int  # in-scope captures made after the first import and indexed by then
    made: int  # ... made by then, indexed or not
    outside: int  # indexed ones of seeds no refresh asks about (no capture at the first import)
    held: dict[str, int]
    recall: dict[str, float]


def _before_groups() -> dict[str, list[Cost]]:
    return {"host": [], "prefix": []}


@dataclass
class Outcome:
    """What ``bench.paper_scale`` measured: the sample through HACS's commands, the rate
    check, and the refreshes in process night after night."""

    collection: Collection
    first: Cost  # the sample's first import
    older: Cost  # the sample's history pass
    timed: Cost  # the rate check's first import
    rate_seeds: int  # the seeds it timed
    rates: tuple[float, float]  # its CDX and memento rates (a minute)
    sites: int = 0
    nights: int = 0
    before_nights: int = 0  # nights of the "before" tables
    sample_nights_n: int = 0  # nights the sample runs through HACS's commands
    scoped_history: int = 0  # in-scope captures the archive held at the first import
    full_first: FirstImport = field(default_factory=FirstImport)
    held_sites: int = 0  # sites holding a capture after the first import
    refreshers: dict[str, Refresher] = field(default_factory=dict)
    in_process: dict[str, float] = field(default_factory=dict)  # seconds of each refresh
    sample_nights: list[Cost] = field(default_factory=list)
    sample_new: int = 0  # captures HACS stored for the sample in its nights
    before_groups: dict[str, list[Cost]] = field(default_factory=_before_groups)
    shares: list[Shares] = field(default_factory=list)
    checks: list[str] = field(default_factory=list)

    @property
    def size(self) -> int:
        return int(self.first.sites) or 1

    @property
    def per_site(self) -> float:
        """The factor from the sample to 1,000 sites."""
        return 1_000 / self.size

    @property
    def whole(self) -> float:
        """The factor from the sample to the whole collection."""
        return self.sites / self.size

    @property
    def one_pass(self) -> Cost:
        """The sample's first import as it was before: the contents of the window and of the
        older history fetched at once."""
        one_pass = Cost(sites=self.first.sites)
        one_pass.add(self.first)
        one_pass.add(self.older)
        one_pass.sites = self.first.sites
        return one_pass

    @property
    def week(self) -> Cost:
        """The sample's nights, summed."""
        week = Cost()
        for cost in self.sample_nights:
            week.add(cost)
        return week

    @property
    def per_capture(self) -> float:
        """Mementos of a refresh at full scale: the sample's per new capture it stored."""
        return self.week.mementos / max(1, self.sample_new)


HEAD = (
    f"  {'':<48} {'CDX req':>9} {'MB wire':>8} {'MB raw':>8} {'mementos':>10} "
    f"{'CDX h':>7} {'mem. h':>7}"
)
EXTRAPOLATED = "CDX in process, mementos extrapolated"


def _row(label: str, cost: Cost, note: str = "") -> str:
    cdx_hours, memento_hours = cost.hours
    return (
        f"  {label:<48} {cost.cdx:>9,.0f} {cost.cdx_wire / 1e6:>8,.1f} {cost.cdx_raw / 1e6:>8,.1f}"
        f" {cost.mementos:>10,.0f} {cdx_hours:>7,.1f} {memento_hours:>7,.1f}"
        + (f"  {note}" if note else "")
    )


def _with_mementos(night: Night, per_capture: float) -> Cost:
    cost = night.cost()
    cost.mementos = night.new * per_capture
    return cost


def report(outcome: Outcome) -> None:
    """Every table, then the checks."""
    _report_before(outcome)
    _report_grouped_before(outcome)
    _report_after(outcome)
    _report_every_night(outcome)
    _report_shares(outcome.shares, outcome.full_first, outcome.scoped_history)
    _report_first_import(outcome)
    _report_first_import_holds(outcome)
    _report_checks(outcome)


def _report_checks(outcome: Outcome) -> None:
    sample_n = len(outcome.sample_nights)
    seed = outcome.refreshers["seed"]
    print("\nChecks:")
    for line in outcome.checks:
        print(f"  {line}")
    print(
        f"  new captures stored for the sample in {sample_n} nights: {outcome.sample_new:,} by "
        f"HACS, {total(seed.watched[:sample_n]).new:,} in process (per seed)"
    )
    print(
        f"  mementos a new capture (the sample's {sample_n} nights): "
        f"{outcome.week.mementos:,.0f} fetched for {outcome.sample_new:,} captures stored = "
        f"{outcome.per_capture:.2f}"
    )


def _report_before(outcome: Outcome) -> None:
    """What a first import and the nights cost before HACS grouped its queries."""
    one_pass = outcome.one_pass
    seed = outcome.refreshers["seed"]
    b_nights = seed.nights[: outcome.before_nights]
    w_nights = seed.watched[: outcome.before_nights]
    per_capture, n = outcome.per_capture, outcome.before_nights
    rows = [
        (
            f"first import, sample of {outcome.size:,} (measured)",
            one_pass,
            f"{one_pass.seconds:,.0f} s on this machine, every content",
        ),
        ("first import per 1,000 sites (extrapolated)", one_pass.scaled(outcome.per_site), ""),
        (
            f"first import, {outcome.sites:,} sites (extrapolated)",
            one_pass.scaled(outcome.whole),
            "",
        ),
        (
            f"nightly refresh 1, sample: {w_nights[0].checked:,} sites",
            _with_mementos(w_nights[0], per_capture),
            "in process (*)",
        ),
        (f"{n} nights, sample", _with_mementos(total(w_nights), per_capture), "in process (*)"),
        (
            f"nightly refresh 1, {b_nights[0].checked:,} sites",
            _with_mementos(b_nights[0], per_capture),
            EXTRAPOLATED,
        ),
        (
            f"{n} nights, {b_nights[0].checked:,} sites",
            _with_mementos(total(b_nights), per_capture),
            EXTRAPOLATED,
        ),
    ]
    print(
        f"\nBefore issue 26: one CDX query per seed every night (hours at {CDX_RATE:g} CDX "
        f"requests and {MEMENTO_RATE:g} mementos a minute):"
    )
    print(HEAD)
    for label, cost, note in rows:
        print(_row(label, cost, note))
    print(
        "  (*) HACS now groups, so the sample's per-seed nights are counted in process; "
        "the issue's before run\n      checked that count against the server's log: "
        "equal."
    )


def _report_grouped_before(outcome: Outcome) -> None:
    """What a full pass grouped would have cost before HACS grouped its queries."""
    n = outcome.before_nights
    b_nights = outcome.refreshers["seed"].nights[:n]
    print(
        f"\nA full pass grouped, as it would have cost before HACS grouped (the seeds' "
        f"own 'from', each group from its oldest; night 1, then {n} "
        "nights):"
    )
    rows = [("per seed (before)", [night.cost() for night in b_nights])]
    rows += [
        ("one query a host", outcome.before_groups["host"]),
        ("one query a host and path family", outcome.before_groups["prefix"]),
    ]
    for label, costs in rows:
        one = costs[0]
        all_nights = Cost()
        for cost in costs:
            all_nights.add(cost)
        print(
            f"  {label:<34} night 1: {one.cdx:>6,.0f} requests "
            f"({one.cdx / CDX_RATE / 60:,.1f} h), {one.cdx_wire / 1e6:,.1f} MB, "
            f"{one.rows:,.0f} rows of which {one.other_rows:,.0f} thrown away, "
            f"{one.cut_short:,.0f} cut short by the read cap (one request read at most "
            f"{one.max_read:,} lines); {n} nights: {all_nights.cdx:,.0f} requests, "
            f"{all_nights.cdx_wire / 1e6:,.1f} MB"
        )


def _report_after(outcome: Outcome) -> None:
    """What they cost now, grouped by host, sized and audited."""
    first, older, sites, whole = outcome.first, outcome.older, outcome.sites, outcome.whole
    full_first, sample_nights = outcome.full_first, outcome.sample_nights
    every = outcome.refreshers["every"]
    full = Cost(cdx=full_first.requests, cdx_raw=full_first.raw, mementos=first.mementos * whole)
    rows = [
        (
            f"first import, sample of {outcome.size:,} (measured)",
            first,
            f"{first.seconds:,.0f} s on this machine (one query a seed, as before; the "
            "contents of each site's window)",
        ),
        ("first import per 1,000 sites (extrapolated)", first.scaled(outcome.per_site), ""),
        (f"first import, {sites:,} sites (extrapolated)", first.scaled(whole), ""),
        (
            f"first import, {sites:,} sites",
            full,
            "CDX in process (no MB wire), mementos extrapolated",
        ),
        (
            f"history pass, sample of {outcome.size:,} (measured)",
            older,
            f"{older.seconds:,.0f} s on this machine (no CDX; the older contents)",
        ),
        ("history pass per 1,000 sites (extrapolated)", older.scaled(outcome.per_site), ""),
        (f"history pass, {sites:,} sites (extrapolated)", older.scaled(whole), ""),
        (
            f"nightly refresh 1, sample: {sample_nights[0].sites:,.0f} sites (meas.)",
            sample_nights[0],
            "import_archive, every site, no budget",
        ),
        (f"{len(sample_nights)} nights, sample (measured)", outcome.week, ""),
        (
            "a full pass after grouping (night 1, no budget)",
            _with_mementos(every.nights[0], outcome.per_capture),
            EXTRAPOLATED,
        ),
        (
            f"{len(every.nights)} nights, every site every night, grouped",
            _with_mementos(total(every.nights), outcome.per_capture),
            EXTRAPOLATED,
        ),
    ]
    print("\nAfter: HACS now (grouped by host, sized, audited):")
    print(HEAD)
    for label, cost, note in rows:
        print(_row(label, cost, note))


def _report_every_night(outcome: Outcome) -> None:
    """Every site refreshed every night, in process."""
    every = outcome.refreshers["every"]
    print(
        f"\nRefreshing every site every night, {outcome.held_sites:,} sites, in process (the "
        "nightly job within its budget: python -m bench.nightly_refresh):"
    )
    print(
        f"  {'':<22} {'CDX req':>8} {'queries':>8} {'pages':>6} {'sizing':>6} {'audit':>6} "
        f"{'hours':>6} {'rows read':>10} {'others':>8} {'cut':>4} {'checked':>8}"
    )
    for label, night in (
        ("full pass, night 1", every.nights[0]),
        (f"every night, {len(every.nights)} nights", total(every.nights)),
    ):
        print(
            f"  {label:<22} {night.requests:>8,} {night.queries:>8,} {night.pages:>6,} "
            f"{night.sizing:>6,} {night.audit:>6,} {night.requests / CDX_RATE / 60:>6,.2f} "
            f"{night.rows:>10,} {night.other:>8,} {night.cut_short:>4,} "
            f"{night.checked:>8,}"
        )


def _report_shares(shares: list[Shares], full_first: FirstImport, scoped_history: int) -> None:
    """The share of the archive's new captures HACS holds, night by night."""
    print(
        "\nShare of new captures in HACS (seeds' own pages, depth <= 2, made after the first "
        "import and indexed by then):"
    )
    print(f"  {'':<44}" + "".join(f"{'night ' + str(s.night):>14}" for s in shares))
    print(
        f"  {'new captures the archive indexed':<44}" + "".join(f"{s.indexed:>14,}" for s in shares)
    )
    print(f"  {'  (made, indexed or not)':<44}" + "".join(f"{s.made:>14,}" for s in shares))
    print(
        f"  {'  (of seeds with no capture at first import)':<44}"
        + "".join(f"{s.outside:>14,}" for s in shares)
    )
    for name, label in (
        ("every", "(b) every seed every night, grouped"),
        ("seed", "(c) per seed every night (before)"),
    ):
        print(
            f"  {label:<44}" + "".join(f"{s.held[name] / max(1, s.indexed):>14.1%}" for s in shares)
        )
    print("  capture recall against everything in the archive (first import's captures too):")
    for name, label in (("every", "(b)"), ("seed", "(c)")):
        print(f"  {'  ' + label:<44}" + "".join(f"{s.recall[name]:>14.2%}" for s in shares))
    print(
        f"  (the first import stored {full_first.held:,} of the {scoped_history:,} in-scope "
        f"captures the archive held: {full_first.held / scoped_history:.2%})"
    )


def _report_first_import(outcome: Outcome) -> None:
    """A first import at the documented rates, and the history pass after it (the contents of
    copies older than each site's window)."""
    years = HISTORY_DAYS / 365
    window = f"{years:g} years" if years == int(years) else f"{HISTORY_DAYS:,} days"
    print(
        f"\nA first import at the documented rates ({CDX_RATE:g} CDX requests and "
        f"{MEMENTO_RATE:g} mementos a minute), fetching the contents of each site's last "
        f"{window} of copies (HACS_HISTORY_DAYS {HISTORY_DAYS:,}), then the history pass:"
    )
    print(
        f"  {'':<30} {'CDX req':>9} {'mementos':>10} {'CDX h':>7} {'mem. h':>7} "
        f"{'in series h':>12} {'in parallel h':>14}"
    )
    for label, factor in (
        ("per 1,000 sites", outcome.per_site),
        (f"{outcome.sites:,} sites", outcome.whole),
    ):
        cost = outcome.first.scaled(factor)
        cdx_h, mem_h = cost.hours
        print(
            f"  {'first import, ' + label:<30} {cost.cdx:>9,.0f} {cost.mementos:>10,.0f} "
            f"{cdx_h:>7,.1f} {mem_h:>7,.1f} {cdx_h + mem_h:>12,.1f} "
            f"{max(cdx_h, mem_h):>14,.1f}"
        )
        cost = outcome.older.scaled(factor)
        cdx_h, mem_h = cost.hours
        print(
            f"  {'history pass, ' + label:<30} {cost.cdx:>9,.0f} {cost.mementos:>10,.0f} "
            f"{cdx_h:>7,.1f} {mem_h:>7,.1f}"
        )


def _report_first_import_holds(outcome: Outcome) -> None:
    """Whether a first import's phases add up or overlap (timed at slow rates), and whether
    it fits in a day."""
    first, older, timed, sites = outcome.first, outcome.older, outcome.timed, outcome.sites
    cdx_rate, memento_rate = outcome.rates
    cdx_s = timed.cdx / cdx_rate * 60
    mem_s = timed.mementos / memento_rate * 60
    series, parallel = cdx_s + mem_s, max(cdx_s, mem_s)
    holds = (
        "in series"
        if abs(timed.seconds - series) < abs(timed.seconds - parallel)
        else ("in parallel")
    )
    cdx_h, mem_h = first.scaled(outcome.whole).hours
    wall = cdx_h + mem_h if holds == "in series" else max(cdx_h, mem_h)
    print(
        f"  which holds, timed on {outcome.rate_seeds} of the sample's archived seeds at "
        f"{cdx_rate:g} CDX requests and {memento_rate:g} mementos a minute: "
        f"{timed.cdx:,.0f} CDX requests ({cdx_s:,.0f} s at that rate) and "
        f"{timed.mementos:,.0f} mementos ({mem_s:,.0f} s): the import took "
        f"{timed.seconds:,.0f} s, against {series:,.0f} s in series and {parallel:,.0f} s in "
        f"parallel: {holds} holds"
    )
    print(
        f"  a first import of {sites:,} sites takes ~{wall:,.1f} h at these rates: it "
        f"{'fits' if wall <= 24 else 'does not fit'} in 24 h"
    )
    later = older.scaled(outcome.whole).hours[1]
    share = first.mementos / max(1, first.mementos + older.mementos)
    print(
        f"  the history pass then fetches the older {older.scaled(outcome.whole).mementos:,.0f} "
        f"contents in ~{later:,.1f} h (nightly, when no import is under way): every content "
        f"is in ~{wall + later:,.1f} h after the first import began; the first import "
        f"fetched {share:.1%} of them"
    )
