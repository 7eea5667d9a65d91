"""The whole time integration of one system in one compiled call.

Observables are recorded at save points 0, stride, 2 stride, ... steps, inside compiled code,
so a job is one kernel call whatever its length (the loop: kernels/timeloop.py).
"""

from typing import NamedTuple

from sweep.kernels.general.integrators import step
from sweep.kernels.general.model import Dynamics
from sweep.kernels.general.observables import observe_space
from sweep.kernels.general.workspace import Work, workspace
from sweep.kernels.timeloop import implement
from sweep.numerics._jit import jit


class System(NamedTuple):
    """One system of the general path: the model, its scratch and how it is stepped."""

    dyn: Dynamics
    work: Work
    method: int
    dt: float
    eps: float


@jit
def _advance(system, x, tick, steps, stop):
    dyn, work, method, dt = system.dyn, system.work, system.method, system.dt
    for r in range(steps):
        if stop[0] != 0:
            return r
        step(x, dyn, method, dt, work, tick + r)
    return steps


@jit
def _record(system, x, obs, s):
    observe_space(x, system.dyn, system.eps, obs[s], system.work)


run = implement(System, _advance, _record)


@jit
def integrate(x, dyn, method, dt, save_stride, eps, obs, traj, stop):
    """Advance x: [n, d] in place, recording observables at each of obs.shape[0] saves.

    obs: [n_saves, len(OBSERVABLES)] float64, filled row by row; traj: [n_saves, n, d]
    positions at each save, or [0, n, d] for none; stop: [1] int, polled at every step so
    another thread can abandon the run. Returns (status, saves recorded): status OK,
    NONFINITE (the state blew up; later rows are left untouched) or STOPPED.
    """
    work = workspace(x, dyn)  # every scratch array, once: the step loop allocates nothing
    return run(System(dyn, work, method, dt, eps), x, save_stride, obs, traj, stop)
