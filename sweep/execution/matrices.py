"""The matrices of a model: per-head score matrices M_h = Q_h^T K_h, value matrices V_h and
the FFN matrix W. Pure NumPy; the caller passes the generator (sweep.execution.simulate seeds it).

Only M_h = Q_h^T K_h enters the dynamics (s_ij = beta_h <x_i, M_h x_j>), so `qk` specifies
that product directly. gaussian: entries N(0, 1/d); orthogonal: Haar-distributed; goe: the
Gaussian orthogonal ensemble, symmetric (a Wigner matrix, spectrum filling [-2, 2] as d grows).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from sweep.config import inputs


def gaussian(heads: int, d: int, rng: np.random.Generator) -> np.ndarray:
    """[heads, d, d] with independent N(0, 1/d) entries."""
    return rng.standard_normal((heads, d, d)) / np.sqrt(d)


def orthogonal(heads: int, d: int, rng: np.random.Generator) -> np.ndarray:
    """[heads, d, d] Haar orthogonal matrices (QR of a Gaussian, signs fixed by diag R)."""
    q, r = np.linalg.qr(rng.standard_normal((heads, d, d)))
    return q * np.sign(np.diagonal(r, axis1=1, axis2=2))[:, None, :]


def goe(heads: int, d: int, rng: np.random.Generator) -> np.ndarray:
    """[heads, d, d] GOE matrices (G + G^T) / sqrt 2 of a gaussian G: symmetric, off-diagonal
    entries N(0, 1/d), diagonal N(0, 2/d)."""
    g = gaussian(heads, d, rng)
    return (g + np.swapaxes(g, 1, 2)) / np.sqrt(2.0)


DRAWS = {"gaussian": gaussian, "orthogonal": orthogonal, "goe": goe}


def _one(key: str, spec: str, heads: int, d: int, rng, source: Path | None, digests: dict):
    if spec in ("identity", "none"):
        return None
    if spec in DRAWS:
        return DRAWS[spec](heads, d, rng)
    return inputs.matrix(key, spec, source, d, heads, digests.get(key))


def attention(model, rng: np.random.Generator, source: Path | None = None,
              digests: dict | None = None):
    """(qk, v): each [heads, d, d], or None for the identity. qk is drawn before v.
    digests: key -> the content digest a file must have (a job's, see inputs.read_array)."""
    qk = _one("model.qk", model.qk, model.heads, model.d, rng, source, digests or {})
    if model.v == "qk":
        return qk, qk
    return qk, _one("model.v", model.v, model.heads, model.d, rng, source, digests or {})


def ffn(model, rng: np.random.Generator, source: Path | None = None,
        digests: dict | None = None):
    """W: [d, d] (v_i += W x_i), or None."""
    w = _one("model.ffn", model.ffn, 1, model.d, rng, source, digests or {})
    return None if w is None else w.reshape(model.d, model.d)
