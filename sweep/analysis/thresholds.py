"""Thresholds with bootstrap intervals. xarray in, xarray out.

A threshold is where the seed-averaged curve VAR(along) first reaches LEVEL, found by linear
interpolation between grid points (in log10 of the axis when the axis was declared with
logspace, i.e. its coordinate has attribute spacing="log"). The 95% interval resamples the
seeds with replacement (Efron's percentile bootstrap) and recomputes the threshold.

With S seeds there are only C(2S - 1, S) different resamples (35 for 4 seeds, 6435 for 8),
each with its multinomial probability. Up to EXACT_RESAMPLES of them are enumerated, which
gives the exact bootstrap interval (no Monte Carlo error: the same digits whatever the
resampling seed). Beyond that `bootstrap` resamples are drawn, and the Monte Carlo error of
each end of the interval is reported beside it.
"""

from __future__ import annotations

import functools
import itertools
import math

import numpy as np

from sweep.analysis.results import (
    at_time,
    axis_dim,
    is_text,
    quiet,
    refuse_events,
    refuse_flags,
    variable,
)
from sweep.errors import ConfigError
from sweep.storage.netcdf import environment

DIRECTIONS = ("any", "up", "down")
_BLOCK = 4_000_000  # bootstrap values held at once (32 MB of float64)
EXACT_RESAMPLES = 25_000  # enumerate every resample up to this many (9 seeds: 24310)
EXACT_VALUES = 25_000_000  # ... while resamples x points stays below this (200 MB)


# ---------------------------------------------------------------- crossings

def crossing(x: np.ndarray, y: np.ndarray, level: float, direction: str = "any",
             log: bool = False) -> np.ndarray:
    """First crossing of `level` by y along its last axis. x: [m] ascending; y: [..., m].

    direction "up" counts y[k-1] < level <= y[k], "down" y[k-1] > level >= y[k], "any"
    either (a curve that starts exactly at the level crosses at x[0]). Interpolates linearly
    in x, or in log10 x when `log`. Returns [...], NaN where y never crosses; a NaN point
    breaks the curve (no crossing is counted across it).
    """
    a, b = y[..., :-1] - level, y[..., 1:] - level
    up, down = (a < 0) & (b >= 0), (a > 0) & (b <= 0)
    hit = {"up": up, "down": down, "any": up | down}[direction]
    k = np.argmax(hit, axis=-1)
    found = hit.any(axis=-1)
    xs = np.log10(x) if log else np.asarray(x, dtype=float)
    y0 = np.take_along_axis(y, k[..., None], -1)[..., 0]
    y1 = np.take_along_axis(y, k[..., None] + 1, -1)[..., 0]
    with np.errstate(invalid="ignore", divide="ignore"):
        frac = np.where(y1 != y0, (level - y0) / (y1 - y0), 0.0)
    xc = xs[k] + frac * (xs[k + 1] - xs[k])
    xc = np.where(found, xc, np.nan)
    xc = np.where(y[..., 0] == level, xs[0], xc) if direction == "any" else xc
    return 10.0 ** xc if log else xc


# ---------------------------------------------------------------- thresholds

def threshold(ds, var: str, along: str = "beta", level: float = 0.5, time=None,
              bootstrap: int = 2000, seed: int = 0, direction: str = "any",
              confidence: float = 0.95, command: str | None = None):
    """Where the seed-mean of `var` first crosses `level` along `along`, per other grid point.

    Returns a Dataset with `threshold`, `threshold_low`, `threshold_high` over the remaining
    axes (and time, with time="all"); all three are NaN where the seed-mean never crosses.
    The interval is the `confidence` percentile interval of the bootstrap over seeds: exact
    (every resample, weighted) when there are few enough, else `bootstrap` draws seeded by
    `seed`, with `threshold_low_mc_error`/`threshold_high_mc_error` beside (zero width with
    one seed, or bootstrap=0). A resample that never crosses counts as beyond the end of the
    axis, so threshold_high is NaN when too many do. Crossings in either direction count by
    default; see `crossing` for "up" and "down".
    """
    if direction not in DIRECTIONS:
        raise ConfigError(f"direction {direction!r}: not one of {', '.join(DIRECTIONS)}")
    if not np.isfinite(level):
        raise ConfigError(f"level: must be a finite number, got {level}")
    if not 0 < confidence < 1:
        raise ConfigError(f"confidence: must lie in (0, 1), got {confidence}")
    da, dim, x, log = _prepare(variable(ds, var), along, time)
    values = da.transpose(..., dim, "seed").values.astype(float)    # [rest..., along, seed]
    arrays, method, count = located(values, x, level, direction, log, bootstrap, seed,
                                    confidence)
    attrs = {"var": var, "along": along, "level": level, "time": _time_label(time, da, dim),
             "direction": direction, "bootstrap": method, "bootstrap_resamples": count,
             "bootstrap_seed": seed, "confidence": confidence, "seeds": da.sizes["seed"]}
    return _threshold_dataset(da, dim, arrays, attrs, ds, command)


