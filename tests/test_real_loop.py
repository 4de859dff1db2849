"""``bench.real_loop``'s worlds and its reference lists, on made-up homepages (the real histories
live outside the checkout)."""

from __future__ import annotations

import numpy as np
import pytest

from bench.homepages import Homepage
from bench.real_loop import (
    KNOWN_AT_COPY,
    KNOWN_RATE,
    SITES_PER_HOMEPAGE,
    Standing,
    known_at_copy_policy,
    print_done_when,
    print_windows,
    real_world,
    run_world,
    seed_interval,
    standings,
    start_day,
    window_found,
    windows,
    year_rate,
)


def _homepage(name: str, changes: np.ndarray, first: float, until: float) -> Homepage:
    return Homepage(
        name=name,
        url=f"https://{name}/",
        changes=np.sort(changes),
        first=first,
        known_until=until,
        versions=changes.size + 1,
    )


def _pages(seed: int) -> tuple[float, list[Homepage]]:
    start = start_day(seed)
    rng = np.random.default_rng(7)
    # A page edited every few days until 200 days before the start, then every day; a quiet one.
    busy = np.r_[
        np.arange(start - 1500.0, start - 200.0, 9.0), np.arange(start - 200.0, start + 80, 1.0)
    ]
    quiet = start - 1500.0 + np.sort(rng.uniform(0.0, 1580.0, 12))
    late = _homepage("late.example", np.array([start + 5.0]), start - 100.0, start + 90.0)
    return start, [
        _homepage("busy.example", busy, start - 1500.0, start + 90.0),
        _homepage("quiet.example", quiet, start - 1500.0, start + 90.0),
        late,
    ]


