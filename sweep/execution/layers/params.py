"""The parameters of a layer model: one Block per layer, drawn, read from `.npy` files or taken
from a weights folder (sweep.config.weights), with `model.components` switched off.

Per layer l and head h, with y the tokens the attention reads ([n, d]):
    s_ij = beta_lh (<y_i, M_h y_j> + <u_h, y_j>),  A = softmax_j(s),
    A(y)_i = combine_h sum_j A_ij V_h y_j + b_v      (combine: mean over heads, or sum)
    F(y) = W y (linear)  or  W_2 GELU(W_1 y + b_1) + b_2 (mlp)
A BERT layer is exactly this with M_h = W_q,h^T W_k,h / sqrt(d_h), u_h = W_k,h^T b_q,h /
sqrt(d_h) (the other bias terms are constant along a row and cancel in softmax), V_h =
W_O,h W_v,h, b_v = W_O b_v + b_O (softmax rows sum to 1) and combine = sum.
Randomness comes from `rng_for(**parts)` (sweep.execution.simulate seeds it by the job's seed).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from sweep.config import weights
from sweep.config.schema import parse_components
from sweep.execution import matrices


@dataclass(frozen=True)
class Ffn:
    """F(y) = y W^T (linear; w None: the identity) or GELU(y W1^T + b1) W2^T + b2 (mlp:
    w = W1 [m, d], b = b1 [m], w2 = W2 [d, m], b2 [d]; a bias None is zero)."""

    w: np.ndarray | None
    b: np.ndarray | None = None
    w2: np.ndarray | None = None
    b2: np.ndarray | None = None


@dataclass(frozen=True)
class Block:
    """One layer. Matrices None are the identity, vectors None are zero (biases) or one
    (gains); step_ffn is the flows' in-step term v_i += W x_i (norm: sphere only)."""

    betas: np.ndarray                  # [h] effective inverse temperatures
    qk: np.ndarray | None = None       # [h, d, d] score matrices M_h
    qk_bias: np.ndarray | None = None  # [h, d] u_h
    v: np.ndarray | None = None        # [h, d, d] value(-output) matrices V_h
    v_bias: np.ndarray | None = None   # [d]
    combine: str = "mean"
    ln1: tuple = (None, None)          # (gain, bias) [d] of the attention sublayer's N
    ln2: tuple = (None, None)          # (gain, bias) [d] of the FFN sublayer's N
    ln_eps: float = weights.LN_EPS
    step_ffn: np.ndarray | None = None
    ffn: Ffn | None = None


def layer_betas(model) -> np.ndarray:
    """[layers, heads]: head_beta, else layer_beta, else beta, times the beta_scale factor."""
    f, shape = model.beta_factor, (model.layers, model.heads)
    if model.head_beta is not None:
        return np.broadcast_to(np.array(model.head_beta) * f, shape).copy()
    if model.layer_beta is not None:
        return np.broadcast_to((np.array(model.layer_beta) * f)[:, None], shape).copy()
    return np.full(shape, model.beta * f)


def blocks(job, rng_for) -> tuple[Block, ...]:
    """Every layer's Block, components switched off. rng_for(**parts) -> Generator."""
    m = job.model
    betas = layer_betas(m)
    if m.weights is not None:
        made = folder_blocks(m, job.source, betas)
    else:
        made = [drawn_block(m, layer, betas[layer - 1], rng_for, job.source, job.digests)
                for layer in range(1, m.layers + 1)]
    off = parse_components(m.components)
    return tuple(switch_off(b, off, m.d) for b in made)


def _spec(spec, layer: int) -> str:
    return spec[layer - 1] if isinstance(spec, tuple) else spec


def _layer_digests(m, layer: int, digests: dict) -> dict:
    """The content digests a job holds for layer `layer`'s files, under matrices' keys
    (a list of specs is digested per entry: model.qk[0], ...)."""
    return {key: digests.get(f"{key}[{layer - 1}]" if isinstance(getattr(m, key[6:]), tuple)
                             else key) for key in ("model.qk", "model.v", "model.ffn")}


def drawn_block(m, layer: int, betas: np.ndarray, rng_for, source, digests=None) -> Block:
    """Layer `layer` (1-based) from the qk, v and ffn specs; each layer draws its own.
    digests: the job's (sweep.config.grid.Job.digests), which every file read must match."""
    qk, v = _spec(m.qk, layer), _spec(m.v, layer)
    mine = _layer_digests(m, layer, digests or {})
    mats = matrices.attention(replace(m, qk=qk, v=v),
                              rng_for(d=m.d, heads=m.heads, qk=qk, v=v, layer=layer), source,
                              mine)
    rng = rng_for(d=m.d, ffn=m.ffn, ffn_width=m.ffn_width, layer=layer)
    step_ffn, ffn = None, None
    if m.ffn == "linear":
        ffn = Ffn(matrices.gaussian(1, m.d, rng)[0])
    elif m.ffn == "mlp":
        ffn = random_mlp(m.d, m.ffn_width or 4 * m.d, rng)
    elif m.ffn != "none":
        step_ffn = matrices.ffn(m, rng, source, mine)
    return Block(betas, qk=mats[0], v=mats[1], combine=m.head_combine, step_ffn=step_ffn,
                 ffn=ffn)


def random_mlp(d: int, width: int, rng: np.random.Generator) -> Ffn:
    """W1: [m, d] entries N(0, 1/d), W2: [d, m] entries N(0, 1/m), zero biases: each map
    keeps the scale of its input."""
    w1 = rng.standard_normal((width, d)) / np.sqrt(d)
    return Ffn(w1, None, rng.standard_normal((d, width)) / np.sqrt(width))


def folder_blocks(m, source, betas: np.ndarray) -> list[Block]:
    index, layers = weights.read_weights(m, source)
    eps = float(index.meta.get("ln_eps", weights.LN_EPS))
    return [Block(b, qk=a.get("qk"), qk_bias=a.get("qk_bias"), v=a.get("v"),
                  v_bias=a.get("v_bias"), combine=m.head_combine,
                  ln1=(a.get("ln1_gain"), a.get("ln1_bias")),
                  ln2=(a.get("ln2_gain"), a.get("ln2_bias")), ln_eps=eps,
                  ffn=_folder_ffn(m.ffn, a))
            for b, a in zip(betas, layers)]


def _folder_ffn(kind: str, a: dict) -> Ffn | None:
    if kind == "linear":
        return Ffn(a["ffn_w"])
    if kind == "mlp":
        return Ffn(a["ffn_w1"], a.get("ffn_b1"), a["ffn_w2"], a.get("ffn_b2"))
    return None


def switch_off(b: Block, off: frozenset, d: int) -> Block:
    """The Block with the components named in `off` (config.COMPONENTS) switched off."""
    if "no_ffn" in off:
        b = replace(b, ffn=None, step_ffn=None)
    if "identity_ffn" in off:
        b = replace(b, ffn=None if b.ffn is None else Ffn(None),
                    step_ffn=None if b.step_ffn is None else np.eye(d))
    if "v_identity" in off:
        b = replace(b, v=None, v_bias=None, combine="mean")
    if "no_ln_gain" in off:
        b = replace(b, ln1=(None, b.ln1[1]), ln2=(None, b.ln2[1]))
    return b
