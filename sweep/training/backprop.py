"""The noisy layer model as a differentiable map of its FFN matrices, and its hand-written
backward pass (NumPy, float64, batched over samples).

Block l (docs/layers.md, `norm: sphere`; the noisy mean-field step of arXiv 2512.01868) maps
tokens x [B, n, d] on the sphere to x' = z / |z| with
    z_i = x_i + alpha (a_i + W_l x_i) + sqrt(2 D alpha) P_{x_i}(xi_i),
    a_i = (1/h) sum_h sum_j A^h_ij V_h x_j,   A^h_ij = softmax_j(beta_h <x_i, M_h x_j>),
P_x(xi) = xi - <x, xi> x and xi [B, n, d] a fixed standard Gaussian draw (common random
numbers). With fixed features (`ffn: mlp`: phi(y) = GELU(W1 y), W1 [m, d] drawn) the FFN is
the sublayer after that step instead: y = z / |z| without the W_l term, then
    x' = unit(y + alpha W_l phi(y)),   W_l [d, m],
so F(y) = sum_k theta_lk phi_k(y) with theta_lk the columns of W_l. The attention (M_h, V_h,
beta_h) and the features are fixed; W_l is trained. The objective is the task loss of x^L
plus lambda sum_l |W_l|_F^2 (the task's loss and its gradient on x^L: sweep.training.tasks).
The backward pass is the chain rule through each step in
reverse: normalisation ((g - <g, x'> x') / |z|), FFN, noise projection and attention
(softmax Jacobian A (g - <g, A>)), shapes as in the forward pass.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from sweep.execution.layers.transformer import gelu
from sweep.training.tasks import alignment

_erf = np.frompyfunc(math.erf, 1, 1)


@dataclass(frozen=True)
class Fixed:
    """One block's fixed parts: betas [h]; qk, v [h, d, d] or None (the identity); features
    W1 [m, d] of phi(y) = GELU(W1 y), or None (the FFN is the in-step W_l x)."""

    betas: np.ndarray
    qk: np.ndarray | None
    v: np.ndarray | None
    features: np.ndarray | None = None


def gelu_slope(u: np.ndarray) -> np.ndarray:
    """d GELU / du = Phi(u) + u exp(-u^2 / 2) / sqrt(2 pi)."""
    phi = 0.5 * (1.0 + _erf(u / math.sqrt(2.0)).astype(np.float64))
    return phi + u * np.exp(-0.5 * u * u) / math.sqrt(2.0 * math.pi)


def _unit(z: np.ndarray):
    r = np.linalg.norm(z, axis=-1, keepdims=True)
    return z / r, r


def _unit_back(g: np.ndarray, out: np.ndarray, r: np.ndarray) -> np.ndarray:
    """The gradient on z of out = z / r given g on out."""
    return (g - np.sum(g * out, -1, keepdims=True) * out) / r


def _rows(x: np.ndarray, mats: np.ndarray | None) -> np.ndarray:
    """[B, h or 1, n, d]: rows M_h x_j (x itself when mats is None)."""
    return x[:, None] if mats is None else np.einsum("bjk,hmk->bhjm", x, mats)


def _rows_back(g: np.ndarray, mats: np.ndarray | None) -> np.ndarray:
    """[B, n, d]: the gradient on x of rows M_h x_j, given g on them [B, h or 1, n, d]."""
    return g.sum(axis=1) if mats is None else np.einsum("bhjm,hmk->bjk", g, mats)


def attend(x: np.ndarray, att: Fixed):
    """(a [B, n, d], tape): the heads' mean of sum_j A^h_ij V_h x_j."""
    keys, values = _rows(x, att.qk), _rows(x, att.v)
    s = att.betas[:, None, None] * (x[:, None] @ keys.transpose(0, 1, 3, 2))
    w = np.exp(s - s.max(axis=-1, keepdims=True))
    w /= w.sum(axis=-1, keepdims=True)
    return (w @ values).mean(axis=1), (keys, values, w)


