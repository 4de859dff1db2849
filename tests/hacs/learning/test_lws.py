"""hacs.learning.lws: LWS features, training samples, the regression and its crawl ranking."""

from __future__ import annotations

import json
import math
import statistics

import numpy as np
import pytest
from scipy.stats import spearmanr

from hacs.evaluation import ObservationTable
from hacs.learning.lws import (
    DORMANT_ALPHA,
    FEATURES,
    INTERVAL_RANGE_DAYS,
    WINDOW_DAYS,
    LwsModel,
    Timelines,
    evaluation_scorer,
    fit_lws,
    lws_features,
    lws_samples,
    lws_scores,
    predict_interval,
    sample_points,
    table_timelines,
)

Site = list[tuple[float, bool]]


def flat(*sites: Site) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    times = np.array([t for site in sites for t, _ in site], dtype=np.float64)
    flags = np.array([f for site in sites for _, f in site], dtype=bool)
    offsets = np.cumsum([0, *(len(site) for site in sites)]).astype(np.int64)
    return times, flags, offsets


def slow_features(
    times: np.ndarray,
    flags: np.ndarray,
    offsets: np.ndarray,
    at: float,
    new_links: np.ndarray,
    page: np.ndarray,
) -> np.ndarray:
    """The module docstring's definitions, one site and one observation at a time."""
    rows = []
    for a, b in zip(offsets[:-1].tolist(), offsets[1:].tolist(), strict=True):
        seen = [i for i in range(a, b) if times[i] <= at]
        if not seen:
            rows.append([0.0] * 3 + [3.0] + [0.0] * 8)
            continue
        start = times[seen[0]]
        updated = [i for i in seen if flags[i] and times[i] > start]
        instants = sorted({float(times[i]) for i in updated})
        events = [float(start), *instants]
        intervals = [later - earlier for earlier, later in zip(events, events[1:], strict=False)]
        span = at - start
        latest = intervals[::-1][:3]
        missing = 3 - len(latest)
        latest += [span] * missing
        since_update = at - events[-1]
        recent = [i for i in updated if times[i] > at - WINDOW_DAYS]
        recent_instants = {float(times[i]) for i in recent}
        pages = {int(page[i]) for i in recent}
        links = sum(float(new_links[i]) for i in seen if times[i] > at - WINDOW_DAYS)
        mean = statistics.mean(intervals) if intervals else span
        sd = statistics.stdev(intervals) if len(intervals) > 1 else 0.0
        rows.append(
            [math.log1p(x) for x in latest]
            + [float(missing), math.log1p(since_update), math.log1p(at - times[seen[-1]])]
            + [math.log1p(len(recent_instants)), math.log1p(len(pages)), math.log1p(links)]
            + [math.log1p(mean), math.log1p(sd)]
            + [1.0 if since_update - mean > DORMANT_ALPHA * sd else 0.0]
        )
    return np.array(rows, dtype=np.float64).reshape(-1, len(FEATURES))


