"""Thresholds with bootstrap intervals. xarray in, xarray out.

A threshold is where the seed-averaged curve VAR(along) first reaches LEVEL, found by linear
interpolation between grid points (in log10 of the axis when the axis was declared with
logspace, i.e. its coordinate has attribute spacing="log"). The 95% interval resamples the
seeds with replacement (Efron's percentile bootstrap) and recomputes the threshold.
"""

from __future__ import annotations

import numpy as np

from sweep.analysis.results import at_time, axis_dim, quiet, variable
from sweep.core.config import ConfigError

DIRECTIONS = ("any", "up", "down")
_BLOCK = 4_000_000  # bootstrap values held at once (32 MB of float64)


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
              bootstrap: int = 1000, seed: int = 0, direction: str = "any",
              confidence: float = 0.95):
    """Where the seed-mean of `var` first crosses `level` along `along`, per other grid point.

    Returns a Dataset with `threshold`, `threshold_low`, `threshold_high` over the remaining
    axes (and time, with time="all"); all three are NaN where the seed-mean never crosses.
    The interval is the `confidence` percentile interval of `bootstrap` resamples of the
    seeds (seeded by `seed`, so reproducible; zero width with one seed). A resample that never
    crosses counts as beyond the end of the axis, so threshold_high is NaN when too many do.
    Crossings in either direction count by default; see `crossing` for "up" and "down".
    """
    if direction not in DIRECTIONS:
        raise ConfigError(f"direction {direction!r}: not one of {', '.join(DIRECTIONS)}")
    if not np.isfinite(level):
        raise ConfigError(f"level: must be a finite number, got {level}")
    if not 0 < confidence < 1:
        raise ConfigError(f"confidence: must lie in (0, 1), got {confidence}")
    da, dim, x, log = _prepare(variable(ds, var), along, time)
    values = da.transpose(..., dim, "seed").values.astype(float)    # [rest..., along, seed]
    with quiet():
        mean = np.nanmean(values, axis=-1)
    best = crossing(x, mean, level, direction, log)
    if bootstrap < 1 or values.shape[-1] == 1:  # nothing to resample: a zero-width interval
        low = high = best
    else:
        low, high = _interval(values, x, level, direction, log, bootstrap, seed, confidence)
    low, high = np.where(np.isnan(best), np.nan, low), np.where(np.isnan(best), np.nan, high)
    attrs = {"var": var, "along": along, "level": level, "time": _time_label(time, da, dim),
             "direction": direction, "bootstrap": bootstrap, "bootstrap_seed": seed,
             "confidence": confidence, "seeds": da.sizes["seed"]}
    return _threshold_dataset(da, dim, (best, low, high), attrs, ds)


def _prepare(da, along: str, time):
    """(da sorted along its axis with a seed dim, the dim, x [m] ascending, log spacing)."""
    dim = axis_dim(da, along)
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


def _interval(values, x, level, direction, log, samples, seed, confidence):
    """Percentile bootstrap over the last axis (seeds, at least two) of values:
    [rest..., along, seed]."""
    s = values.shape[-1]
    counts = np.random.default_rng(seed).multinomial(s, np.full(s, 1.0 / s), size=samples)
    finite = np.isfinite(values)
    vals, weight = np.where(finite, values, 0.0), finite.astype(float)
    block = max(1, _BLOCK // max(1, values[..., 0].size))
    draws = []
    for start in range(0, samples, block):
        c = counts[start:start + block].T.astype(float)              # [seed, b]
        with np.errstate(invalid="ignore", divide="ignore"):
            means = (vals @ c) / (weight @ c)                         # [rest..., along, b]
        draws.append(crossing(x, np.moveaxis(means, -1, 0), level, direction, log))
    # a resample that never crosses lies beyond the end of the axis
    draws = np.concatenate(draws, axis=0)
    filled = np.where(np.isnan(draws), np.inf, draws)
    tail = (1.0 - confidence) / 2.0
    low = np.quantile(filled, tail, axis=0, method="lower")
    high = np.quantile(filled, 1.0 - tail, axis=0, method="higher")
    return np.where(np.isinf(low), np.nan, low), np.where(np.isinf(high), np.nan, high)


def _time_label(time, da, dim) -> str:
    if dim == "time":
        return "all"
    if time in (None, "final"):
        return "final" if "time" in da.coords else "none"
    return str(time)


def _threshold_dataset(da, dim, arrays, attrs, source):
    import xarray as xr

    rest = [d for d in da.dims if d not in (dim, "seed")]  # in the order of the arrays
    coords = {k: c for k, c in da.coords.items() if set(c.dims) <= set(rest)}
    units = da[attrs["along"]].attrs.get("units", "1")
    what = f"{attrs['along']} where the seed-mean {attrs['var']} first crosses {attrs['level']:g}"
    names = {"threshold": what,
             "threshold_low": f"lower end of the {attrs['confidence']:.0%} bootstrap interval",
             "threshold_high": f"upper end of the {attrs['confidence']:.0%} bootstrap interval"}
    data = {name: (rest, arr, {"long_name": text, "units": units})
            for (name, text), arr in zip(names.items(), arrays)}
    out = xr.Dataset(data, coords=coords, attrs=attrs)
    out.attrs["title"] = f"threshold of {attrs['var']}: {source.attrs.get('title', '')}"
    for key in ("sweep_config", "sweep_config_hash", "source"):
        if key in source.attrs:
            out.attrs[key] = source.attrs[key]
    return out


