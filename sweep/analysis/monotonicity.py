"""Monotonicity as a measurement: where a series falls between consecutive saves (or layers).
xarray in, xarray out.

Between saves k - 1 and k, VAR *falls* when v_k < v_{k-1} beyond rounding:
    (v_{k-1} - v_k) / max(|v_{k-1}|, |v_k|) > rtol     (rtol = 1e-9),
an interval with a non-finite end counting neither way. Per grid point (every run, every
seed): how many intervals fell, the worst relative fall, and the first coordinate (time, or
layer in a `sweep probe` dataset) at which VAR was found lower than at the save before.
A statement "VAR never decreases" is then the measurement falls == 0 over a sweep.

The escape from the running peak: with P_k = max_{k' <= k} v_k' the running peak, the
`peak_fall` is max_k (P_k - v_k) (absolute, in VAR's units), and the `escape_depth` the
coordinate of the peak the series first falls from by more than `tol` (ESCAPE_TOL = 0.1:
for mean_cosine along layer, the layer after which the clustering falls by more than 0.1
from its running peak; NaN if it never does). Of equal values the last counts as the peak.
"""

from __future__ import annotations

import numpy as np

from sweep.analysis.results import axis_dim, variable
from sweep.errors import ConfigError

RTOL = 1e-9
ESCAPE_TOL = 0.1


def relative_falls(y: np.ndarray) -> np.ndarray:
    """[..., m - 1] relative fall of y: [..., m] over each interval (negative: it rose; NaN
    where an end is not finite; 0 where both ends are 0)."""
    a, b = y[..., :-1], y[..., 1:]
    scale = np.maximum(np.abs(a), np.abs(b))
    with np.errstate(invalid="ignore", divide="ignore"):
        fall = np.where(scale > 0, (a - b) / scale, 0.0)
    return np.where(np.isfinite(a) & np.isfinite(b), fall, np.nan)


def escape(y: np.ndarray, x: np.ndarray, tol: float = ESCAPE_TOL):
    """(peak_fall [...], escape_depth [...]) of y [..., m] at coordinates x [m] (see the
    module docstring); non-finite values never count as a peak or a fall."""
    y = np.where(np.isfinite(y), y, np.nan)
    peak = np.fmax.accumulate(y, axis=-1)
    drop = np.where(np.isfinite(y), peak - y, 0.0)
    at = np.maximum.accumulate(np.where(y >= peak, np.arange(y.shape[-1]), 0), axis=-1)
    fell = drop > tol
    first = np.take_along_axis(at, np.argmax(fell, axis=-1)[..., None], axis=-1)[..., 0]
    return drop.max(axis=-1), np.where(fell.any(axis=-1), x[first], np.nan)


def monotone(ds, var: str, along: str = "time", rtol: float = RTOL,
             tol: float = ESCAPE_TOL):
    """Per grid point, where `var` falls along `along` (see the module docstring).

    Returns a Dataset over the other axes with `falls` (intervals where var fell by more
    than rtol, relatively), `intervals` (those with both ends finite), `worst_fall` (the
    largest relative fall, 0 if it never fell) and `first_fall` (the `along` coordinate of
    the first save found lower than the one before it; NaN if never), `peak_fall` and
    `escape_depth` (the fall from the running peak, escape()); attributes var, along, rtol,
    escape_tol.
    """
    if not rtol >= 0:
        raise ConfigError(f"rtol: must be >= 0, got {rtol}")
    da = variable(ds, var)
    dim = axis_dim(da, along)
    if da[along].dtype.kind in "OUS":
        raise ConfigError(f"along {along!r}: a text axis has no order to fall along")
    if da.sizes[dim] < 2:
        raise ConfigError(f"along {along!r}: needs at least 2 values, has {da.sizes[dim]}")
    da = da.isel({dim: np.argsort(da[along].values, kind="stable")})
    x = da[along].values.astype(float)
    y = da.transpose(..., dim).values.astype(float)
    fall = relative_falls(y)
    fell = fall > rtol
    first = np.where(fell.any(axis=-1), x[1:][np.argmax(fell, axis=-1)], np.nan)
    worst = np.where(fell.any(axis=-1), np.nanmax(np.where(fell, fall, 0.0), axis=-1), 0.0)
    arrays = (fell.sum(axis=-1), np.isfinite(fall).sum(axis=-1), worst, first,
              *escape(y, x, tol))
    return _dataset(da, dim, arrays, {"var": var, "along": along, "rtol": rtol,
                                      "escape_tol": tol}, ds)


def _dataset(da, dim, arrays, attrs, source):
    import xarray as xr

    rest = [d for d in da.dims if d != dim]
    coords = {k: c for k, c in da.coords.items() if set(c.dims) <= set(rest)}
    var, along = attrs["var"], attrs["along"]
    meta = {"falls": (f"number of intervals between consecutive {along} values where {var} "
                      f"fell by more than {attrs['rtol']:g} relatively", "1"),
            "intervals": (f"number of intervals along {along} with both ends finite", "1"),
            "worst_fall": (f"largest relative fall of {var} over one interval, "
                           "(v_{k-1} - v_k) / max(|v_{k-1}|, |v_k|) (0 if it never fell)", "1"),
            "first_fall": (f"first {along} at which {var} was lower than at the {along} "
                           "before (NaN if never)", da[along].attrs.get("units", "1")),
            "peak_fall": (f"largest fall of {var} below its running peak along {along}", "1"),
            "escape_depth": (f"{along} of the running peak of {var} it first falls from by more "
                             f"than {attrs['escape_tol']:g} (NaN if never)",
                             da[along].attrs.get("units", "1"))}
    data = {name: (rest, arr, {"long_name": text, "units": units})
            for (name, (text, units)), arr in zip(meta.items(), arrays)}
    out = xr.Dataset(data, coords=coords, attrs=attrs)
    out.attrs["title"] = f"monotonicity of {var} along {along}: {source.attrs.get('title', '')}"
    for key in ("Conventions", "sweep_config", "sweep_config_hash", "source"):
        if key in source.attrs:
            out.attrs[key] = source.attrs[key]
    return out


def runs_that_fell(result, by: str | None = None) -> list[dict]:
    """Summary rows of a monotone dataset: per value of `by` (or once), how many runs (grid
    points) fell at least once, of how many, and the worst relative fall among them."""
    groups = [(None, result)] if by is None else [
        (v, result.sel({by: v})) for v in result[by].values]
    rows = []
    for value, part in groups:
        counted = part.intervals.values > 0
        rows.append({"by": by, "value": None if value is None else value.item(),
                     "fell": int((part.falls.values[counted] > 0).sum()),
                     "runs": int(counted.sum()),
                     "worst_fall": float(part.worst_fall.values[counted].max(initial=0.0))})
    return rows