def random_timelines(
    rng: np.random.Generator, n_sites: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Timelines with every awkward case: empty sites, ties (half-day grid), flagged first
    observations, pages updated twice, quiet sites."""
    times, flags, offsets, links, pages = [], [], [0], [], []
    for _ in range(n_sites):
        n = int(rng.integers(0, 14))
        gaps = rng.choice([0.0, 0.5, 1.0, 3.0, 20.0, 60.0], size=n)
        times += (300.0 + np.cumsum(gaps)).tolist()
        flags += (rng.random(n) < rng.uniform(0, 1)).tolist()
        links += rng.integers(0, 6, size=n).tolist()
        pages += rng.integers(0, 4, size=n).tolist()
        offsets.append(len(times))
    return (
        np.array(times),
        np.array(flags, dtype=bool),
        np.array(offsets, dtype=np.int64),
        np.array(links, dtype=np.int64),
        np.array(pages, dtype=np.int64),
    )


def poisson_sites(
    rng: np.random.Generator, rates: np.ndarray, end: float, visit_days: float = 3.0
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Each site changes as a Poisson process of its rate and is observed at Poisson visits;
    a visit is an update when the site changed since the visit before."""
    sites = []
    for rate in rates.tolist():
        visits = np.cumsum(rng.exponential(visit_days, size=int(2 * end / visit_days) + 10))
        visits = visits[visits < end]
        changes = np.cumsum(rng.exponential(1 / rate, size=int(3 * end * rate) + 10))
        before = np.searchsorted(changes, visits)
        updated = np.diff(before, prepend=before[0]) > 0
        updated[0] = False
        sites.append(list(zip(visits.tolist(), updated.tolist(), strict=True)))
    return flat(*sites)


def train(seed: int = 0, n_sites: int = 300) -> tuple[LwsModel, np.ndarray, tuple]:
    rng = np.random.default_rng(seed)
    rates = np.exp(rng.uniform(np.log(1 / 200), np.log(1 / 2), size=n_sites))
    timelines = poisson_sites(rng, rates, end=1000.0)
    X, y, site, _ = lws_samples(*timelines, np.arange(200.0, 700.0, 20.0), horizon_end=700.0)
    model = fit_lws(X, y, seed=seed, groups=site, period=(200.0, 680.0))
    return model, rates, timelines


# --------------------------------------------------------------------------------------------
# Features
# --------------------------------------------------------------------------------------------


def test_features_match_a_slow_per_site_version_on_random_timelines() -> None:
    rng = np.random.default_rng(20260601)
    for _ in range(40):
        times, flags, offsets, links, pages = random_timelines(rng, 25)
        for at in (299.0, 300.0, float(rng.uniform(300, 700)), 1000.0):
            fast = lws_features(times, flags, offsets, at, new_links=links, page=pages)
            slow = slow_features(times, flags, offsets, at, links, pages)
            np.testing.assert_allclose(fast, slow, rtol=1e-12, atol=1e-12)


def test_features_by_hand_for_one_site() -> None:
    # Observed on 0, 10 (update), 12, 30 (update), 31 (update); at 40.
    times, flags, offsets = flat([(0, False), (10, True), (12, False), (30, True), (31, True)])
    (row,) = lws_features(times, flags, offsets, 40.0)
    found = dict(zip(FEATURES, row.tolist(), strict=True))
    intervals = [10.0, 20.0, 1.0]  # 0→10, 10→30, 30→31
    assert found["log_interval_1"] == pytest.approx(math.log1p(1.0))
    assert found["log_interval_2"] == pytest.approx(math.log1p(20.0))
    assert found["log_interval_3"] == pytest.approx(math.log1p(10.0))
    assert found["intervals_missing"] == 0.0
    assert found["log_since_update"] == pytest.approx(math.log1p(9.0))
    assert found["log_since_observation"] == pytest.approx(math.log1p(9.0))
    assert found["log_updates_recent"] == pytest.approx(math.log1p(3))
    assert found["log_pages_updated_recent"] == pytest.approx(math.log1p(1))  # one page id: 0
    assert found["log_new_links_recent"] == 0.0  # not given
    assert found["log_mean_interval"] == pytest.approx(math.log1p(statistics.mean(intervals)))
    assert found["log_sd_interval"] == pytest.approx(math.log1p(statistics.stdev(intervals)))
    assert found["dormant"] == 0.0  # 9 − 10.33 < 2 · 9.5
    # Quiet until day 100: 69 − 10.33 > 2 · 9.5.
    assert lws_features(times, flags, offsets, 100.0)[0, FEATURES.index("dormant")] == 1.0


def test_a_site_without_updates_fills_the_missing_intervals_with_its_span() -> None:
    times, flags, offsets = flat([(5, False), (15, False)], [])
    first, empty = lws_features(times, flags, offsets, 25.0)
    span = math.log1p(20.0)
    assert first[:4].tolist() == [span, span, span, 3.0]
    assert first[FEATURES.index("log_mean_interval")] == span
    assert first[FEATURES.index("log_sd_interval")] == 0.0
    assert first[FEATURES.index("dormant")] == 0.0
    assert empty.tolist() == [0.0, 0.0, 0.0, 3.0] + [0.0] * 8


def test_features_ignore_everything_after_at() -> None:
    rng = np.random.default_rng(7)
    times, flags, offsets, links, pages = random_timelines(rng, 40)
    at = 400.0
    before = lws_features(times, flags, offsets, at, new_links=links, page=pages)
    # Append later observations to every site, many of them updates adding many links.
    t2, f2, l2, p2, off2 = [], [], [], [], [0]
    for i, (a, b) in enumerate(zip(offsets[:-1], offsets[1:], strict=True)):
        extra = np.sort(rng.uniform(at + 1e-9, at + 200, size=5 + i % 3))
        t2 += times[a:b].tolist() + [float(x) for x in np.maximum(extra, times[a:b].max(initial=0))]
        f2 += flags[a:b].tolist() + [True] * extra.size
        l2 += links[a:b].tolist() + [50] * extra.size
        p2 += pages[a:b].tolist() + [9] * extra.size
        off2.append(len(t2))
    after = lws_features(
        np.array(t2), np.array(f2), np.array(off2), at, new_links=np.array(l2), page=np.array(p2)
    )
    assert np.array_equal(before, after)


def test_observations_at_at_itself_count() -> None:
    times, flags, offsets = flat([(0, False), (10, True)])
    just_before = lws_features(times, flags, offsets, 9.999)
    at_it = lws_features(times, flags, offsets, 10.0)
    assert just_before[0, 3] == 3.0 and at_it[0, 3] == 2.0


def test_new_links_and_pages_count_only_the_window() -> None:
    times, flags, offsets = flat([(0, False), (5, True), (100, True), (150, True), (150, True)])
    links = np.array([7, 3, 4, 2, 1])
    page = np.array([0, 1, 1, 2, 3])
    (row,) = lws_features(times, flags, offsets, 160.0, new_links=links, page=page)
    # Window (70, 160]: observations at 100, 150, 150; pages 1, 2, 3; two update instants.
    assert row[FEATURES.index("log_new_links_recent")] == pytest.approx(math.log1p(7))
    assert row[FEATURES.index("log_pages_updated_recent")] == pytest.approx(math.log1p(3))
    assert row[FEATURES.index("log_updates_recent")] == pytest.approx(math.log1p(2))


# --------------------------------------------------------------------------------------------
# Samples and censoring
# --------------------------------------------------------------------------------------------


def test_samples_target_the_wait_for_the_next_update() -> None:
    times, flags, offsets = flat(
        [(0, False), (10, True), (20, False), (26, True), (30, False)],
        [(3, False), (4, False)],  # not observed after either point: nothing known
        [(50, False), (60, True)],  # no observation by either point
    )
    X, y, site, point = lws_samples(times, flags, offsets, [12.0, 27.0], horizon_end=30.0)
    assert site.tolist() == [0, 0]
    assert point.tolist() == [0, 1]
    # At 12: the next update is at 26, 14 days on. At 27: censored at 30 after 3 days, with
    # a span of 30 days and 2 updates by the horizon → 3 + 30 / 3.
    assert y[0] == pytest.approx(math.log(14.0))
    assert y[1] == pytest.approx(math.log(3.0 + 10.0))
    np.testing.assert_array_equal(X[0], lws_features(times, flags, offsets, 12.0)[0])


def test_a_censored_wait_is_imputed_as_documented() -> None:
    # Updates at 10; observed up to 30; the update at 40 lies beyond the horizon.
    times, flags, offsets = flat([(0, False), (10, True), (20, False), (30, False), (40, True)])
    _, y, site, _ = lws_samples(times, flags, offsets, [12.0], horizon_end=30.0)
    # Waited 30 − 12 = 18; span 30 with one update: the mean interval with one more, 30 / 2.
    assert site.tolist() == [0]
    assert y[0] == pytest.approx(math.log(18.0 + 15.0))
    _, dropped, _, _ = lws_samples(times, flags, offsets, [12.0], horizon_end=30.0, censored="drop")
    assert dropped.size == 0


def test_a_site_unobserved_after_the_point_gives_no_sample() -> None:
    times, flags, offsets = flat([(3, False), (4, False)])
    X, y, site, point = lws_samples(times, flags, offsets, [12.0], horizon_end=30.0)
    assert X.shape == (0, len(FEATURES)) and y.size == site.size == point.size == 0


def test_imputing_censored_waits_removes_most_of_the_bias_of_dropping_them() -> None:
    # Slow Poisson sites (mean interval 100 days) simulated for 3000 days; labels cut at day 400
    # (many waits censored) against labels from the whole simulation (almost none).
    rng = np.random.default_rng(3)
    timelines = poisson_sites(rng, np.full(200, 1 / 100), end=3000.0, visit_days=2.0)
    points = np.arange(100.0, 300.0, 10.0)
    _, imputed, _, _ = lws_samples(*timelines, points, horizon_end=400.0)
    _, dropped, _, _ = lws_samples(*timelines, points, horizon_end=400.0, censored="drop")
    _, complete, _, _ = lws_samples(*timelines, points, horizon_end=3000.0)
    assert imputed.size == complete.size > dropped.size
    assert abs(imputed.mean() - complete.mean()) < 0.1
    assert dropped.mean() < complete.mean() - 0.2


# --------------------------------------------------------------------------------------------
# Regression and stored models
# --------------------------------------------------------------------------------------------


def test_the_model_ranks_fast_poisson_sites_above_slow_ones() -> None:
    model, rates, timelines = train()
    interval = predict_interval(model, lws_features(*timelines, 1000.0))
    rho = spearmanr(interval, 1 / rates).statistic
    assert rho > 0.7
    assert model.held_out_r2 is not None and model.held_out_r2 > 0.3


def test_a_stored_and_loaded_model_predicts_bit_for_bit() -> None:
    model, _, timelines = train(n_sites=120)
    loaded = LwsModel.from_dict(json.loads(json.dumps(model.to_dict())))
    assert loaded == model
    x = lws_features(*timelines, 900.0)
    assert np.array_equal(predict_interval(loaded, x), predict_interval(model, x))


def test_a_fixed_seed_gives_fixed_coefficients() -> None:
    first, _, _ = train(seed=5, n_sites=120)
    again, _, _ = train(seed=5, n_sites=120)
    assert again == first
    assert len(first.coefficients) == len(FEATURES) and first.regressor == "huber"


def test_the_seed_chooses_the_held_out_sites() -> None:
    rng = np.random.default_rng(1)
    X = rng.normal(size=(400, len(FEATURES)))
    y = X @ rng.normal(size=len(FEATURES)) + rng.standard_t(2, size=400)
    groups = np.repeat(np.arange(100), 4)
    a = fit_lws(X, y, seed=1, groups=groups)
    b = fit_lws(X, y, seed=2, groups=groups)
    # The final fit uses every sample; only the held-out figures depend on the seed.
    assert a.coefficients == b.coefficients
    assert a.held_out_mae != b.held_out_mae


def test_ols_is_the_papers_least_squares_on_standardised_features() -> None:
    rng = np.random.default_rng(2)
    X = rng.normal(size=(200, len(FEATURES)))
    X[:, 3] = 1.0  # a constant column gets scale 1 and a zero coefficient
    y = 3.0 + 0.3 * X[:, 0] - 0.5 * X[:, 4]
    model = fit_lws(X, y, seed=0, regressor="ols")
    assert model.scales[3] == 1.0
    np.testing.assert_allclose(model.coefficients[0], 0.3 * model.scales[0], rtol=1e-9)
    np.testing.assert_allclose(model.coefficients[4], -0.5 * model.scales[4], rtol=1e-9)
    np.testing.assert_allclose(model.coefficients[3], 0.0, atol=1e-9)
    np.testing.assert_allclose(np.log(predict_interval(model, X[:5])), y[:5], rtol=1e-9)


def test_predictions_are_clipped_to_a_sane_range() -> None:
    model, _, _ = train(n_sites=60)
    extreme = np.full((2, len(FEATURES)), 0.0)
    extreme[0] = 1e6
    extreme[1] = -1e6
    interval = predict_interval(model, extreme)
    assert set(interval.tolist()) <= set(INTERVAL_RANGE_DAYS)


# --------------------------------------------------------------------------------------------
# Scores
# --------------------------------------------------------------------------------------------


def test_scores_are_the_updates_expected_since_the_newest_copy() -> None:
    model, _, _ = train(n_sites=60)
    times, flags, offsets = flat(
        [(0, False), (10, True), (20, True)],
        [(0, False), (30, False)],  # never updated: scored from its features all the same
        [],  # never observed nor copied: first
    )
    last_copy = np.array([20.0, 30.0, -np.inf])
    scores = lws_scores(model, times, flags, offsets, last_copy, 40.0, 2.0)
    interval = predict_interval(model, lws_features(times, flags, offsets, 40.0))
    assert scores[:2].tolist() == ((42.0 - last_copy[:2]) / interval[:2]).tolist()
    assert np.all(np.isfinite(scores[:2])) and scores[2] == np.inf


def test_scores_use_the_models_feature_settings() -> None:
    model, _, timelines = train(n_sites=60)
    narrow = LwsModel.from_dict({**model.to_dict(), "window_days": 7.0})
    copy = np.full(60, 900.0)
    assert not np.array_equal(
        lws_scores(model, *timelines, copy, 950.0, 1.0),
        lws_scores(narrow, *timelines, copy, 950.0, 1.0),
    )


# --------------------------------------------------------------------------------------------
# Bad input
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("change", "name"),
    [
        ({"offsets": np.array([0, 3, 2, 5])}, "offsets"),
        ({"offsets": np.array([0, 2, 4])}, "offsets"),
        ({"flags": np.zeros(4, dtype=bool)}, "flags"),
        ({"times": np.array([0.0, 2.0, 1.0, 0.0, 1.0])}, "times"),
        ({"times": np.array([0.0, 1.0, np.nan, 0.0, 1.0])}, "times"),
        ({"new_links": np.zeros(3)}, "new_links"),
        ({"new_links": -np.ones(5)}, "new_links"),
        ({"page": np.zeros(5, dtype=float)}, "page"),
    ],
)
def test_bad_timelines_raise_naming_the_argument(change: dict, name: str) -> None:
    arguments = {
        "times": np.array([0.0, 1.0, 2.0, 0.0, 1.0]),
        "flags": np.array([False, True, False, False, True]),
        "offsets": np.array([0, 3, 5]),
        **change,
    }
    keywords = {k: arguments.pop(k) for k in ("new_links", "page") if k in arguments}
    with pytest.raises(ValueError, match=name):
        lws_features(arguments["times"], arguments["flags"], arguments["offsets"], 3.0, **keywords)


