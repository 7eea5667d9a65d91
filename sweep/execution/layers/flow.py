"""When a layer model is a flow, and runs as one.

`norm: sphere` layers with one beta for every layer and no FFN term, whose attention is the
same in every layer (identity matrices, or one `.npy` file for all), are L steps
x <- normalize(x + alpha v) of `integrate.method: layer` with dt = alpha (docs/layers.md,
"Reductions"). sweep.execution.kernel gives such a model the flow's own kernel plan where the
flow would take a fast kernel (rows or blocked), and sweep.execution.simulate then runs the flow
itself, so that the two agree bit for bit on every path; elsewhere the sphere layers call
the general kernel's step once per layer (sweep.execution.layers.stack), which is the flow's step.
"""

from __future__ import annotations

from dataclasses import replace

from sweep.config.schema import RANDOM_MATRICES as _DRAWN  # each layer draws its own
from sweep.config.schema import parse_components


def as_flow(job):
    """The flow job equal to layer-model `job` (t_max = L alpha, save_every = dt = alpha), or
    None when its layers differ or are not the flow's step."""
    m = job.model
    same = (m.norm == "sphere" and m.layer_beta is None and m.ffn == "none"
            and not any(isinstance(s, tuple) or s in _DRAWN for s in (m.qk, m.v)))
    if not same:
        return None
    off = parse_components(m.components)  # here at most v_identity (the others are no-ops)
    v = "identity" if "v_identity" in off else m.v
    dt = float(m.alpha)
    integ = replace(job.integrate, method="layer", dt=dt, t_max=m.layers * dt, save_every=dt)
    return replace(job, model=replace(m, layers=None, v=v, components="full"), integrate=integ)
