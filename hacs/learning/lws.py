"""LWS: list-wise prediction of a site's next update, and the crawl ranking built on it.

The list-wise forum crawling paper (``papers/forum-incremental-crawling-lws.txt``, Section 4)
concatenates a forum thread's posts in time, describes the list by statistics of its recent
intervals (Table 1) and a state indicator ds, predicts the time to the next post with a linear
regression F(x) = w0 + Σ wi xi (Eq. 1) and revisits the lists with the most new records
expected, ΔI = (CT − LT) / F(x). In HACS a site is a list of pages (its homepage and the pages
at depth ≤ 2) and its update history is all its pages' observations merged in time:

* :func:`lws_features` describes every site at an instant from what was known then (``FEATURES``);
* :func:`lws_samples` pairs those features, over reference points in a training period, with the
  time each site then waited for its next update;
* :func:`fit_lws` fits the regression of the log wait and returns an :class:`LwsModel`, plain
  numbers that store as JSON; :func:`predict_interval` applies it with NumPy alone;
* :func:`lws_scores` is ΔI, the crawl-list ranking of ``--method lws``;
* :func:`table_timelines` reads an evaluation's observation table as such timelines, and
  :func:`evaluation_scorer` ranks by ΔI in Evaluation 2 (``hacs.evaluation.evaluate``).

Timelines come as for :func:`hacs.estimators.estimate_many`: ``times`` (days since 1970, sorted
within each site), ``flags`` (the observation is an update: it adds links never seen before) and
``offsets`` (site i owns ``times[offsets[i]:offsets[i + 1]]``). Readings shared with
``hacs.estimators``: updates at one instant (two pages captured in the same second) are one
update, and a flag at a site's first instant is ignored, the first observation being the
baseline. Times are in days throughout.

Why Huber: the paper fits ordinary least squares (Eq. 2). Waits between web updates are
heavy-tailed — a site quiet for a year beside one updated daily, censored waits imputed — and a
few such samples pull a least-squares line far from the bulk; :func:`fit_lws`'s default fits
scikit-learn's ``HuberRegressor``, squared loss on small residuals and absolute loss beyond 1.35
residual scales. On two demo archives of 600 sites (trained on the first half of their three
years, tested on the second) it ranked sites by their true mean interval better than least
squares at both levels (Spearman ρ averaged over the test period: 0.58 and 0.56 against 0.56
and 0.54 on homepages, 0.33 and 0.39 against 0.27 and 0.35 on websites) and had the lower error
on held-out sites' waits; least squares came closer to the true intervals' size (it fits the
mean of the log wait, Huber nearer its median).

Pure: NumPy, and scikit-learn's ``HuberRegressor`` while fitting only.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from hacs.evaluation import ExtraScorer, ObservationTable
from hacs.evaluation.grid import reference_points
from hacs.learning.lws_timelines import FEATURES, EventTimelines, SiteFeatures, site_features
from hacs.replay import Policy, ReplayState
from hacs.updates import timeline_order, window_update_flags

__all__ = [
    "DORMANT_ALPHA",
    "FEATURES",
    "INTERVAL_RANGE_DAYS",
    "REGRESSORS",
    "WINDOW_DAYS",
    "LwsModel",
    "Timelines",
    "evaluation_scorer",
    "fit_lws",
    "lws_features",
    "lws_samples",
    "lws_scores",
    "predict_interval",
    "replay_policy",
    "table_timelines",
]

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.int64]
BoolArray = NDArray[np.bool_]

WINDOW_DAYS = 90.0
# ds = 1 when the time without update exceeds the mean interval by more than α standard
# deviations (the paper leaves α open). For a memoryless site sd ≈ mean, so ds = 1 once the
# current gap passes three mean intervals, which chance alone does about 5 % of the time.
DORMANT_ALPHA = 2.0
# Predicted intervals are clipped to [0.1 day, 10 years]: a linear model extrapolates freely,
# and neither a wait shorter than a few hours nor one longer than the archives reach is useful.
INTERVAL_RANGE_DAYS = (0.1, 3652.5)
REGRESSORS = ("huber", "ols")
# Huber's threshold in standard deviations of the residuals: 95 % efficiency on normal errors.
_HUBER_EPSILON = 1.35
_HUBER_ALPHA = 1e-4  # a touch of ridge keeps collinear features (the three intervals) stable
_HUBER_MAX_ITER = 1000
_MIN_HELD_OUT = 10  # fewer held-out samples than this give no held-out figures


@dataclass(frozen=True)
class LwsModel:
    """A fitted LWS regression of the log wait for the next update (days), in plain numbers.

    Features are standardised, z = (x − ``means``) / ``scales``, and the prediction is
    exp(``intercept`` + ``coefficients`` · z), clipped to ``INTERVAL_RANGE_DAYS``.
    ``window_days`` and ``alpha`` are the feature settings it was trained with. Training
    figures: ``samples``, the ``period`` (first and last reference point, days since 1970, when
    known) and the MAE and R² of the log wait on a held-out share of the sites (None when too
    few samples were held out).
    """

    features: tuple[str, ...]
    means: tuple[float, ...]
    scales: tuple[float, ...]
    coefficients: tuple[float, ...]
    intercept: float
    regressor: str
    window_days: float
    alpha: float
    samples: int
    period: tuple[float, float] | None
    held_out_mae: float | None
    held_out_r2: float | None

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict; :meth:`from_dict` gives back an equal model (floats round-trip
        exactly through ``json``, which writes the shortest repr)."""
        return {
            "features": list(self.features),
            "means": list(self.means),
            "scales": list(self.scales),
            "coefficients": list(self.coefficients),
            "intercept": self.intercept,
            "regressor": self.regressor,
            "window_days": self.window_days,
            "alpha": self.alpha,
            "samples": self.samples,
            "period": None if self.period is None else list(self.period),
            "held_out_mae": self.held_out_mae,
            "held_out_r2": self.held_out_r2,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> LwsModel:
        """The model :meth:`to_dict` described; ValueError when the lengths disagree."""
        try:
            features = tuple(str(f) for f in data["features"])
            model = cls(
                features=features,
                means=tuple(float(v) for v in data["means"]),
                scales=tuple(float(v) for v in data["scales"]),
                coefficients=tuple(float(v) for v in data["coefficients"]),
                intercept=float(data["intercept"]),
                regressor=str(data["regressor"]),
                window_days=float(data["window_days"]),
                alpha=float(data["alpha"]),
                samples=int(data["samples"]),
                period=None if data["period"] is None else _pair(data["period"]),
                held_out_mae=_optional_float(data["held_out_mae"]),
                held_out_r2=_optional_float(data["held_out_r2"]),
            )
        except (KeyError, TypeError) as exc:
            raise ValueError(f"not an LWS model: {exc!r}") from None
        sizes = {len(model.features), len(model.means), len(model.scales), len(model.coefficients)}
        if len(sizes) != 1:
            raise ValueError("an LWS model needs one mean, scale and coefficient per feature")
        return model


# --------------------------------------------------------------------------------------------
# Public API
# --------------------------------------------------------------------------------------------


def lws_features(
    times: ArrayLike,
    flags: ArrayLike,
    offsets: ArrayLike,
    at: float,
    *,
    new_links: ArrayLike | None = None,
    page: ArrayLike | None = None,
    window_days: float = WINDOW_DAYS,
    alpha: float = DORMANT_ALPHA,
) -> FloatArray:
    """Every site's ``FEATURES`` at instant ``at``, from its observations at or before ``at``.

    Returns an (n_sites, len(FEATURES)) array. ``new_links`` (links never seen before that each
    observation adds) and ``page`` (an integer id per observation) are optional; without them
    their features are 0.

    The intervals are those between a site's successive updates, the first measured from its
    first observation (for a memoryless site the wait from any instant to the next update is
    distributed as an interval, so this first one is as good as the others). A site with fewer
    than three intervals has the missing ones filled with its observed span, from its first
    observation to ``at`` (a history too short to show three intervals suggests they are about
    as long as the history itself), and ``intervals_missing`` counts them. With no interval at
    all the mean is that span too; the standard deviation is 0 with fewer than two intervals
    (the paper's Δt_sd needs two). A site with no observation by ``at`` has every feature 0 but
    ``intervals_missing`` = 3.
    ``dormant`` is the paper's ds: (time since the last update) − mean > ``alpha`` · sd.
    """
    timelines = EventTimelines.build(times, flags, offsets, new_links, page)
    _check_settings(window_days, alpha)
    return site_features(timelines, _check_instant(at, "at"), window_days, alpha).matrix


def sample_points(start: float, end: float, step_days: float = 7.0) -> FloatArray:
    """The instants LWS learns from over a period: every ``step_days`` from ``start``, each
    before ``end`` (a point at ``end`` has no time left to see its next update, and a period
    of whole weeks would otherwise end on one)."""
    points = reference_points(start, end, step_days)
    return points[points < end]


def lws_samples(
    times: ArrayLike,
    flags: ArrayLike,
    offsets: ArrayLike,
    reference_points: ArrayLike,
    *,
    horizon_end: float,
    new_links: ArrayLike | None = None,
    page: ArrayLike | None = None,
    window_days: float = WINDOW_DAYS,
    alpha: float = DORMANT_ALPHA,
    censored: str = "impute",
) -> tuple[FloatArray, FloatArray, IntArray, IntArray]:
    """Training samples (X, y, site, point): at each reference point t (each before
    ``horizon_end``), each site's features at t and y = ln(days from t to its next update).

    ``point`` is the index of t in ``reference_points``. A site with no observation by t is
    left out (nothing was known of it). The next update is the first update after t, up to
    ``horizon_end``, the end of the training period: later ones must not be used.

    A site with no update after t is *censored*: it waited at least c, from t to its newest
    observation by ``horizon_end`` (left out when there is none after t: nothing is known of its
    wait). Leaving such samples out would teach the model that sites change soon, as the slow
    sites' long waits are the ones cut off. With ``censored="impute"`` (the default) the sample
    is kept with the wait a memoryless site would have, given that it has already waited c:
    c + S / (k + 1), where S is the site's observed span and k its updates up to
    ``horizon_end`` — the mean interval with the censored wait counted as one more update, so
    that a site without any update still gets a finite one. ``censored="drop"`` leaves them out.
    """
    if censored not in ("impute", "drop"):
        raise ValueError(f"censored must be 'impute' or 'drop'; got {censored!r}")
    timelines = EventTimelines.build(times, flags, offsets, new_links, page)
    _check_settings(window_days, alpha)
    end = _check_instant(horizon_end, "horizon_end")
    points = _check_points(reference_points, end)
    # What the training period shows of each site, for the censored waits: its newest
    # observation by the end, and its span over its updates then, plus one.
    final = site_features(timelines, end, window_days, alpha)
    residual = (final.newest - final.first) / (final.updates + 1.0)

    xs, ys, sites, which = [], [], [], []
    for i, t in enumerate(points.tolist()):
        now = site_features(timelines, t, window_days, alpha)
        wait = _waits(timelines, now, final.newest, residual, t, end, censored == "impute")
        keep = np.isfinite(wait)
        xs.append(now.matrix[keep])
        ys.append(np.log(wait[keep]))
        sites.append(np.flatnonzero(keep))
        which.append(np.full(int(keep.sum()), i, dtype=np.int64))
    return _stacked(xs, ys, sites, which)


def _stacked(
    xs: list[FloatArray], ys: list[FloatArray], sites: list[IntArray], which: list[IntArray]
) -> tuple[FloatArray, FloatArray, IntArray, IntArray]:
    """The samples of every reference point as four arrays (X, y, site, point)."""
    if not xs:
        return (
            np.zeros((0, len(FEATURES))),
            np.zeros(0),
            np.zeros(0, np.int64),
            np.zeros(0, np.int64),
        )
    return (
        np.concatenate(xs),
        np.concatenate(ys),
        np.concatenate(sites).astype(np.int64),
        np.concatenate(which),
    )


def _waits(
    timelines: EventTimelines,
    now: SiteFeatures,
    newest: FloatArray,
    residual: FloatArray,
    t: float,
    end: float,
    impute: bool,
) -> FloatArray:
    """Each site's wait from t to its next update by ``end`` (NaN: unknown or left out); with
    ``impute``, a censored site's wait since t plus its ``residual`` (see :func:`lws_samples`).
    ``newest`` is each site's newest observation by ``end``."""
    nxt = np.full(timelines.n_sites, np.inf)
    pending = now.events < timelines.event_counts  # an update event exists after t
    index = timelines.event_start[pending] + now.events[pending]
    nxt[pending] = timelines.event_time[index]
    waited = newest - t
    known = now.has & (nxt <= end)
    cut = now.has & ~known & (waited > 0)
    wait = np.where(known, nxt - t, np.nan)
    if impute:
        wait[cut] = waited[cut] + residual[cut]
    return wait


def fit_lws(
    X: ArrayLike,
    y: ArrayLike,
    *,
    seed: int,
    groups: ArrayLike | None = None,
    period: tuple[float, float] | None = None,
    regressor: str = "huber",
    held_out: float = 0.2,
    window_days: float = WINDOW_DAYS,
    alpha: float = DORMANT_ALPHA,
) -> LwsModel:
    """Fit the LWS regression of y (ln of the wait, days) on the features X.

    ``regressor="huber"`` (the default) fits scikit-learn's ``HuberRegressor`` on standardised
    features, ``"ols"`` NumPy's ``lstsq`` (the module docstring says why Huber). Features with no
    spread get scale 1, so a constant column costs nothing.
    ``window_days`` and ``alpha`` are the settings X was computed with; the model keeps them
    so that :func:`lws_scores` computes the same features.

    Held-out figures: a share ``held_out`` of the ``groups`` (pass the samples' sites, so that
    one site's samples are not on both sides; without groups, of the samples), drawn with
    ``seed``, is held out, the model fitted on the rest is scored (MAE and R² of y), and the
    model returned is then fitted on every sample. Same data and seed, same coefficients.
    """
    if regressor not in REGRESSORS:
        raise ValueError(f"regressor must be one of {REGRESSORS}; got {regressor!r}")
    if not 0 <= held_out < 1:
        raise ValueError(f"held_out must lie in [0, 1); got {held_out}")
    _check_settings(window_days, alpha)
    features, target, labels = _check_samples(X, y, groups)
    mae, r2 = _held_out_scores(features, target, labels, seed, held_out, regressor)
    means, scales, coefficients, intercept = _fit(features, target, regressor)
    return LwsModel(
        features=FEATURES,
        means=tuple(means.tolist()),
        scales=tuple(scales.tolist()),
        coefficients=tuple(coefficients.tolist()),
        intercept=intercept,
        regressor=regressor,
        window_days=float(window_days),
        alpha=float(alpha),
        samples=int(target.size),
        period=None if period is None else _pair(period),
        held_out_mae=mae,
        held_out_r2=r2,
    )


def _check_samples(
    X: ArrayLike, y: ArrayLike, groups: ArrayLike | None
) -> tuple[FloatArray, FloatArray, NDArray[Any]]:
    """The samples of :func:`fit_lws` as arrays, checked: X, y and each sample's group."""
    features = np.asarray(X, dtype=np.float64)
    target = np.asarray(y, dtype=np.float64)
    if features.ndim != 2 or features.shape[1] != len(FEATURES):
        raise ValueError(f"X must have shape (n_samples, {len(FEATURES)}); got {features.shape}")
    if target.shape != (features.shape[0],):
        raise ValueError(
            f"y must have one entry per row of X: {features.shape[0]}; got {target.shape}"
        )
    if features.shape[0] < 2:
        raise ValueError(f"X must have at least 2 samples; got {features.shape[0]}")
    if not (np.all(np.isfinite(features)) and np.all(np.isfinite(target))):
        raise ValueError("X and y must be finite")
    labels = np.arange(target.size) if groups is None else np.asarray(groups)
    if labels.shape != target.shape:
        raise ValueError(
            f"groups must have one entry per sample: {target.size}; got {labels.shape}"
        )
    return features, target, labels


def _held_out_scores(
    features: FloatArray,
    target: FloatArray,
    labels: NDArray[Any],
    seed: int,
    held_out: float,
    regressor: str,
) -> tuple[float | None, float | None]:
    """MAE and R² of y on a held-out share of the groups, drawn with ``seed``, of a model
    fitted on the rest (None, None when too few samples are on either side)."""
    rng = np.random.default_rng(seed)
    distinct = np.unique(labels)
    chosen = rng.permutation(distinct)[: int(round(held_out * distinct.size))]
    test = np.isin(labels, chosen)
    if test.sum() < _MIN_HELD_OUT or (~test).sum() < 2:
        return None, None
    trial = _fit(features[~test], target[~test], regressor)
    residual = target[test] - _linear(trial, features[test])
    total = float(np.sum((target[test] - target[test].mean()) ** 2))
    r2 = 1.0 - float(np.sum(residual**2)) / total if total > 0 else None
    return float(np.mean(np.abs(residual))), r2


def predict_interval(model: LwsModel, features: ArrayLike) -> FloatArray:
    """F(x): the predicted wait for each row's next update, in days, clipped to
    ``INTERVAL_RANGE_DAYS`` (NumPy alone; the same numbers give the same bits)."""
    x = np.asarray(features, dtype=np.float64)
    if x.ndim != 2 or x.shape[1] != len(model.features):
        raise ValueError(f"features must have shape (n, {len(model.features)}); got {x.shape}")
    parts = (
        np.array(model.means),
        np.array(model.scales),
        np.array(model.coefficients),
        model.intercept,
    )
    low, high = INTERVAL_RANGE_DAYS
    # Clipped on the log scale, so that no prediction overflows; the ends are set exactly, as
    # exp(ln 0.1) is not quite 0.1.
    linear = _linear(parts, x)
    below, above = linear <= math.log(low), linear >= math.log(high)
    inside = np.exp(np.where(below | above, 0.0, linear))
    result: FloatArray = np.where(below, low, np.where(above, high, inside))
    return result


def lws_scores(
    model: LwsModel,
    times: ArrayLike,
    flags: ArrayLike,
    offsets: ArrayLike,
    last_copy: ArrayLike,
    now: float,
    e_days: float,
    *,
    new_links: ArrayLike | None = None,
    page: ArrayLike | None = None,
) -> FloatArray:
    """The paper's ΔI = (CT − LT) / F(x) per site: the updates expected since its newest copy.

    CT = ``now`` + ``e_days`` (the list's date plus its horizon), LT = ``last_copy`` (−∞ for a
    site never copied, which scores +∞: such sites come first), F(x) the predicted interval from
    the features at ``now``. A site with no update at all, or no observation, is scored from
    its features like any other. Higher scores should be crawled first.
    """
    if tuple(model.features) != FEATURES:
        raise ValueError(f"model.features must be {FEATURES}; got {model.features}")
    timelines = EventTimelines.build(times, flags, offsets, new_links, page)
    ct = _check_instant(now, "now") + _check_instant(e_days, "e_days")
    copy = np.asarray(last_copy, dtype=np.float64)
    if copy.shape != (timelines.n_sites,):
        raise ValueError(
            f"last_copy must have one entry per site: {timelines.n_sites}; got shape {copy.shape}"
        )
    if np.any(np.isnan(copy) | (copy == np.inf)):
        raise ValueError("last_copy must be finite or -inf")
    found = site_features(timelines, float(now), model.window_days, model.alpha)
    interval = predict_interval(model, found.matrix)
    scores: FloatArray = (ct - copy) / interval
    return scores


@dataclass(frozen=True, eq=False)
class Timelines:
    """Every site's timeline, back to back (site i owns ``offsets[i]:offsets[i + 1]``, empty for
    a site without observations), with each observation's page and new links."""

    times: FloatArray
    flags: BoolArray
    offsets: IntArray
    page: IntArray
    new_links: IntArray


def table_timelines(table: ObservationTable) -> Timelines:
    """The table's observations as timelines, one per site index: DESIGN rule 4's order, each
    observation flagged by rule 3 relative to the table (a page's first observation in it is the
    baseline)."""
    order = timeline_order(table.site, table.time, table.page, table.page_index)
    flags = window_update_flags(table.page, table.page_index, table.link_floor)
    counts = np.bincount(table.site, minlength=table.site_count)
    offsets = np.zeros(table.site_count + 1, dtype=np.int64)
    np.cumsum(counts, out=offsets[1:])
    new_links = table.new_links if table.new_links is not None else np.zeros(table.size, np.int64)
    return Timelines(
        times=table.time[order],
        flags=flags[order],
        offsets=offsets,
        page=table.page[order],
        new_links=new_links[order],
    )


def evaluation_scorer(model: LwsModel, table: ObservationTable, e_days: float) -> ExtraScorer:
    """ΔI as an Evaluation 2 model: at reference point t each site is scored from its
    observations up to t (the newest of them is its copy), with CT = t + ``e_days``. Scores for
    a t are computed once for every site and kept for every history size w (one float per site
    and reference point)."""
    timelines = table_timelines(table)
    starts = timelines.offsets[:-1]
    cache: dict[float, FloatArray] = {}

    def score(t: float, sites: IntArray, _terminals: Mapping[str, FloatArray]) -> FloatArray:
        if t not in cache:
            seen = np.concatenate(([0], np.cumsum(timelines.times <= t)))
            held = seen[timelines.offsets[1:]] - seen[starts]  # observations up to t, per site
            last = np.full(held.size, -np.inf)
            some = held > 0
            last[some] = timelines.times[starts[some] + held[some] - 1]
            cache[t] = lws_scores(
                model,
                timelines.times,
                timelines.flags,
                timelines.offsets,
                last,
                t,
                e_days,
                new_links=timelines.new_links,
                page=timelines.page,
            )
        return cache[t][sites]

    return score


def replay_policy(model: LwsModel) -> Policy:
    """ΔI as a policy of the closed-loop replay (``hacs.replay``): each day from every site's
    timeline so far and its newest copy, with the replay's horizon."""

    def policy(state: ReplayState) -> FloatArray:
        times, flags, offsets = state.arrays()
        return lws_scores(model, times, flags, offsets, state.last_copy, state.now, state.e_days)

    return policy


# --------------------------------------------------------------------------------------------
# Regression (the paper's Eqs. 1 and 2, or Huber's loss)
# --------------------------------------------------------------------------------------------

_Linear = tuple[FloatArray, FloatArray, FloatArray, float]  # means, scales, coefficients, w0


def _fit(x: FloatArray, y: FloatArray, regressor: str) -> _Linear:
    """Standardise x, then fit y = w0 + Σ wi zi (paper, Eq. 1) by least squares (Eq. 2) or by
    Huber's loss."""
    means = x.mean(axis=0)
    scales = x.std(axis=0)
    scales[scales == 0] = 1.0
    z = (x - means) / scales
    if regressor == "ols":
        design = np.hstack([np.ones((z.shape[0], 1)), z])
        solution = np.linalg.lstsq(design, y, rcond=None)[0]
        return means, scales, solution[1:], float(solution[0])
    # Imported here: scikit-learn costs every process that imports HACS ~15 MiB of memory, and
    # only learning fits the regression.
    from sklearn.linear_model import HuberRegressor

    huber = HuberRegressor(epsilon=_HUBER_EPSILON, alpha=_HUBER_ALPHA, max_iter=_HUBER_MAX_ITER)
    huber.fit(z, y)
    coefficients = np.asarray(huber.coef_, dtype=np.float64)
    return means, scales, coefficients, float(huber.intercept_)


def _linear(parts: _Linear, x: FloatArray) -> FloatArray:
    means, scales, coefficients, intercept = parts
    result: FloatArray = ((x - means) / scales) @ coefficients + intercept
    return result


# --------------------------------------------------------------------------------------------
# Argument checks
# --------------------------------------------------------------------------------------------


def _check_instant(value: float, name: str) -> float:
    number = float(value)
    if not math.isfinite(number):
        raise ValueError(f"{name} must be finite; got {value}")
    return number


def _check_points(values: ArrayLike, end: float) -> FloatArray:
    points = np.asarray(values, dtype=np.float64)
    if points.ndim != 1:
        raise ValueError(f"reference_points must be one-dimensional; got shape {points.shape}")
    if not np.all(np.isfinite(points)):
        raise ValueError("reference_points must be finite")
    if np.any(points >= end):
        raise ValueError(f"reference_points must lie before horizon_end = {end}")
    return points


def _check_settings(window_days: float, alpha: float) -> None:
    if not (math.isfinite(window_days) and window_days > 0):
        raise ValueError(f"window_days must be positive; got {window_days}")
    if not (math.isfinite(alpha) and alpha >= 0):
        raise ValueError(f"alpha must be non-negative; got {alpha}")


def _pair(values: Sequence[float]) -> tuple[float, float]:
    first, last = values
    return float(first), float(last)


def _optional_float(value: float | None) -> float | None:
    return None if value is None else float(value)