def test_bad_training_input_raises_naming_the_argument() -> None:
    times, flags, offsets = flat([(0, False), (1, True)])
    with pytest.raises(ValueError, match="reference_points"):
        lws_samples(times, flags, offsets, [5.0], horizon_end=5.0)
    with pytest.raises(ValueError, match="censored"):
        lws_samples(times, flags, offsets, [0.5], horizon_end=5.0, censored="keep")
    X = np.zeros((20, len(FEATURES)))
    with pytest.raises(ValueError, match="y must"):
        fit_lws(X, np.zeros(19), seed=0)
    with pytest.raises(ValueError, match="X must"):
        fit_lws(X[:, :5], np.zeros(20), seed=0)
    with pytest.raises(ValueError, match="regressor"):
        fit_lws(X, np.zeros(20), seed=0, regressor="lasso")
    model, _, _ = train(n_sites=40)
    with pytest.raises(ValueError, match="last_copy"):
        lws_scores(model, times, flags, offsets, np.zeros(2), 3.0, 1.0)
    with pytest.raises(ValueError, match="features"):
        predict_interval(model, np.zeros((1, 3)))


# --------------------------------------------------------------------------------------------
# In the evaluation: the table's timelines, and ΔI from what was known at each t
# --------------------------------------------------------------------------------------------


