"""Initial token configurations on S^{d-1}. Pure NumPy; the caller passes the generator.

x: [n, d] float64 with unit rows; except `gaussian` (euclidean space only: standard Gaussian
points in R^d, whose convex hull has interior points) and any start drawn with unit=False
(euclidean space), whose jitter is added without renormalising.
"""

from __future__ import annotations

import numpy as np


def _normalize(x: np.ndarray) -> np.ndarray:
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def uniform(n: int, d: int, rng: np.random.Generator) -> np.ndarray:
    """Independent uniform points (normalised standard Gaussians)."""
    return _normalize(rng.standard_normal((n, d)))


def _frame(d: int, m: int, rng: np.random.Generator) -> np.ndarray:
    """m random orthonormal vectors in R^d, as rows: [m, d] (m <= d)."""
    q, r = np.linalg.qr(rng.standard_normal((d, m)))
    return (q * np.sign(np.diag(r))).T  # sign fix makes the frame Haar-distributed


def orthonormal(n: int, d: int, rng: np.random.Generator) -> np.ndarray:
    """n mutually orthogonal unit vectors (n <= d): every pairwise cosine is 0."""
    return _frame(d, n, rng)


def equiangular(n: int, d: int, overlap: float, rng: np.random.Generator) -> np.ndarray:
    """Every pairwise cosine equals `overlap`: x_i = sqrt(rho) u + sqrt(1 - rho) e_i."""
    if overlap == 0.0:
        return orthonormal(n, d, rng)
    frame = _frame(d, n + 1, rng)
    return np.sqrt(overlap) * frame[n] + np.sqrt(1.0 - overlap) * frame[:n]


def clusters(n: int, d: int, k: int, spread: float, rng: np.random.Generator) -> np.ndarray:
    """k uniform centres c; token i sits near c_{i mod k}: normalise(c + spread P_c(g)), g
    standard Gaussian, so each tangent direction has angular spread about `spread`."""
    return around(uniform(k, d, rng), n, spread, rng)


def around(centres: np.ndarray, n: int, spread: float, rng: np.random.Generator) -> np.ndarray:
    """n tokens near given centres [k, d]: token i near centre i mod k (see `clusters`)."""
    centres = centres[np.arange(n) % len(centres)]
    g = rng.standard_normal((n, centres.shape[1]))
    g -= np.sum(g * centres, axis=1, keepdims=True) * centres
    return _normalize(centres + spread * g)


def circle(n: int, d: int, rng: np.random.Generator) -> np.ndarray:
    """n points equally spaced on a random great circle: cos(2 pi i / n) e_1 + sin(...) e_2."""
    e = _frame(d, 2, rng)
    theta = 2.0 * np.pi * np.arange(n) / n
    return np.cos(theta)[:, None] * e[0] + np.sin(theta)[:, None] * e[1]


def draw(init, n: int, d: int, rng: np.random.Generator,
         given: np.ndarray | None = None, unit: bool = True) -> np.ndarray:
    """The start named by an `Init` section, with its Gaussian jitter, renormalised (unless
    unit is False: euclidean space).

    given: the [n, d] start of `kind: file`, read by the caller (this module reads no files).
    """
    if init.kind == "gaussian":
        x = rng.standard_normal((n, d))
    elif init.kind == "file":
        x = np.array(given, dtype=np.float64)
    elif init.kind == "clusters":
        x = clusters(n, d, init.clusters, init.spread, rng)
    elif init.kind == "circle":
        x = circle(n, d, rng)
    elif init.kind == "uniform":
        x = uniform(n, d, rng)
    elif init.kind == "orthonormal":
        x = orthonormal(n, d, rng)
    elif init.kind == "equiangular":
        x = equiangular(n, d, init.overlap, rng)
    else:
        raise ValueError(f"unknown init kind {init.kind!r}")
    if init.jitter > 0:
        x = x + init.jitter * rng.standard_normal((n, d))
        x = _normalize(x) if unit else x
    return x
