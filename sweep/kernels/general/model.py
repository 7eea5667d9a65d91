"""The parameters of the velocity field, as one tuple Numba can type.

Variants are integer codes chosen in Python; kernels branch on them once per row, never
inside the loop over partners j, so one compiled kernel per dtype serves every model: every
field has the same Numba type whatever the model (arrays are always float64 and of fixed
rank; an unused matrix is an empty array), which keeps the specialisations at one per dtype.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from sweep.kernels.codes import ATTENTION_CODES, SPACE_CODES, parse_mask


class Dynamics(NamedTuple):
    """The model of dx_i/dt = P_{x_i}(v_i) (+ noise), docs/theory.md, "Dynamics".

    attention: code above; beta: the config's beta (kept for callers that only need one);
    betas: [h] per-head inverse temperatures; identity: every Q_h^T K_h and V_h is the
    identity (the kernels then skip the matrix products and qk, v are [h, 0, 0]);
    qk: [h, d, d] score matrices M_h = Q_h^T K_h, so s_ij = beta_h <x_i, M_h x_j>;
    v: [h, d, d] value matrices; mask, mask_param: code above and its W, K, G or L;
    noise: diffusion D >= 0; noise_key: seed of the counter-based noise stream;
    ffn: [d, d] matrix W (v_i += W x_i) or [0, 0] for none;
    space: SPHERE or EUCLIDEAN; rate: c of the euclidean state y = exp(-c t) x (0 on the
    sphere): dy_i/dt = v_i(y; beta_h exp(2 c t)) - c y_i (integrators.py).
    """

    attention: int
    beta: float
    betas: np.ndarray
    identity: bool
    qk: np.ndarray
    v: np.ndarray
    mask: int
    mask_param: int
    noise: float
    noise_key: int
    ffn: np.ndarray
    space: int
    rate: float


def _heads(m, heads: int) -> np.ndarray:
    """A fresh, writable C array: a read-only input would be another Numba type."""
    m = np.asarray(m, dtype=np.float64)
    return np.array(np.broadcast_to(m, (heads,) + m.shape[-2:]), order="C")


def dynamics(attention: str, beta: float, *, heads: int = 1, head_beta=None, qk=None, v=None,
             mask: str = "dense", noise: float = 0.0, noise_key: int = 0,
             ffn=None, space: str = "sphere", rate: float = 0.0) -> Dynamics:
    """Build the tuple. qk, v: None (identity), [d, d] (every head) or [h, d, d];
    ffn: None or [d, d]. head_beta: None (every head uses beta) or h values; space, rate:
    see Dynamics."""
    betas = np.full(heads, float(beta)) if head_beta is None else np.array(head_beta, float)
    if betas.shape != (heads,):
        raise ValueError(f"head_beta has {betas.size} values for {heads} head(s)")
    identity = qk is None and v is None
    if identity:
        qk = v = np.zeros((heads, 0, 0))
    else:
        d = np.shape(qk if qk is not None else v)[-1]
        qk = _heads(np.eye(d) if qk is None else qk, heads)
        v = _heads(np.eye(d) if v is None else v, heads)
    code, param = parse_mask(mask)
    w = np.zeros((0, 0)) if ffn is None else np.array(ffn, dtype=np.float64, order="C")
    return Dynamics(ATTENTION_CODES[attention], float(beta), betas, identity, qk, v, code,
                    param, float(noise), int(noise_key), w, SPACE_CODES[space], float(rate))
