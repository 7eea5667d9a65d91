"""The whole time integration of one system in one compiled call.

Observables are recorded at save points 0, stride, 2 stride, ... steps, inside compiled code,
so a job is one kernel call whatever its length.
"""

from sweep.kernels._jit import jit
from sweep.kernels.codes import NONFINITE, OK, STOPPED
from sweep.kernels.general.integrators import step
from sweep.kernels.general.observables import observe
from sweep.kernels.general.workspace import workspace
from sweep.kernels.sphere import all_finite


@jit
def integrate(x, dyn, method, dt, save_stride, eps, obs, traj, stop):
    """Advance x: [n, d] in place, recording observables at each of obs.shape[0] saves.

    obs: [n_saves, len(OBSERVABLES)] float64, filled row by row; traj: [n_saves, n, d]
    positions at each save, or [0, n, d] for none; stop: [1] int, polled at every step so
    another thread can abandon the run. Returns (status, saves recorded): status OK,
    NONFINITE (the state blew up; later rows are left untouched) or STOPPED.
    """
    work = workspace(x, dyn)  # every scratch array, once: the step loop allocates nothing
    for s in range(obs.shape[0]):
        if s > 0:
            for r in range(save_stride):
                if stop[0] != 0:  # per step, not per save: long save intervals still stop fast
                    return STOPPED, s
                step(x, dyn, method, dt, work, (s - 1) * save_stride + r)
        if not all_finite(x):
            return NONFINITE, s
        observe(x, dyn, eps, obs[s], work)
        if traj.shape[0] > 0:
            traj[s] = x
        if stop[0] != 0:
            return STOPPED, s + 1
    return OK, obs.shape[0]
