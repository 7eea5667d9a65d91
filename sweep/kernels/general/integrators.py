"""One time step of the projected dynamics, then renormalisation onto the sphere.

euler: x <- (x + dt f(x)) / |.|                 (one post-LayerNorm layer; first order);
       with noise D > 0, Euler-Maruyama: f gains sqrt(2 D / dt) P_x(xi) (kernels/noise.py)
rk4:   classical RK4 on f(x) = P_x(v(x)) in R^{n d}, renormalised after the step
The sphere is invariant (and attracting) for the ambient field, so RK4 keeps fourth order.
"""

from sweep.kernels._jit import jit
from sweep.kernels.codes import EULER
from sweep.kernels.general.attention import moving, velocity
from sweep.kernels.general.noise import add_noise
from sweep.kernels.sphere import axpy, normalize_rows


@jit
def euler_step(x, dyn, dt, work, tick):
    """work: workspace.Work scratch; tick: the step number (indexes the noise)."""
    k = work.ws[0]
    velocity(x, dyn, k, work)
    if dyn.noise > 0.0:
        add_noise(x, k, dyn, dt, tick, work.xi)
    axpy(x, x, dt, k)
    normalize_rows(moving(x, dyn))


@jit
def rk4_step(x, dyn, dt, work):
    """Deterministic only: configs refuse noise with rk4."""
    ws = work.ws
    k1, k2, k3, k4, y = ws[0], ws[1], ws[2], ws[3], ws[4]
    velocity(x, dyn, k1, work)
    axpy(y, x, 0.5 * dt, k1)
    velocity(y, dyn, k2, work)
    axpy(y, x, 0.5 * dt, k2)
    velocity(y, dyn, k3, work)
    axpy(y, x, dt, k3)
    velocity(y, dyn, k4, work)
    h = dt / 6.0
    n, d = x.shape
    for i in range(n):
        for k in range(d):
            x[i, k] += h * (k1[i, k] + 2.0 * k2[i, k] + 2.0 * k3[i, k] + k4[i, k])
    normalize_rows(moving(x, dyn))


@jit
def step(x, dyn, method, dt, work, tick):
    if method == EULER:
        euler_step(x, dyn, dt, work, tick)
    else:
        rk4_step(x, dyn, dt, work)
