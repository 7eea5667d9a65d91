"""Metastability as a measurement: the plateaus of a saved series, such as the staircase the
energy E_beta climbs as clusters merge (Geshkovski, Koubbi, Polyanskiy, Rigollet, dynamic
metastability), detected per run. xarray in, xarray out.

Between saves k - 1 and k the series is *flat* when its relative rate of change is small:
    |v_k - v_{k-1}| / (max(|v_{k-1}|, |v_k|) (t_k - t_{k-1})) <= tol,
an interval with a non-finite end being not flat. A plateau is a maximal run of flat
intervals that lasts at least min_duration: it starts at the run's first save and ends at its
last, and its level is the median of the series over those saves. Between two consecutive
plateaus, the saddle time is the midpoint of the interval where the series changed fastest
(the passage from one metastable state to the next). A plateau that reaches the last save
is cut there: its duration is a lower bound.
"""

from __future__ import annotations

import numpy as np

from sweep.analysis.results import axis_dim, variable
from sweep.errors import ConfigError

TOL = 1e-3
PROVENANCE = ("Conventions", "sweep_config", "sweep_config_hash", "source")


def relative_rates(y: np.ndarray, x: np.ndarray) -> np.ndarray:
    """[..., m - 1] relative rate of change of y: [..., m] over each interval of x: [m]
    (NaN where an end is not finite; 0 where both ends are 0)."""
    a, b = y[..., :-1], y[..., 1:]
    scale = np.maximum(np.abs(a), np.abs(b)) * np.diff(x)
    with np.errstate(invalid="ignore", divide="ignore"):
        rate = np.where(scale > 0, np.abs(b - a) / scale, 0.0)
    return np.where(np.isfinite(a) & np.isfinite(b), rate, np.nan)


def spans(flat: np.ndarray, x: np.ndarray, min_duration: float) -> list[tuple[int, int]]:
    """(first save, last save) of each maximal run of flat intervals lasting min_duration."""
    found, k = [], 0
    while k < len(flat):
        if not flat[k]:
            k += 1
            continue
        end = k
        while end < len(flat) and flat[end]:
            end += 1
        if x[end] - x[k] >= min_duration:
            found.append((k, end))
        k = end
    return found


def one_run(y: np.ndarray, x: np.ndarray, tol: float, min_duration: float) -> dict:
    """The plateaus of one series y over x: levels, starts, ends, saddle times."""
    rate = relative_rates(y, x)
    found = spans(rate <= tol, x, min_duration)
    fastest = np.where(np.isfinite(rate), rate, -1.0)
    saddles = [0.5 * (x[j] + x[j + 1])
               for j in (a_end + int(np.argmax(fastest[a_end:b_start]))
                         for (_, a_end), (b_start, _) in zip(found, found[1:]))]
    return {"level": [float(np.median(y[a:b + 1])) for a, b in found],
            "start": [float(x[a]) for a, _ in found], "end": [float(x[b]) for _, b in found],
            "saddle": saddles}


def plateaus(ds, var: str, along: str = "time", tol: float = TOL,
             min_duration: float = 0.0):
    """Per grid point, the plateaus of `var` along `along` (see the module docstring).

    Returns a Dataset over the other axes with `count` (plateaus found), and along a
    `plateau` dimension (the largest count; NaN past a run's own) `level`, `start`, `end`
    and `duration`, and along `saddle` (one fewer) `saddle_time`; attributes var, along,
    tol, min_duration.
    """
    if not tol >= 0:
        raise ConfigError(f"tol: must be >= 0, got {tol}")
    if not min_duration >= 0:
        raise ConfigError(f"min_duration: must be >= 0, got {min_duration}")
    da = variable(ds, var)
    dim = axis_dim(da, along)
    if da[along].dtype.kind in "OUS" or da.sizes[dim] < 2:
        raise ConfigError(f"along {along!r}: needs at least 2 numeric values")
    da = da.isel({dim: np.argsort(da[along].values, kind="stable")})
    x = da[along].values.astype(float)
    values = da.transpose(..., dim).values.astype(float)
    runs = [one_run(y, x, tol, min_duration) for y in values.reshape(-1, len(x))]
    width = max([1] + [len(r["level"]) for r in runs])

    def padded(key: str, size: int) -> np.ndarray:
        rows = [r[key] + [np.nan] * (size - len(r[key])) for r in runs]
        return np.array(rows, dtype=float).reshape(values.shape[:-1] + (size,))

    arrays = {key: padded(key, width) for key in ("level", "start", "end")}
    arrays["duration"] = arrays["end"] - arrays["start"]
    arrays["saddle_time"] = padded("saddle", width - 1)
    count = np.array([len(r["level"]) for r in runs]).reshape(values.shape[:-1])
    attrs = {"var": var, "along": along, "tol": tol, "min_duration": min_duration}
    return _dataset(da, dim, count, arrays, attrs, ds)


def _dataset(da, dim, count, arrays, attrs, source):
    import xarray as xr

    rest = [d for d in da.dims if d != dim]
    coords = {k: c for k, c in da.coords.items() if set(c.dims) <= set(rest)}
    var, along = attrs["var"], attrs["along"]
    units = da[along].attrs.get("units", "1")
    meta = {"level": (f"median of {var} over the plateau", da.attrs.get("units", "1")),
            "start": (f"first {along} of the plateau", units),
            "end": (f"last {along} of the plateau (the last save: cut there)", units),
            "duration": (f"end - start of the plateau, in {along}", units),
            "saddle_time": (f"{along} where {var} changed fastest between two consecutive "
                            "plateaus", units)}
    data = {"count": (rest, count, {"long_name": f"plateaus of {var} along {along} "
                                                 f"(relative rate <= {attrs['tol']:g})",
                                    "units": "1"})}
    for name, (text, unit) in meta.items():
        extra = "saddle" if name == "saddle_time" else "plateau"
        data[name] = (rest + [extra], arrays[name], {"long_name": text, "units": unit})
    kept = {k: source.attrs[k] for k in PROVENANCE if k in source.attrs}
    title = f"plateaus of {var} along {along}: {source.attrs.get('title', '')}"
    return xr.Dataset(data, coords=coords, attrs={**attrs, "title": title, **kept})
