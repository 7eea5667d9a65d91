"""Where values fall on a figure's axes: a text axis (or one of one or two values) as
categories, a declared logspace or geometric grid on a log axis, any other numeric grid
linearly at its values; and the cell edges of a heatmap around them. NumPy only."""

from __future__ import annotations

import numpy as np

from sweep.analysis import results
from sweep.errors import ConfigError


def scale(coord) -> str:
    """'category' (a text axis, or one or two values), 'log' (asked for: `sweep plot
    --log-x`, a declared logspace or a geometric list) or 'linear': numeric axes are drawn
    at their values, however irregular."""
    if coord.attrs.get("plot_scale") == "log":
        return "log"
    if results.is_text(coord) or coord.size <= 2:  # two values have no spacing to show
        return "category"
    v = np.asarray(coord.values, dtype=float)
    if coord.attrs.get("spacing") == "log":
        return "log"
    if v.size >= 3 and (v > 0).all():
        ratios = np.diff(np.log(np.sort(v)))
        if not np.allclose(ratios, ratios[0], rtol=1e-6) or ratios[0] == 0:
            return "linear"
        steps = np.diff(np.sort(v))
        return "linear" if np.allclose(steps, steps[0], rtol=1e-6) else "log"
    return "linear"


def force_log(ds, axis: str, option: str):
    """The dataset with `axis` drawn on a log scale (ConfigError naming `option` when it has
    text or values <= 0, which a log axis cannot place)."""
    if axis not in ds.coords:
        return ds  # not a grid axis (time of a dataset without one): plot names the problem
    coord = ds[axis]
    if results.is_text(coord):
        raise ConfigError(f"{option}: {axis} holds text; a log axis needs numbers")
    if not (np.asarray(coord.values, dtype=float) > 0).all():
        raise ConfigError(f"{option}: {axis} has values <= 0, which a log axis cannot show")
    return ds.assign_coords({axis: coord.copy().assign_attrs(plot_scale="log")})


def edges(v: np.ndarray, kind: str) -> np.ndarray:
    """Cell edges around the grid values (geometric midpoints on a log axis)."""
    if kind == "category":
        return np.arange(v.size + 1) - 0.5
    w = np.log(v.astype(float)) if kind == "log" else v.astype(float)
    if w.size == 1:
        mids = np.array([w[0] - 0.5, w[0] + 0.5])
    else:
        inner = 0.5 * (w[1:] + w[:-1])
        mids = np.concatenate([[2 * w[0] - inner[0]], inner, [2 * w[-1] - inner[-1]]])
    return np.exp(mids) if kind == "log" else mids


def place(coord):
    """values -> where they fall on this axis (a text axis: the index of each label)."""
    if scale(coord) != "category":
        return lambda values: np.asarray(values, dtype=float)
    if not results.is_text(coord):
        grid = np.asarray(coord.values, dtype=float)
        return lambda values: np.array([np.flatnonzero(np.isclose(grid, v))[0] if
                                        np.isclose(grid, v).any() else np.nan
                                        for v in np.ravel(values).astype(float)])
    index = {str(g): k for k, g in enumerate(coord.values)}
    return lambda values: np.array([index.get(str(v), np.nan) for v in np.ravel(values)])
