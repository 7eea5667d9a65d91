"""Initial token configurations on S^{d-1}. Pure NumPy; the caller passes the generator.

x: [n, d] float64 with unit rows.
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


def draw(init, n: int, d: int, rng: np.random.Generator) -> np.ndarray:
    """The start named by an `Init` section, with its Gaussian jitter, renormalised."""
    if init.kind == "uniform":
        x = uniform(n, d, rng)
    elif init.kind == "orthonormal":
        x = orthonormal(n, d, rng)
    elif init.kind == "equiangular":
        x = equiangular(n, d, init.overlap, rng)
    else:
        raise ValueError(f"unknown init kind {init.kind!r}")
    if init.jitter > 0:
        x = _normalize(x + init.jitter * rng.standard_normal((n, d)))
    return x
