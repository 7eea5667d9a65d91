"""Histograms of the pairwise cosines <x_i, x_j>, i < j, of unit tokens on B equal bins over
[-1, 1] (the last bin closed, numpy.histogram's rule; cosines clipped to [-1, 1], since
rounding can put one a hair outside): the probe's per layer (pretrained.histograms) and a
flow's at each save (`output.hist_bins`, computed after the integration from the trajectory).

One naming for both, so one figure draws either: the variable `cosine_hist`, its last
dimension `bin`, whose coordinate is the bin centres with CF bounds `bin_bounds` [bin, nv]
(the edges). NumPy only, summed pair by pair in a fixed order (einsum, no BLAS): the same
positions give the same bits whatever the thread count.
"""

from __future__ import annotations

import numpy as np

NAME = "cosine_hist"
FLOW_ATTRS = {"long_name": "fraction of the pairs i < j whose cosine <x_i, x_j> lies in the "
                           "bin (each time's row sums to 1)", "units": "1"}


def edges(bins: int) -> np.ndarray:
    """[bins + 1] equal bins over [-1, 1]."""
    return np.linspace(-1.0, 1.0, bins + 1)


def pair_cosines(x: np.ndarray) -> np.ndarray:
    """[n (n - 1) / 2] cosines <x_i, x_j>, i < j, of unit rows x [n, d], clipped to [-1, 1]."""
    i, j = np.triu_indices(x.shape[0], k=1)
    return np.clip(np.einsum("pd,pd->p", x[i], x[j]), -1.0, 1.0)


def fractions(traj: np.ndarray, bins: int) -> np.ndarray:
    """[saves, bins]: per saved state of traj [saves, n, d] (float64 sums whatever its
    dtype), the fraction of its pairs in each bin; NaN at a save with a non-finite position
    (after a blow-up, or never reached) and for fewer than two tokens."""
    e, out = edges(bins), np.full((traj.shape[0], bins), np.nan)
    for s, x in enumerate(traj):
        x = np.asarray(x, np.float64)
        if x.shape[0] > 1 and np.isfinite(x).all():
            c = pair_cosines(x)
            out[s] = np.histogram(c, bins=e)[0] / c.size
    return out


def scratch_bytes(n: int, d: int, bins: int) -> int:
    """Bytes fractions() holds beside its input for n tokens in d dimensions: the pair
    indices, the two gathered [pairs, d] rows, the cosines and the histogram."""
    pairs = n * (n - 1) // 2
    return pairs * (2 * 8 + 2 * d * 8 + 2 * 8) + 8 * n * d + 8 * (bins + 1)


def coordinates(bins: int) -> dict:
    """The `bin` coordinate (centres, bounds bin_bounds) and `bin_bounds` [bin, nv]: name ->
    (dims, values, attrs)."""
    e = edges(bins)
    return {"bin": ("bin", 0.5 * (e[:-1] + e[1:]),
                    {"long_name": "pairwise cosine (bin centre)", "units": "1",
                     "bounds": "bin_bounds"}),
            "bin_bounds": (("bin", "nv"), np.column_stack([e[:-1], e[1:]]),
                           {"long_name": "cosine bin edges", "units": "1"})}
