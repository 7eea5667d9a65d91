"""The noisy layer model as a differentiable map of its FFN matrices, and its hand-written
backward pass (NumPy, float64, batched over samples).

Block l (docs/layers.md, `norm: sphere`; the noisy mean-field step of arXiv 2512.01868) maps
tokens x [B, n, d] on the sphere to x' = z / |z| with
    z_i = x_i + alpha (a_i + W_l x_i) + sqrt(2 D alpha) P_{x_i}(xi_i),
    a_i = (1/h) sum_h sum_j A^h_ij V_h x_j,   A^h_ij = softmax_j(beta_h <x_i, M_h x_j>),
P_x(xi) = xi - <x, xi> x and xi [B, n, d] a fixed standard Gaussian draw (common random
numbers). The attention (M_h, V_h, beta_h) is fixed; W_l [d, d] is the trained FFN. The
objective is the task loss of x^L plus lambda sum_l |W_l|_F^2. The backward pass is the
chain rule through each step in reverse: normalisation, noise projection, FFN and
attention (softmax Jacobian A (g - <g, A>)), shapes as in the forward pass.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Attention:
    """One block's fixed attention: betas [h]; qk, v [h, d, d] or None (the identity)."""

    betas: np.ndarray
    qk: np.ndarray | None
    v: np.ndarray | None


def _rows(x: np.ndarray, mats: np.ndarray | None) -> np.ndarray:
    """[B, h or 1, n, d]: rows M_h x_j (x itself when mats is None)."""
    return x[:, None] if mats is None else np.einsum("bjk,hmk->bhjm", x, mats)


def _rows_back(g: np.ndarray, mats: np.ndarray | None) -> np.ndarray:
    """[B, n, d]: the gradient on x of rows M_h x_j, given g on them [B, h or 1, n, d]."""
    return g.sum(axis=1) if mats is None else np.einsum("bhjm,hmk->bjk", g, mats)


def attend(x: np.ndarray, att: Attention):
    """(a [B, n, d], tape): the heads' mean of sum_j A^h_ij V_h x_j."""
    keys, values = _rows(x, att.qk), _rows(x, att.v)
    s = att.betas[:, None, None] * (x[:, None] @ keys.transpose(0, 1, 3, 2))
    w = np.exp(s - s.max(axis=-1, keepdims=True))
    w /= w.sum(axis=-1, keepdims=True)
    return (w @ values).mean(axis=1), (keys, values, w)


def attend_back(g: np.ndarray, x: np.ndarray, att: Attention, tape) -> np.ndarray:
    """[B, n, d]: the gradient on x given g on a [B, n, d]."""
    keys, values, w = tape
    gh = g[:, None] / len(att.betas)                       # on each head's output
    gw = gh @ values.transpose(0, 1, 3, 2)                 # [B, h, n, n]
    gx = _rows_back(w.transpose(0, 1, 3, 2) @ gh, att.v)
    gs = w * (gw - np.sum(gw * w, axis=-1, keepdims=True)) * att.betas[:, None, None]
    gx = gx + (gs @ keys).sum(axis=1)                       # through x_i in <x_i, M x_j>
    return gx + _rows_back(gs.transpose(0, 1, 3, 2) @ x[:, None], att.qk)


def step(x, att: Attention, w, alpha: float, noise: float, xi):
    """(x' [B, n, d], tape) of one block; noise: D."""
    a, tape = attend(x, att)
    z = x + alpha * (a + x @ w.T)
    if noise > 0:
        z = z + np.sqrt(2.0 * noise * alpha) * (xi - np.sum(x * xi, -1, keepdims=True) * x)
    r = np.linalg.norm(z, axis=-1, keepdims=True)
    return z / r, (x, tape, r, z / r)


def step_back(g, att: Attention, w, alpha: float, noise: float, xi, tape):
    """(gradient on x, gradient on W) given g on x'."""
    x, att_tape, r, out = tape
    gz = (g - np.sum(g * out, -1, keepdims=True) * out) / r
    gx = gz + alpha * (gz @ w) + attend_back(alpha * gz, x, att, att_tape)
    if noise > 0:
        c = np.sqrt(2.0 * noise * alpha)
        gx -= c * (np.sum(gz * x, -1, keepdims=True) * xi + np.sum(x * xi, -1, keepdims=True)
                   * gz)
    return gx, alpha * np.einsum("bik,bim->km", gz, x)


def forward(x0, atts, ws, alpha: float, noise: float, xi):
    """(x^L [B, n, d], tapes): x0 [B, n, d] through every block; ws [L, d, d];
    xi [B, L, n, d]."""
    x, tapes = x0, []
    for layer, (att, w) in enumerate(zip(atts, ws)):
        x, tape = step(x, att, w, alpha, noise, xi[:, layer])
        tapes.append(tape)
    return x, tapes


def objective(ws, x0, xi, t, atts, alpha: float, noise: float, lam: float):
    """(loss, gradient [L, d, d]): mean_i (1 - <x_i^L, t_i>) + lam sum_l |W_l|^2."""
    x, tapes = forward(x0, atts, ws, alpha, noise, xi)
    count = x.shape[0] * x.shape[1]
    loss = float(np.sum(1.0 - np.sum(x * t, axis=-1)) / count + lam * np.sum(ws * ws))
    g, grads = -t / count, np.empty_like(ws)
    for layer in reversed(range(len(ws))):
        g, grads[layer] = step_back(g, atts[layer], ws[layer], alpha, noise,
                                    xi[:, layer], tapes[layer])
    return loss, grads + 2.0 * lam * ws