def test_table_timelines_follow_rules_3_and_4_per_site() -> None:
    from hacs.updates import link_floors
    from tests.hacs.evaluation._helpers import random_history, table_of

    observations = random_history(np.random.default_rng(2), 12, 100.0, max_pages=3, max_obs=9)
    table = table_of(observations, 14)  # two sites without any observation
    found = table_timelines(table)
    assert found.offsets.size == 15 and found.offsets[-1] == table.size
    for site in range(14):
        mine = sorted(
            (o for o in observations if o.site == site), key=lambda o: (o.time, o.page, o.index)
        )
        a, b = int(found.offsets[site]), int(found.offsets[site + 1])
        assert found.times[a:b].tolist() == [o.time for o in mine]
        # Rule 3 relative to the table: a page's observation adds a link no earlier one held.
        by_page: dict[int, list] = {}
        for o in sorted(mine, key=lambda o: o.index):
            by_page.setdefault(o.page, []).append(o)
        expected = {}
        for page_obs in by_page.values():
            for o, floor in zip(page_obs, link_floors([x.links for x in page_obs]), strict=True):
                expected[(o.page, o.index)] = o.index > page_obs[0].index and floor == -1
        assert found.flags[a:b].tolist() == [expected[(o.page, o.index)] for o in mine]


