"""Transformer blocks in NumPy float64: LayerNorm, softmax attention with biases, the FFN,
and the three placements of the normalisation N around each residual sublayer G:

    post:  h <- N(skip h + alpha G(h))            (BERT; Vaswani et al. 2017)
    pre:   h <- skip h + alpha G(N(h))            (GPT-2; tokens leave the sphere)
    peri:  h <- skip h + alpha N_out(G(N(h)))     (Peri-LN, Kim et al. 2025: the sublayer's
                                                  output normalised as well, N_out without gain
                                                  or bias)

N is LayerNorm, (h - mean) / sqrt(var + eps) * gain + bias over the features of each token,
or plain normalisation h / |h| (`model.norm_fn: unit`). A block is the attention sublayer then,
if the layer has one, the FFN sublayer, each with its own N (ln1, ln2). Why NumPy: these
blocks hold d x m matrices and LayerNorm statistics the compiled particle kernels do not
have, and at BERT sizes (d = 384, n ~ 300) BLAS products dominate; `norm: sphere` layers run
the kernels' own step instead (sweep.execution.layers.stack).
"""

from __future__ import annotations

import math

import numpy as np

from sweep.execution.layers.params import Block, Ffn

_erf = np.frompyfunc(math.erf, 1, 1)


def gelu(x: np.ndarray) -> np.ndarray:
    """x Phi(x), with the exact erf (BERT's `gelu`, not the tanh approximation)."""
    return 0.5 * x * (1.0 + _erf(x / math.sqrt(2.0)).astype(np.float64))


def layer_norm(x: np.ndarray, ln: tuple, eps: float) -> np.ndarray:
    """LayerNorm over the last axis; ln = (gain, bias), each [d] or None (1, 0)."""
    mu = x.mean(axis=-1, keepdims=True)
    var = ((x - mu) ** 2).mean(axis=-1, keepdims=True)
    y = (x - mu) / np.sqrt(var + eps)
    if ln[0] is not None:
        y = y * ln[0]
    return y if ln[1] is None else y + ln[1]


def unit(h: np.ndarray) -> np.ndarray:
    """[..., n, d] rows scaled onto the unit sphere."""
    return h / np.linalg.norm(h, axis=-1, keepdims=True)


def attention(y: np.ndarray, b: Block) -> np.ndarray:
    """[n, d]: combine_h sum_j A^h_ij V_h y_j + b_v for y: [n, d], with A^h the softmax over j
    of beta_h (<y_i, M_h y_j> + <u_h, y_j>), the row maximum subtracted first."""
    keys = y[None] if b.qk is None else y @ b.qk.transpose(0, 2, 1)  # rows M_h y_j
    s = y @ keys.transpose(0, 2, 1)                                  # [h or 1, n, n]
    if b.qk_bias is not None:
        s = s + (b.qk_bias @ y.T)[:, None, :]
    s = b.betas[:, None, None] * s
    w = np.exp(s - s.max(axis=-1, keepdims=True))
    w /= w.sum(axis=-1, keepdims=True)
    values = y[None] if b.v is None else y @ b.v.transpose(0, 2, 1)  # rows V_h y_j
    heads = w @ values                                               # [h, n, d]
    out = heads.sum(axis=0) if b.combine == "sum" else heads.mean(axis=0)
    return out if b.v_bias is None else out + b.v_bias


def feed_forward(y: np.ndarray, f: Ffn) -> np.ndarray:
    """F(y) for y: [n, d] (see Ffn)."""
    if f.w2 is None:
        return y if f.w is None else y @ f.w.T
    hidden = y @ f.w.T if f.b is None else y @ f.w.T + f.b
    out = gelu(hidden) @ f.w2.T
    return out if f.b2 is None else out + f.b2


def normalise(h: np.ndarray, ln: tuple, eps: float, norm_fn: str) -> np.ndarray:
    return layer_norm(h, ln, eps) if norm_fn == "layernorm" else unit(h)


def sublayer(h: np.ndarray, g, ln: tuple, b: Block, model) -> np.ndarray:
    """One residual sublayer h -> h' around g: [n, d] -> [n, d], N placed by model.norm."""
    def n(x, params=ln):
        return normalise(x, params, b.ln_eps, model.norm_fn)

    if model.norm == "post":
        return n(model.skip * h + model.alpha * g(h))
    if model.norm == "pre":
        return model.skip * h + model.alpha * g(n(h))
    if model.norm == "peri":
        return model.skip * h + model.alpha * n(g(n(h)), (None, None))
    return unit(h + model.alpha * g(h))  # sphere: the FFN sublayer after the kernels' step


def block(h: np.ndarray, b: Block, model) -> np.ndarray:
    """One layer (norm: post | pre | peri): attention sublayer, then the FFN's if any."""
    h = sublayer(h, lambda y: attention(y, b), b.ln1, b, model)
    if b.ffn is not None:
        h = sublayer(h, lambda y: feed_forward(y, b.ffn), b.ln2, b, model)
    return h
