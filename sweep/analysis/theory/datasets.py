"""What every `sweep theory` dataset carries: CF attributes on each variable, and the
global attributes of every sweep file (Conventions, title, history, versions)."""

from __future__ import annotations

import math

import numpy as np

from sweep.errors import ConfigError
from sweep.storage.netcdf import environment


def var(dims, values, long_name: str, units: str = "1") -> tuple:
    """A data variable or coordinate with its CF long_name and units ("1": dimensionless)."""
    return dims, values, {"long_name": long_name, "units": units}


def dataset(title: str, theory: str, data_vars: dict, coords: dict, **attrs):
    """The theory dataset: `theory` names the command (plots read it), attrs its inputs."""
    import xarray as xr

    ds = xr.Dataset(data_vars, coords=coords)
    ds.attrs.update(environment(title))
    ds.attrs.update(theory=theory, **attrs)
    return ds


def values(key: str, given, low: float = 0.0, strict: bool = False) -> np.ndarray:
    """Finite numbers >= low (> low when strict) as a 1-d float array; ConfigError names key."""
    x = np.atleast_1d(np.asarray(given, dtype=float)).ravel()
    bad = [v for v in x if not math.isfinite(v) or v < low or (strict and v == low)]
    if x.size == 0 or bad:
        sign = ">" if strict else ">="
        raise ConfigError(f"{key}: expected finite numbers {sign} {low:g}, got "
                          f"{bad[0] if bad else 'none'}")
    return x