def located(values: np.ndarray, x: np.ndarray, level: float, direction: str, log: bool,
            bootstrap: int, seed: int, confidence: float, sparse: bool = False):
    """NumPy core of `threshold`: ((threshold, low, high, *Monte Carlo errors) [rest...],
    bootstrap method, resamples) from values [rest..., along, seed] (NaN: not run) at the
    ascending x [along]. sparse: a point keeps its seed-mean in a resample that draws none
    of the seeds it holds (points run with a few of the seeds: `sweep refine`)."""
    with quiet():
        mean = np.nanmean(values, axis=-1)
    best = crossing(x, mean, level, direction, log)
    counts, weights, method = resamples(values.shape[-1], values[..., 0, 0].size, bootstrap,
                                        seed)
    if counts is None:  # nothing to resample: a zero-width interval
        low = high = best
        errors = ()
    else:
        draws = _draws(values, x, level, direction, log, counts, mean if sparse else None)
        (low, high), errors = _percentiles(draws, weights, confidence, method)
    unseen = np.isnan(best)
    low, high = np.where(unseen, np.nan, low), np.where(unseen, np.nan, high)
    errors = tuple(np.where(unseen, np.nan, e) for e in errors)
    return (best, low, high, *errors), method, 0 if counts is None else len(counts)


def long_names(var: str, along: str, level: float, confidence: float, method: str) -> dict:
    """The long_name of each variable a threshold dataset holds."""
    what = f"{along} where the seed-mean {var} first crosses {level:g}"
    ci = f"{confidence:.0%} bootstrap interval ({method})"
    return {"threshold": what, "threshold_low": f"lower end of the {ci}",
            "threshold_high": f"upper end of the {ci}",
            "threshold_low_mc_error": "Monte Carlo error of threshold_low",
            "threshold_high_mc_error": "Monte Carlo error of threshold_high"}


def _prepare(da, along: str, time):
    """(da sorted along its axis with a seed dim, the dim, x [m] ascending, log spacing)."""
    refuse_flags(da)
    refuse_events(da)
    dim = axis_dim(da, along)
    if is_text(da[along]):
        shown = ", ".join(map(str, da[along].values[:4]))
        raise ConfigError(f"along {along!r}: a text axis ({shown}, ...) has no values to "
                          "interpolate between; threshold along a numeric axis (beta, time, "
                          f"...) and read {along} off the table")
    if dim == "seed":
        raise ConfigError("along 'seed': seeds are averaged, not an axis to threshold along")
    if dim == "time" and time not in (None, "all"):
        raise ConfigError(f"time {time!r}: cannot select a time when thresholding along time")
    if dim != "time":
        da = at_time(da, time)
    if da.sizes[dim] < 2:
        raise ConfigError(f"along {along!r}: needs at least 2 values, has {da.sizes[dim]}")
    da = da.isel({dim: np.argsort(da[along].values, kind="stable")})
    x = da[along].values.astype(float)
    log = da[along].attrs.get("spacing") == "log"
    if log and (x <= 0).any():
        raise ConfigError(f"along {along!r}: a log-spaced axis needs positive values")
    if "seed" not in da.dims:
        da = da.expand_dims(seed=[0])
    return da, dim, x, log


def resamples(seeds: int, points: int, samples: int, seed: int):
    """(counts [r, seeds], weights [r], method) of the bootstrap over seeds.

    "exact": every multiset of `seeds` draws (C(2 seeds - 1, seeds) of them) with its
    multinomial probability seeds! / (prod_i c_i! seeds^seeds), when they number at most
    EXACT_RESAMPLES and fit in memory beside `points` grid points; "monte carlo": `samples`
    multinomial draws of equal weight; "none" (counts None) with one seed or samples 0.
    """
    if seeds < 2 or samples < 1:
        return None, None, "none"
    total = math.comb(2 * seeds - 1, seeds)
    if total <= EXACT_RESAMPLES and total * points <= EXACT_VALUES:
        counts, weights = _exact(seeds)
        return counts, weights, "exact"
    counts = np.random.default_rng(seed).multinomial(seeds, np.full(seeds, 1.0 / seeds),
                                                     size=samples)
    return counts, np.full(samples, 1.0 / samples), "monte carlo"