def attend_back(g: np.ndarray, x: np.ndarray, att: Fixed, tape) -> np.ndarray:
    """[B, n, d]: the gradient on x given g on a [B, n, d]."""
    keys, values, w = tape
    gh = g[:, None] / len(att.betas)                       # on each head's output
    gw = gh @ values.transpose(0, 1, 3, 2)                 # [B, h, n, n]
    gx = _rows_back(w.transpose(0, 1, 3, 2) @ gh, att.v)
    gs = w * (gw - np.sum(gw * w, axis=-1, keepdims=True)) * att.betas[:, None, None]
    gx = gx + (gs @ keys).sum(axis=1)                       # through x_i in <x_i, M x_j>
    return gx + _rows_back(gs.transpose(0, 1, 3, 2) @ x[:, None], att.qk)


def step(x, att: Fixed, w, alpha: float, noise: float, xi):
    """(x' [B, n, d], tape) of one block; noise: D."""
    a, tape = attend(x, att)
    z = x + alpha * (a if att.features is not None else a + x @ w.T)
    if noise > 0:
        z = z + np.sqrt(2.0 * noise * alpha) * (xi - np.sum(x * xi, -1, keepdims=True) * x)
    y, r = _unit(z)
    if att.features is None:
        return y, (x, tape, r, y, None)
    u = y @ att.features.T
    out, r2 = _unit(y + alpha * gelu(u) @ w.T)
    return out, (x, tape, r, y, (u, r2, out))


def step_back(g, att: Fixed, w, alpha: float, noise: float, xi, tape):
    """(gradient on x, gradient on W) given g on x'."""
    x, att_tape, r, y, sub = tape
    if sub is None:
        gz = _unit_back(g, y, r)
        gw, gx = alpha * np.einsum("bik,bim->km", gz, x), alpha * (gz @ w)
    else:
        u, r2, out = sub
        gs = _unit_back(g, out, r2)
        gw = alpha * np.einsum("bik,bim->km", gs, gelu(u))
        gz = _unit_back(gs + alpha * ((gs @ w) * gelu_slope(u)) @ att.features, y, r)
        gx = 0.0
    gx = gx + gz + attend_back(alpha * gz, x, att, att_tape)
    if noise > 0:
        c = np.sqrt(2.0 * noise * alpha)
        gx -= c * (np.sum(gz * x, -1, keepdims=True) * xi + np.sum(x * xi, -1, keepdims=True)
                   * gz)
    return gx, gw


def forward(x0, atts, ws, alpha: float, noise: float, xi):
    """(x^L [B, n, d], tapes): x0 [B, n, d] through every block; ws [L, d, d] (or
    [L, d, m] with features); xi [B, L, n, d]."""
    x, tapes = x0, []
    for layer, (att, w) in enumerate(zip(atts, ws)):
        x, tape = step(x, att, w, alpha, noise, xi[:, layer])
        tapes.append(tape)
    return x, tapes


def objective(ws, x0, xi, t, atts, alpha: float, noise: float, lam: float, reg=None):
    """(loss, gradient like ws): the task loss of x^L + lam sum_l |W_l|^2 (+ sum_{l < L}
    reg(x^l), reg a function x -> (penalty, gradient on x): tasks.regularizer). t: the
    targets [B, n, d] of a per-token task (mean_i (1 - <x_i^L, t_i>)), or a function x^L ->
    (loss, gradient on x^L) (tasks.readout: any task)."""
    x, tapes = forward(x0, atts, ws, alpha, noise, xi)
    total, g = t(x) if callable(t) else alignment(x, t)
    grads = np.empty_like(ws)
    for layer in reversed(range(len(ws))):
        if reg is not None and layer + 1 < len(ws):  # x^{layer+1}: the input of the next
            value, gx = reg(tapes[layer + 1][0])
            total, g = total + value, g + gx
        g, grads[layer] = step_back(g, atts[layer], ws[layer], alpha, noise,
                                    xi[:, layer], tapes[layer])
    return total + float(lam * np.sum(ws * ws)), grads + 2.0 * lam * ws
