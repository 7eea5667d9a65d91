"""A layer model run end to end: h_0 (the start) through L blocks, observed at every layer.

`norm: sphere` layers are the flows' own compiled step, x <- normalize(x + alpha v) with v the
unprojected attention output (kernels/general/integrators.py, method layer), called once per
layer with that layer's Dynamics, so L identical layers with alpha = dt are L steps of the
flow bit for bit (where the flow would take a fast kernel, such a model runs as the flow
itself: sweep.execution.layers.flow); an FFN sublayer, if any, follows in NumPy as
h <- unit(h + alpha F(h)).
`norm: post | pre | peri` blocks are NumPy (sweep.execution.layers.transformer).

Layer l (0 = the input, l = after block l) is observed by the flows' observables kernel on the
unit tokens h_i / |h_i|, under the particle model of the block that reads it next (block
l + 1; block L for the output): its score matrices M_h, value matrices and betas, so
`energy` and `attention_entropy` are those of that block's attention on the sphere (biases,
LayerNorm and the FFN play no part in them). Beside them, `token_norm` = mean_i |h_i|.
"""

from __future__ import annotations

import numpy as np

from sweep.execution.layers import transformer
from sweep.execution.layers.params import Block
from sweep.kernels.codes import LAYER, N_OBS, NONFINITE, OK, STOPPED
from sweep.kernels.general.integrators import step
from sweep.kernels.general.model import Dynamics, dynamics
from sweep.kernels.general.observables import observe
from sweep.kernels.general.workspace import workspace

N_COLUMNS = N_OBS + 1  # the observables, then token_norm


def block_dynamics(model, b: Block, noise_key: int) -> Dynamics:
    """The compiled particle model of one block (its heads' betas, M_h, V_h, in-step W)."""
    return dynamics(model.attention, float(b.betas[0]), heads=model.heads, head_beta=b.betas,
                    qk=b.qk, v=b.v, mask=model.mask, noise=model.noise, noise_key=noise_key,
                    ffn=b.step_ffn)


def record(h: np.ndarray, dyn: Dynamics, eps: float, out: np.ndarray, on_sphere: bool) -> None:
    """out[:N_OBS] = the observables of unit(h), out[N_OBS] = token_norm; h: [n, d]."""
    x = h if on_sphere else np.ascontiguousarray(transformer.unit(h))
    observe(x, dyn, eps, out[:N_OBS], workspace(x, dyn))
    out[N_OBS] = np.linalg.norm(h, axis=1).mean()


def advance(h: np.ndarray, b: Block, model, dyn: Dynamics, layer: int) -> np.ndarray:
    """h after block `layer` (1-based); a sphere layer steps h in place. A blow-up is a
    result (status 1, NONFINITE), so NumPy's overflow warnings are not raised."""
    if model.norm != "sphere":
        with np.errstate(all="ignore"):
            return transformer.block(h, b, model)
    step(h, dyn, LAYER, float(model.alpha), workspace(h, dyn), layer - 1)
    if b.ffn is None:
        return h
    with np.errstate(all="ignore"):
        ffn = transformer.sublayer(h, lambda y: transformer.feed_forward(y, b.ffn), b.ln2, b,
                                   model)
    return np.ascontiguousarray(ffn, dtype=h.dtype)


def run(model, h0: np.ndarray, blocks: tuple[Block, ...], noise_key: int, eps: float,
        stop: np.ndarray, trajectory: bool = False, dtype: str = "float64"):
    """(status, obs [L + 1, N_COLUMNS], h [L + 1, n, d] or [1, n, d] (the last layer reached)).

    status: OK, NONFINITE (a layer was not finite: it and later rows stay NaN) or STOPPED
    (stop[0] set, polled before each layer). dtype: the state's (float32 for sphere layers
    only, as a flow's; observables are float64)."""
    sphere = model.norm == "sphere"
    h = np.array(h0, dtype=np.dtype(dtype), order="C")
    obs = np.full((len(blocks) + 1, N_COLUMNS), np.nan)
    kept = np.full((len(blocks) + 1 if trajectory else 1,) + h.shape, np.nan, dtype=h.dtype)
    for layer in range(len(blocks) + 1):
        if layer > 0:
            if stop[0] != 0:
                return STOPPED, obs, kept
            b = blocks[layer - 1]
            h = advance(h, b, model, block_dynamics(model, b, noise_key) if sphere else None,
                        layer)
        if not np.isfinite(h).all():
            return NONFINITE, obs, kept
        reader = blocks[min(layer, len(blocks) - 1)]
        record(h, block_dynamics(model, reader, noise_key), eps, obs[layer], sphere)
        kept[layer if trajectory else 0] = h
    return OK, obs, kept


def warm_up(dtype: str = "float64") -> None:
    """Compile (or load) the step and observables a sphere layer calls from Python."""
    from types import SimpleNamespace

    model = SimpleNamespace(norm="sphere", attention="softmax", heads=1, mask="dense",
                            noise=0.0, alpha=0.1)
    run(model, np.eye(2), (Block(np.ones(1)),), 0, 1e-3, np.zeros(1, dtype=np.int64),
        dtype=dtype)
