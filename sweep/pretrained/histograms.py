"""Per-layer histograms of the pairwise cosines of a text's tokens: the figure the reference
code of Geshkovski, Letrouit, Polyanskiy and Rigollet ("A mathematical perspective on
Transformers") draws for ALBERT's layers, here for the probed model.

For unit tokens x [n, d] of one layer, the cosines <x_i, x_j> of the n (n - 1) / 2 pairs
i < j, binned on equal bins over [-1, 1]; stored as a density (the counts divided by the
number of pairs and the bin width, so each layer's histogram integrates to 1 whatever n).
In the dataset the dimension is `bin`, its coordinate the bin centres with CF-style bounds
(`bin_bounds` [bin, 2], the edges): the names and bins of a flow's cosine_hist over time
(sweep.observables.cosines), which holds fractions (a density times the bin width).
"""

from __future__ import annotations

import numpy as np

from sweep.observables.cosines import coordinates, edges, pair_cosines

BINS = 40  # `sweep probe --bins`


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
    coords = coordinates(bins)
    data = {"cosine_hist": (("layer", "bin"), density(x, bins), {
                "long_name": "density of the pairwise cosines <x_i, x_j>, i < j, of the "
                             "layer's unit tokens (counts / (pairs x bin width))",
                "units": "1"}),
            "bin_bounds": coords.pop("bin_bounds")}
    return data, coords