def random_observation_table(rng: np.random.Generator, n_sites: int) -> ObservationTable:
    """Up to 30 observations of each site's single page over 300 days, 40 % of them updates."""
    site, time = [], []
    for s in range(n_sites):
        moments = np.sort(rng.uniform(0, 300, int(rng.integers(0, 30))))
        site += [s] * moments.size
        time += moments.tolist()
    order = np.lexsort((np.array(time), np.array(site)))
    site_a = np.array(site)[order]
    index = np.concatenate([np.arange(np.count_nonzero(site_a == s)) for s in range(n_sites)])
    floors = np.where(rng.random(len(site)) < 0.4, -1, index - 1)
    return ObservationTable(
        site=site_a,
        page=site_a,
        time=np.array(time)[order],
        page_index=index,
        link_floor=np.minimum(floors, index),
        n_sites=n_sites,
    )


def slow_scores_at(model: LwsModel, full: Timelines, t: float, n_sites: int) -> np.ndarray:
    """Slowly: cut every site's timeline at t and score what is left."""
    times: list[float] = []
    flags: list[bool] = []
    pages: list[int] = []
    links: list[int] = []
    offsets, last = [0], []
    for s in range(n_sites):
        a, b = int(full.offsets[s]), int(full.offsets[s + 1])
        kept = [i for i in range(a, b) if full.times[i] <= t]
        times += [float(full.times[i]) for i in kept]
        flags += [bool(full.flags[i]) for i in kept]
        pages += [int(full.page[i]) for i in kept]
        links += [int(full.new_links[i]) for i in kept]
        offsets.append(len(times))
        last.append(times[-1] if kept else -math.inf)
    return lws_scores(
        model,
        np.array(times),
        np.array(flags, dtype=bool),
        np.array(offsets),
        np.array(last),
        t,
        7.0,
        new_links=np.array(links),
        page=np.array(pages),
    )


