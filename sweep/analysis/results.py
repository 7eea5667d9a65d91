"""Reading results: open a file, pick a variable and its axes, one time or a reduction over
time per run, the seed mean, and the slices a plot shows. xarray in, xarray out."""

from __future__ import annotations

import contextlib
import warnings
from pathlib import Path

import numpy as np

from sweep.core.config import ConfigError

REDUCTIONS = ("max", "min", "mean", "plateau")


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


@contextlib.contextmanager
def quiet():
    """All-NaN slices (missing runs, resamples) are expected: their mean is NaN, silently."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        yield


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
    with quiet():
        sem = da.std("seed", ddof=1) / np.sqrt(seeds) if seeds > 1 else mean * 0.0
    return mean, sem, seeds
