"""The general path's layout for the methods (kernels/methods.py): x: [n, d] in its dtype.

euler: x <- (x + dt P_x(v)) / |.|   projected Euler; first order
layer: x <- (x + dt v) / |.|        the attention output added to the residual stream as it is,
                                    then normalised: one post-LN transformer layer (arXiv
                                    2312.10794's reference code); first order, and for unit x
                                    a projected step of size dt / (1 + dt <x, v>)
rk4:   classical RK4 on f in R^{n d}, renormalised after the step
With noise D > 0 (euler or layer), Euler-Maruyama: the step gains sqrt(2 D dt) P_x(xi)
(noise.py). Leaders (a leaders:L mask) are never renormalised, so they stay where they began.

Euclidean space (model.space: euclidean, docs/models.md): dx_i/dt = v_i in R^d, no projection
and no normalisation. x grows like exp(c t) and exp(beta <x_i, x_j>) would overflow, so the
state is y = exp(-c t) x (c = Dynamics.rate; for V = I and c = 1 the rescaled tokens
z = exp(-t V) x of arXiv 2305.05465) and the field dy_i/dt = v_i(beta_h exp(2 c t)) - c y_i:
the attention of x itself, exactly, at the stage's own time (step start t + 0, dt/2 or dt).
"""

from typing import NamedTuple

import numpy as np

from sweep.kernels import methods
from sweep.kernels.codes import EUCLIDEAN, HEUN
from sweep.kernels.general.attention import moving
from sweep.kernels.general.attention import velocity as attention_velocity
from sweep.kernels.general.model import Dynamics
from sweep.kernels.general.noise import add_noise
from sweep.kernels.general.workspace import Work
from sweep.kernels.sphere import combine_dt, normalize_rows, shift_dt
from sweep.numerics._jit import jit, jit_inline


class Sphere(NamedTuple):
    """One system x: [n, d] under the model dyn; ws: the stages (work.ws); t: the time at
    the step's start (euclidean space's attention depends on it)."""

    dyn: Dynamics
    work: Work
    method: int
    dt: float
    ws: np.ndarray
    t: float


@jit_inline
def gain(dyn, t):
    """The factor on every beta at time t: exp(2 c t) in euclidean space, 1 on the sphere."""
    return np.exp(2.0 * dyn.rate * t) if dyn.space == EUCLIDEAN else 1.0


@jit_inline
def _velocity(lay, x, k, stage):
    late = 0.0 if stage == 0 else (1.0 if stage == 3 or lay.method == HEUN else 0.5)
    attention_velocity(x, lay.dyn, lay.method, k, lay.work, gain(lay.dyn, lay.t + late * lay.dt))


@jit_inline
def _diffuse(lay, x, k, tick):
    if lay.dyn.noise > 0.0:
        add_noise(x, k, lay.dyn, lay.dt, tick, lay.work.xi)


@jit_inline
def _normalise(lay, x):
    if lay.dyn.space != EUCLIDEAN:
        normalize_rows(moving(x, lay.dyn))


# Inlined into the methods (kernels/methods.py), which are inlined into step: what each does
# is a call of the kernel named in it, as when step was written out here.
methods.implement(Sphere, velocity=_velocity, diffuse=_diffuse, shift=shift_dt,
                  rk4_combine=combine_dt, normalise=_normalise)


@jit
def step(x, dyn, method, dt, work, tick):
    """One step of x: [n, d] in place (methods.step); work: workspace.Work scratch; tick: the
    step number (indexes the noise, and times euclidean space's attention: t = tick dt)."""
    methods.step(Sphere(dyn, work, method, dt, work.ws, tick * dt), x, tick)
