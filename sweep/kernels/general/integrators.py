"""One time step of the dynamics dx/dt = f(x) = P_x(v(x)), then renormalisation onto the sphere.

euler: x <- (x + dt P_x(v)) / |.|   projected Euler; first order
layer: x <- (x + dt v) / |.|        the attention output added to the residual stream as it is,
                                    then normalised: one post-LN transformer layer (arXiv
                                    2312.10794's reference code); first order, and for unit x
                                    a projected step of size dt / (1 + dt <x, v>)
rk4:   classical RK4 on f in R^{n d}, renormalised after the step
With noise D > 0 (euler or layer), Euler-Maruyama: the step gains sqrt(2 D dt) P_x(xi)
(noise.py). The sphere is invariant (and attracting) for the ambient field f, so RK4 keeps
fourth order. docs/integrators.md compares the three.
"""

from sweep.kernels._jit import jit
from sweep.kernels.codes import RK4
from sweep.kernels.general.attention import moving, velocity
from sweep.kernels.general.noise import add_noise
from sweep.kernels.sphere import axpy, normalize_rows, rk4_combine


@jit
def euler_step(x, dyn, method, dt, work, tick):
    """euler or layer: work: workspace.Work scratch; tick: the step number (indexes the
    noise)."""
    k = work.ws[0]
    velocity(x, dyn, method, k, work)
    if dyn.noise > 0.0:
        add_noise(x, k, dyn, dt, tick, work.xi)
    axpy(x, x, dt, k)
    normalize_rows(moving(x, dyn))


@jit
def rk4_step(x, dyn, method, dt, work):
    """Deterministic only: configs refuse noise with rk4."""
    ws = work.ws
    k1, k2, k3, k4, y = ws[0], ws[1], ws[2], ws[3], ws[4]
    velocity(x, dyn, method, k1, work)
    axpy(y, x, 0.5 * dt, k1)
    velocity(y, dyn, method, k2, work)
    axpy(y, x, 0.5 * dt, k2)
    velocity(y, dyn, method, k3, work)
    axpy(y, x, dt, k3)
    velocity(y, dyn, method, k4, work)
    rk4_combine(x, dt, k1, k2, k3, k4)
    normalize_rows(moving(x, dyn))


@jit
def step(x, dyn, method, dt, work, tick):
    if method == RK4:
        rk4_step(x, dyn, method, dt, work)
    else:
        euler_step(x, dyn, method, dt, work, tick)