def test_the_evaluation_scorer_uses_only_what_was_known_at_t() -> None:
    model, _, _ = train(seed=3, n_sites=120)
    table = random_observation_table(np.random.default_rng(8), n_sites=20)
    scorer = evaluation_scorer(model, table, e_days=7.0)
    full = table_timelines(table)
    for t in (50.0, 150.0, 299.0):
        sites = np.arange(20)
        expected = slow_scores_at(model, full, t, n_sites=20)
        assert np.array_equal(scorer(t, sites, {}), expected)
        assert np.array_equal(scorer(t, sites[::3], {}), expected[::3])


def test_lws_learns_from_points_before_the_periods_end_even_over_whole_weeks() -> None:
    """A period of whole weeks ends on a reference point, which has no time left to see an
    update: it is not a sample (learning over 52 weeks failed with "reference_points must lie
    before horizon_end")."""
    assert list(sample_points(0.0, 21.0)) == [0.0, 7.0, 14.0]
    assert list(sample_points(0.0, 20.0)) == [0.0, 7.0, 14.0]
    assert list(sample_points(3.0, 3.5)) == [3.0]
    times, flags, offsets = np.array([1.0, 9.0, 30.0]), np.array([0, 1, 1]), np.array([0, 3])
    _, y, _, point = lws_samples(times, flags, offsets, sample_points(0.0, 21.0), horizon_end=21.0)
    assert set(point.tolist()) <= {0, 1, 2} and y.size > 0  # indices of 0, 7 and 14