def test_a_world_knows_each_sites_rate_up_to_the_start_and_up_to_its_newest_copy() -> None:
    start, pages = _pages(3)
    world = real_world(pages, 3, 56)
    assert [p.name for p in world.homepages] == ["busy.example", "quiet.example"]
    assert world.skipped == [("late.example", "history begins less than a year before the start")]
    assert world.n_sites == 2 * SITES_PER_HOMEPAGE
    times, _, offsets = world.history
    for i in range(world.n_sites):
        page = world.homepages[i // SITES_PER_HOMEPAGE]
        copies = times[offsets[i] : offsets[i + 1]]
        assert copies.size and copies.max() < start
        by_hand = sum(1 for c in page.changes if copies[-1] - 365.0 <= c < copies[-1]) / 365.0
        assert world.copy_year_rate[i] == by_hand == year_rate(page.changes, copies[-1])
        assert world.last_year_rate[i] == year_rate(page.changes, start)


def test_the_known_rate_at_copy_ranks_by_the_rate_before_the_newest_copy() -> None:
    rates = np.array([0.5, 0.01, 0.1])

    class State:
        now, e_days = 100.5, 1.0
        last_copy = np.array([90.0, 10.0, 50.0])

    p = known_at_copy_policy(rates)(State())  # type: ignore[arg-type]
    assert np.allclose(p, 1.0 - np.exp(-rates * (101.5 - State.last_copy)))
    assert list(np.argsort(-p)) == [0, 2, 1]


def test_the_known_rate_list_counts_changes_the_copies_never_saw() -> None:
    # The busy page edits every day in the 200 days before the start: a site copied before then
    # has a rate at its copy of one edit in nine days, the known-rate list one a day.
    start, pages = _pages(4)
    world = real_world(pages, 4, 56)
    times, _, offsets = world.history
    newest = np.asarray([times[offsets[i + 1] - 1] for i in range(SITES_PER_HOMEPAGE)])
    rate_at_copy = world.copy_year_rate[:SITES_PER_HOMEPAGE]
    known = world.last_year_rate[:SITES_PER_HOMEPAGE]
    # Every busy site's copy is older than the start, so its year misses daily edits.
    assert np.all(newest < start - 1.0) and np.all(rate_at_copy < known)
    # A site last copied more than 200 days before the start saw only the nine-day edits.
    stale = newest < start - 200.0
    assert stale.any()
    assert np.allclose(rate_at_copy[stale], 41 / 365, atol=1 / 365)
    assert np.all(known > 0.55)
    results = run_world(world, days=14, share=0.25, policies=[KNOWN_RATE, KNOWN_AT_COPY], seed=4)
    assert set(results) == {KNOWN_RATE, KNOWN_AT_COPY}
    assert all(r.crawls == 14 * 2 for r in results.values())


def test_a_handover_gives_every_peer_hacs_crawls_before_its_day_and_its_own_after() -> None:
    _, pages = _pages(2)
    world = real_world(pages, 2, 56)
    peers = ["hacs", "round_robin", "nutch_fresh", KNOWN_RATE, KNOWN_AT_COPY, "oracle"]
    alone = run_world(world, days=20, share=0.25, policies=peers, seed=2)
    handed = run_world(world, days=20, share=0.25, policies=peers, seed=2, handover=8)
    hacs = alone["hacs"]
    assert handed["hacs"] == hacs
    for name in peers:
        # Before the handover every policy's day is HACS's: the same crawls find the same.
        assert handed[name].found_by_day[:8] == hacs.found_by_day[:8], name
        assert handed[name].caught_by_day[:8] == hacs.caught_by_day[:8], name
    # The oracle takes over and finds a change on every crawl a changed site allows.
    assert sum(handed["oracle"].found_by_day[8:]) >= sum(hacs.found_by_day[8:])
    # Without a handover round-robin makes its own first days.
    assert alone["round_robin"].found_by_day[:8] != hacs.found_by_day[:8]


def test_an_unknown_policy_is_named() -> None:
    _, pages = _pages(2)
    world = real_world(pages, 2, 56)
    with pytest.raises(ValueError, match="unknown policy 'nutch'"):
        run_world(world, days=2, share=0.25, policies=["hacs", "nutch"], seed=2)


def test_a_long_loop_is_read_in_four_week_windows_that_add_up_to_the_loop(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert windows(56) == [(0, 27), (28, 55)]
    assert windows(70) == [(0, 27), (28, 55), (56, 69)]
    _, pages = _pages(3)
    world = real_world(pages, 3, 70)
    peers = ["hacs", "round_robin", "oracle"]
    results = run_world(world, days=70, share=0.5, policies=peers, seed=3)
    rows = {3: results}
    for name in peers:
        found = window_found(rows, name, 70)
        assert len(found) == 3 and sum(found) == results[name].found, name
    print_windows(rows, peers, 70, "Budget 50% a day")
    lines = capsys.readouterr().out.splitlines()
    assert "days 56–69" in lines[2]
    oracle = next(line for line in lines if line.startswith("oracle"))
    hacs, peer = window_found(rows, "hacs", 70)[0], window_found(rows, "oracle", 70)[0]
    assert f"{peer} ({hacs / peer:.3f})" in oracle


def test_the_seed_interval_is_the_bootstrap_of_the_paired_ratio_of_sums() -> None:
    hacs, peer = [114, 99, 108, 91, 63, 70], [117, 97, 119, 104, 75, 77]
    low, high = seed_interval(hacs, peer, level=0.8, draws=500, seed=7)
    # The same resamples drawn one at a time, the ratio of sums taken by hand.
    rng = np.random.default_rng(7)
    picks = rng.integers(0, 6, size=(500, 6))
    ratios = sorted(sum(hacs[i] for i in row) / sum(peer[i] for i in row) for row in picks)
    assert low == pytest.approx(np.quantile(ratios, 0.1))
    assert high == pytest.approx(np.quantile(ratios, 0.9))
    assert low < sum(hacs) / sum(peer) < high
    # Seeds that all agree leave no spread; seeds paired the other way round are not pooled.
    assert seed_interval([12, 24, 36], [10, 20, 30]) == pytest.approx((1.2, 1.2))
    assert seed_interval([30, 10], [10, 30])[0] < 1.0 < seed_interval([30, 10], [10, 30])[1]
    with pytest.raises(ValueError, match="one figure per seed"):
        seed_interval([1, 2], [1])


def test_the_done_when_prints_each_ratio_with_its_interval(
    capsys: pytest.CaptureFixture[str],
) -> None:
    _, pages = _pages(4)
    rows = {}
    for seed in (4, 5):
        world = real_world(pages, seed, 8)
        rows[seed] = run_world(world, days=8, share=0.5, policies=["hacs", "random"], seed=seed)
    print_done_when({0.5: rows}, 8, 4)
    out = capsys.readouterr().out
    hacs = [rows[s]["hacs"].found for s in rows]
    peer = [rows[s]["random"].found for s in rows]
    low, high = seed_interval(hacs, peer)
    assert f"{sum(hacs) / sum(peer):.3f} [{low:.3f}–{high:.3f}]" in out
    assert "random" in out and "oracle" not in out


def test_the_done_when_counts_the_issues_conditions_and_which_miss_beyond_the_spread(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # A target met, missed within the interval, missed beyond it; no target, never missed.
    assert Standing(1.06, 1.0, 1.1, 1.05).met
    missed = Standing(1.04, 1.0, 1.1, 1.05)
    assert not missed.met and not missed.clearly_missed
    assert Standing(0.93, 0.90, 0.96, 1.0).clearly_missed
    assert Standing(0.5, 0.4, 0.6, None).met
    _, pages = _pages(4)
    peers = ["hacs", "round_robin", "random", "nutch_adaptive", "nutch_fresh", "lambdacrawl"]
    peers += [KNOWN_RATE, KNOWN_AT_COPY]
    rows = {}
    for seed in (4, 5):
        world = real_world(pages, seed, 8)
        rows[seed] = run_world(world, days=8, share=0.5, policies=peers, seed=seed)
    print_done_when({0.5: rows}, 8, 4)
    out = capsys.readouterr().out
    expected, missing = 0, []
    for label, names in (
        ("Nutch adaptive ≥ 1.05×", ["nutch_adaptive"]),
        ("nutch_fresh ≥ 1.05×", ["nutch_fresh"]),
        ("every other baseline ≥ 1×", ["round_robin", "random", "lambdacrawl"]),
        ("known-rate list ≥ 1×", [KNOWN_RATE]),
    ):
        for first, last in ((0, 7), (4, 7)):
            hacs = sum(rows[s]["hacs"].days(first, last)[0] for s in rows)
            goal = 1.05 if "1.05" in label else 1.0
            if all(
                hacs >= goal * sum(rows[s][n].days(first, last)[0] for s in rows) for n in names
            ):
                expected += 1
            else:
                missing.append(f"50% days {first}–{last}: {label}")
    assert (
        f"done-when conditions met: {expected} of 8; missed: {'; '.join(missing) or 'none'}" in out
    )
    # The reference at the newest copy has no target and no mark.
    line = next(x for x in out.splitlines() if "known at copy" in x)
    assert "✓" not in line and "✗" not in line
    found = standings(rows, "nutch_fresh", 0, 7)
    assert found.target == 1.05
    line = next(x for x in out.splitlines() if x.strip().startswith("nutch_fresh"))
    assert (
        f"{found.ratio:.3f} [{found.low:.3f}–{found.high:.3f}] {'✓' if found.met else '✗'}" in line
    )