@functools.lru_cache(maxsize=8)
def _exact(seeds: int) -> tuple[np.ndarray, np.ndarray]:
    """Every multiset of `seeds` draws as counts [r, seeds], and its probability (read-only:
    shared by every call with as many seeds)."""
    picks = np.array(list(itertools.combinations_with_replacement(range(seeds), seeds)))
    counts = (picks[:, :, None] == np.arange(seeds)).sum(axis=1)
    lgammas = np.array([math.lgamma(c + 1) for c in range(seeds + 1)])
    logp = math.lgamma(seeds + 1) - lgammas[counts].sum(axis=1) - seeds * math.log(seeds)
    weights = np.exp(logp)
    counts.flags.writeable = weights.flags.writeable = False
    return counts, weights


def _draws(values, x, level, direction, log, counts, held=None):
    """The threshold of each resample: [r, rest...]; +inf where it never crosses (beyond
    the end of the axis). values: [rest..., along, seed]. held [rest..., along]: the mean a
    point keeps in a resample that draws none of its seeds (default NaN)."""
    finite = np.isfinite(values)
    shape, seeds = values.shape[:-1], values.shape[-1]
    # as 2-d matrices: a stacked (batched) matmul is much slower for these shapes
    vals = np.where(finite, values, 0.0).reshape(-1, seeds)
    weight = finite.astype(float).reshape(-1, seeds)
    block = max(1, _BLOCK // max(1, values[..., 0].size))
    draws = []
    for start in range(0, len(counts), block):
        c = counts[start:start + block].T.astype(float)              # [seed, b]
        with np.errstate(invalid="ignore", divide="ignore"):
            means = ((vals @ c) / (weight @ c)).reshape(*shape, -1)   # [rest..., along, b]
        if held is not None:
            means = np.where(np.isnan(means), held[..., None], means)
        draws.append(crossing(x, np.moveaxis(means, -1, 0), level, direction, log))
    draws = np.concatenate(draws, axis=0)
    return np.where(np.isnan(draws), np.inf, draws)


def _percentiles(draws, weights, confidence, method):
    """((low, high), Monte Carlo errors): the smallest resampled thresholds whose bootstrap
    distribution function reaches (1 - confidence) / 2 and (1 + confidence) / 2. The errors
    (Monte Carlo draws only) are half the width of the order-statistic 95% interval of each
    end: how far another resampling seed could move it."""
    order = np.argsort(draws, axis=0, kind="stable")
    ranked = np.take_along_axis(draws, order, axis=0)
    cdf = np.cumsum(weights[order], axis=0)
    ends, errors = [], []
    for q in ((1.0 - confidence) / 2.0, (1.0 + confidence) / 2.0):
        k = np.argmax(cdf >= q - 1e-12, axis=0)
        ends.append(np.take_along_axis(ranked, k[None], 0)[0])
        if method == "monte carlo":
            r = len(weights)
            spread = 1.96 * math.sqrt(r * q * (1 - q))
            lo, hi = max(0, math.floor(r * q - spread)), min(r - 1, math.ceil(r * q + spread))
            with np.errstate(invalid="ignore"):
                errors.append((ranked[hi] - ranked[lo]) / 2.0)
    ends = [np.where(np.isinf(e), np.nan, e) for e in ends]
    return ends, [np.where(np.isfinite(e), e, np.nan) for e in errors]


def _time_label(time, da, dim) -> str:
    if dim == "time":
        return "all"
    if time in (None, "final"):
        return "final" if "time" in da.coords else "none"
    return str(time)


def _threshold_dataset(da, dim, arrays, attrs, source, command=None):
    import xarray as xr

    rest = [d for d in da.dims if d not in (dim, "seed")]  # in the order of the arrays
    coords = {k: c for k, c in da.coords.items() if set(c.dims) <= set(rest)}
    units = da[attrs["along"]].attrs.get("units", "1")
    names = long_names(attrs["var"], attrs["along"], attrs["level"], attrs["confidence"],
                       attrs["bootstrap"])
    data = {name: (rest, arr, {"long_name": text, "units": units})
            for (name, text), arr in zip(names.items(), arrays)}
    title = f"threshold of {attrs['var']}: {source.attrs.get('title', '')}"
    out = xr.Dataset(data, coords=coords, attrs={**environment(title, command), **attrs})
    if source.attrs.get("history"):  # CF: history is the audit trail, newest line last
        out.attrs["history"] = f"{source.attrs['history']}\n{out.attrs['history']}"
    for key in ("sweep_config", "sweep_config_hash", "source"):
        if key in source.attrs:
            out.attrs[key] = source.attrs[key]
    return out


