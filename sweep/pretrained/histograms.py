"""Per-layer histograms of the pairwise cosines of a text's tokens: the figure the reference
code of Geshkovski, Letrouit, Polyanskiy and Rigollet ("A mathematical perspective on
Transformers") draws for ALBERT's layers, here for the probed model.

For unit tokens x [n, d] of one layer, the cosines <x_i, x_j> of the n (n - 1) / 2 pairs
i < j, binned on equal bins over [-1, 1]; stored as a density (the counts divided by the
number of pairs and the bin width, so each layer's histogram integrates to 1 whatever n).
In the dataset the dimension is `bin`, its coordinate the bin centres with CF-style bounds
(`bin_bounds` [bin, 2], the edges).
"""

from __future__ import annotations

import numpy as np

BINS = 40  # `sweep probe --bins`


def edges(bins: int = BINS) -> np.ndarray:
    """[bins + 1] equal bins over [-1, 1]."""
    return np.linspace(-1.0, 1.0, bins + 1)


def pair_cosines(x: np.ndarray) -> np.ndarray:
    """[n (n - 1) / 2] cosines <x_i, x_j>, i < j, of unit rows x [n, d], clipped to [-1, 1]
    (rounding can put a cosine a hair outside)."""
    i, j = np.triu_indices(x.shape[0], k=1)
    return np.clip(np.einsum("pd,pd->p", x[i], x[j]), -1.0, 1.0)


def density(x: np.ndarray, bins: int = BINS) -> np.ndarray:
    """[layers, bins]: per layer of unit tokens x [layers, n, d], the density of its pairwise
    cosines on edges(bins) (NaN for a layer of fewer than two tokens)."""
    e = edges(bins)
    out = np.full((x.shape[0], bins), np.nan)
    for layer, xl in enumerate(x):
        c = pair_cosines(xl)
        if c.size:
            out[layer] = np.histogram(c, bins=e)[0] / (c.size * np.diff(e))
    return out


def variables(x: np.ndarray, bins: int = BINS) -> tuple[dict, dict]:
    """(data variables, coordinates) of the histograms of unit tokens x [layers, n, d], for
    a dataset over (layer, bin)."""
    e = edges(bins)
    data = {"cosine_hist": (("layer", "bin"), density(x, bins), {
                "long_name": "density of the pairwise cosines <x_i, x_j>, i < j, of the "
                             "layer's unit tokens (counts / (pairs x bin width))",
                "units": "1"}),
            "bin_bounds": (("bin", "nv"), np.column_stack([e[:-1], e[1:]]),
                           {"long_name": "cosine bin edges", "units": "1"})}
    coords = {"bin": ("bin", 0.5 * (e[:-1] + e[1:]),
                      {"long_name": "pairwise cosine (bin centre)", "units": "1",
                       "bounds": "bin_bounds"})}
    return data, coords
