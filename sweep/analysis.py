"""Thresholds with bootstrap intervals, and reductions over time. xarray in, xarray out.

A threshold is where the seed-averaged curve VAR(along) first reaches LEVEL, found by linear
interpolation between grid points (in log10 of the axis when the axis was declared with
logspace, i.e. its coordinate has attribute spacing="log"). The 95% interval resamples the
seeds with replacement (Efron's percentile bootstrap) and recomputes the threshold.
"""

from __future__ import annotations

import contextlib
import warnings
from pathlib import Path

import numpy as np

from sweep.config import ConfigError

DIRECTIONS = ("any", "up", "down")
REDUCTIONS = ("max", "min", "mean", "plateau")
_BLOCK = 4_000_000  # bootstrap values held at once (32 MB of float64)


def open_results(path: str | Path, load: bool = True):
    """xarray.open_dataset, with a missing or unreadable file as a ConfigError naming it.

    load=False leaves the variables on disk; the caller then closes the dataset."""
    import xarray as xr

    path = Path(path)
    if not path.is_file():
        raise ConfigError(f"{path}: no such results file")
    try:
        ds = xr.open_dataset(path)
        if not load:
            return ds
        with ds:
            return ds.load()
    except (OSError, ValueError) as err:
        raise ConfigError(f"{path}: not a readable netCDF file ({err})") from None


def variable(ds, var: str):
    """ds[var], or a ConfigError listing the variables there are."""
    if var not in ds.data_vars:
        raise ConfigError(f"var {var!r}: not a variable of the results "
                          f"(have: {', '.join(map(str, ds.data_vars))})")
    return ds[var]


def axis_dim(da, axis: str) -> str:
    """The dimension that `axis` runs along: a dimension, or a coordinate of a zip group."""
    if axis in da.dims:
        return axis
    if axis in da.coords and da[axis].ndim == 1 and da[axis].dims[0] in da.dims:
        return da[axis].dims[0]
    raise ConfigError(f"axis {axis!r}: not an axis of {da.name} "
                      f"(axes: {', '.join(map(str, da.dims))})")


# ---------------------------------------------------------------- time and seeds

def at_time(da, time: str | float | None):
    """One time of a series (per run, before any seed average).

    time: None or "final" (the last saved time), a number (the nearest saved time), "all"
    (keep the time dimension), or a reduction over time per run: "max", "min", "mean", or
    "plateau" (the longest-held value after the series first leaves its starting value:
    for n_clusters, the metastable cluster count; NaN if it never moves). Variables without
    a time dimension (t_cluster, max_clusters) are reductions already and pass through.
    """
    if "time" not in da.dims:
        if time not in (None, "final", "all"):
            raise ConfigError(f"time {time!r}: {da.name} has no time dimension")
        return da
    if time in (None, "final"):
        return da.isel(time=-1)
    if time == "all":
        return da
    if time in REDUCTIONS:
        return _reduce(da, str(time))
    value = _number(time)
    t = da["time"].values
    if not t.min() - 1e-9 <= value <= t.max() + 1e-9:
        raise ConfigError(f"time {value:g}: outside the saved times [{t.min():g}, {t.max():g}]")
    return da.sel(time=value, method="nearest")


def _number(time) -> float:
    try:
        return float(time)
    except (TypeError, ValueError):
        raise ConfigError(f"time {time!r}: expected a number, final, all or one of "
                          f"{', '.join(REDUCTIONS)}") from None


def _reduce(da, how: str):
    import xarray as xr

    if how == "plateau":
        out = xr.apply_ufunc(plateau, da, input_core_dims=[["time"]], vectorize=True)
    else:
        out = getattr(da, how)("time", skipna=True)
    out.attrs = {**da.attrs, "long_name": f"{how} over time of {da.attrs.get('long_name', '')}"}
    return out.rename(da.name)


def plateau(y: np.ndarray) -> float:
    """The value held for the most consecutive saves after y first differs from y[0]."""
    moved = np.flatnonzero(y[1:] != y[0])
    if moved.size == 0:
        return np.nan
    rest = y[moved[0] + 1:]
    starts = np.flatnonzero(np.concatenate([[True], rest[1:] != rest[:-1]]))
    lengths = np.diff(np.append(starts, rest.size))
    return float(rest[starts[np.argmax(lengths)]])


def seed_mean(da):
    """The mean over the seed axis (NaN runs, e.g. missing jobs, are skipped)."""
    return da.mean("seed", skipna=True, keep_attrs=True) if "seed" in da.dims else da


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
    with _quiet():
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


@contextlib.contextmanager
def _quiet():
    """All-NaN slices (missing runs, resamples) are expected: their mean is NaN, silently."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        yield


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


# ---------------------------------------------------------------- slices for plots

def parse_selection(items) -> dict[str, float]:
    """["d=128", "n=32"] -> {"d": 128.0, "n": 32.0}."""
    out = {}
    for item in items or ():
        key, sep, value = str(item).partition("=")
        try:
            out[key.strip()] = float(value)
        except ValueError:
            sep = ""
        if not sep or not key.strip():
            raise ConfigError(f"--sel {item}: expected AXIS=NUMBER, e.g. d=128")
    return out


def select(da, selection: dict[str, float]):
    """Pick the nearest grid value of each named axis (a point of a sweep, not a new one)."""
    for axis, value in selection.items():
        dim = axis_dim(da, axis)
        if dim in ("seed", "time"):
            raise ConfigError(f"--sel {axis}: use --time for time; seeds are averaged")
        k = int(np.argmin(np.abs(da[axis].values.astype(float) - value)))
        da = da.isel({dim: k})
    return da


def frame(ds, var: str, axes: list[str], time=None, selection=None):
    """(seed-mean, standard error over seeds, seed count) of var over `axes` plus any dims
    left over (facets). A time axis among `axes` keeps the series, otherwise `time` picks
    one time or reduction per run. Axes are given as named; the result's dims are real dims.
    """
    da = select(variable(ds, var), selection or {})
    dims = [axis_dim(da, a) for a in axes]
    if "seed" in dims:
        raise ConfigError("axis 'seed': seeds are averaged, plot another axis")
    if "time" not in dims:
        da = at_time(da, time)
    elif time not in (None, "all"):
        raise ConfigError(f"time {time!r}: time is an axis of this plot, drop --time")
    seeds = da.sizes.get("seed", 1)
    mean = seed_mean(da)
    with _quiet():
        sem = da.std("seed", ddof=1) / np.sqrt(seeds) if seeds > 1 else mean * 0.0
    return mean, sem, seeds
