"""The general path's layout for the methods (kernels/methods.py): x: [n, d] in its dtype.

euler: x <- (x + dt P_x(v)) / |.|   projected Euler; first order
layer: x <- (x + dt v) / |.|        the attention output added to the residual stream as it is,
                                    then normalised: one post-LN transformer layer (arXiv
                                    2312.10794's reference code); first order, and for unit x
                                    a projected step of size dt / (1 + dt <x, v>)
rk4:   classical RK4 on f in R^{n d}, renormalised after the step
With noise D > 0 (euler or layer), Euler-Maruyama: the step gains sqrt(2 D dt) P_x(xi)
(noise.py). Leaders (a leaders:L mask) are never renormalised, so they stay where they began.
"""

from typing import NamedTuple

import numpy as np

from sweep.kernels import methods
from sweep.kernels.general.attention import moving
from sweep.kernels.general.attention import velocity as attention_velocity
from sweep.kernels.general.model import Dynamics
from sweep.kernels.general.noise import add_noise
from sweep.kernels.general.workspace import Work
from sweep.kernels.sphere import combine_dt, normalize_rows, shift_dt
from sweep.numerics._jit import jit, jit_inline


class Sphere(NamedTuple):
    """One system x: [n, d] under the model dyn; ws: the stages (work.ws)."""

    dyn: Dynamics
    work: Work
    method: int
    dt: float
    ws: np.ndarray


@jit_inline
def _velocity(lay, x, k, stage):
    attention_velocity(x, lay.dyn, lay.method, k, lay.work)


@jit_inline
def _diffuse(lay, x, k, tick):
    if lay.dyn.noise > 0.0:
        add_noise(x, k, lay.dyn, lay.dt, tick, lay.work.xi)


@jit_inline
def _normalise(lay, x):
    normalize_rows(moving(x, lay.dyn))


# Inlined into the methods (kernels/methods.py), which are inlined into step: what each does
# is a call of the kernel named in it, as when step was written out here.
methods.implement(Sphere, velocity=_velocity, diffuse=_diffuse, shift=shift_dt,
                  rk4_combine=combine_dt, normalise=_normalise)


@jit
def step(x, dyn, method, dt, work, tick):
    """One step of x: [n, d] in place (methods.step); work: workspace.Work scratch; tick: the
    step number (indexes the noise)."""
    methods.step(Sphere(dyn, work, method, dt, work.ws), x, tick)
