"""The time loop of every integration, written once for the four ways of stepping a system.

    save 0; then, before each further save s, save_stride steps (the stop flag is polled before
    each step, so a long save interval still stops fast; a stopped run returns STOPPED); at a
    save, a state that is not finite ends the run (NONFINITE), else its observables go to
    obs[s] (and x to traj[s] when traj has rows); a stop flag set by then ends the run after
    the save (STOPPED).

A path describes one system (its parameters and scratch) by an object of its own class and
registers with `implement` how to `advance` such a system through a save interval and how to
`record` a save; or, for a block of systems that end one by one (lanes.py), how to `save`
them all: each finite one recorded, each other one ended, whether any goes on. The compiled
paths (general/drive.py, rows.py, lanes.py) use NamedTuples, for which `run` compiles the
registered jitted functions in (it is inlined into each path's integrate, so no
specialisation is added). blocked.py, whose steps are Python calls into BLAS, runs the same
loop as Python (`run.py_func`), where `advance` and `save` call what was registered.
Why a save interval and not a step: a path unpacks its system once per call, and Numba
increfs every array it takes out of a tuple; per step, that is a large share of a small
system's step on the rows path and a sizeable one on the general path.
"""

from numba import types
from numba.extending import overload

from sweep.kernels.codes import NONFINITE, OK, STOPPED
from sweep.kernels.sphere import all_finite
from sweep.numerics._jit import jit_inline

_REGISTERED = {}  # system class -> (advance, save), for the Python loop


def advance(system, x, tick, steps, stop):
    """Up to `steps` steps of x: [n, d] in place, the first being step number tick of the run
    (from 0: the noise uses it), polling the stop flag before each; returns the steps taken."""
    return _REGISTERED[type(system)][0](system, x, tick, steps, stop)


def save(system, x, obs, traj, s):
    """Save s of x: False if it is not finite (the run ends), else its observables to obs[s]
    (and x to traj[s] when traj has rows) and True; obs: [n_saves, len(OBSERVABLES)]."""
    return _REGISTERED[type(system)][1](system, x, obs, traj, s)


def implement(cls, advance_fn, record_fn=None, save_fn=None) -> None:
    """Systems of class cls step by advance_fn(system, x, tick, steps, stop) and save by
    record_fn(system, x, obs, s) (obs[s] = the observables of x), or by save_fn(system, x,
    obs, traj, s) as `save` does: jitted functions for a NamedTuple cls, which `run` compiles
    in; anything callable for the Python loop."""
    if save_fn is None:
        save_fn = _saving(record_fn, jitted=issubclass(cls, tuple))
    _REGISTERED[cls] = (advance_fn, save_fn)

    @overload(advance)
    def _advance(system, x, tick, steps, stop):
        if isinstance(system, types.BaseNamedTuple) and system.instance_class is cls:
            return lambda system, x, tick, steps, stop: advance_fn(system, x, tick, steps, stop)

    @overload(save)
    def _save(system, x, obs, traj, s):
        if isinstance(system, types.BaseNamedTuple) and system.instance_class is cls:
            return lambda system, x, obs, traj, s: save_fn(system, x, obs, traj, s)


def _saving(record_fn, jitted: bool):
    """`save` for one system that records by record_fn."""

    def save_one(system, x, obs, traj, s):
        if not all_finite(x):
            return False
        record_fn(system, x, obs, s)
        if traj.shape[0] > 0:
            traj[s] = x
        return True

    return jit_inline(save_one) if jitted else save_one


@jit_inline
def run(system, x, save_stride, obs, traj, stop):
    """Integrate x: [n, d] in place, recording obs.shape[0] saves (see the module docstring).

    traj: [n_saves, n, d] positions at each save, or [0, n, d] for none; stop: [1] int, set by
    another thread to abandon the run. Returns (status, saves recorded): OK, NONFINITE (later
    rows are left untouched; for a block, when none of its systems goes on) or STOPPED.
    """
    saves = obs.shape[-2]  # [n_saves, N_OBS], or [B, n_saves, N_OBS] for a block
    for s in range(saves):
        if s > 0 and advance(system, x, (s - 1) * save_stride, save_stride, stop) < save_stride:
            return STOPPED, s
        if not save(system, x, obs, traj, s):
            return NONFINITE, s
        if stop[0] != 0:
            return STOPPED, s + 1
    return OK, saves
