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
paths (general/drive.py, rows.py, lanes.py) use NamedTuples, for which `implement` returns
the loop with the registered jitted functions inlined (it is inlined into each path's
integrate, so no specialisation is added). blocked.py, whose steps are Python calls into
BLAS, runs the same loop as Python (`run`), where `advance` and `save` call what was
registered.
Why a save interval and not a step: a path unpacks its system once per call, and Numba
increfs every array it takes out of a tuple; per step, that is a large share of a small
system's step on the rows path and a sizeable one on the general path.
"""

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


def implement(cls, advance_fn, record_fn=None, save_fn=None):
    """Systems of class cls step by advance_fn(system, x, tick, steps, stop) and save by
    record_fn(system, x, obs, s) (obs[s] = the observables of x), or by save_fn(system, x,
    obs, traj, s) as `save` does: jitted functions for a NamedTuple cls, anything callable
    for the Python loop. Returns the loop for such systems, `run`'s: for a NamedTuple cls a
    jitted one with the two functions inlined, compiled into its caller (a loop that called
    them through an overload of `advance` and `save` compiled each path's step and save as a
    function of their own first, then again inside the caller)."""
    jitted = issubclass(cls, tuple)
    if save_fn is None:
        save_fn = _saving(record_fn, jitted)
    _REGISTERED[cls] = (advance_fn, save_fn)
    return jit_inline(_loop(advance_fn, save_fn)) if jitted else run


def _saving(record_fn, jitted: bool):
    """`save` for one system that records by record_fn."""

    def save_one(system, x, obs, traj, s):
        if not all_finite(x):
            return False
        record_fn(system, x, obs, s)
        if traj.shape[0] > 0:
            copy_rows(x, traj[s])
        return True

    return jit_inline(save_one) if jitted else save_one


@jit_inline
def copy_rows(x, out):
    """out[:] = x for [n, d] arrays: a loop, not an array assignment, whose shape check
    compiles an error message that costs seconds of every path's compile."""
    for i in range(x.shape[0]):
        for k in range(x.shape[1]):
            out[i, k] = x[i, k]


def _loop(advance, save):
    """The time loop over these two functions (the module docstring's)."""

    def run(system, x, save_stride, obs, traj, stop):
        """Integrate x: [n, d] in place, recording obs.shape[0] saves (see the module
        docstring).

        traj: [n_saves, n, d] positions at each save, or [0, n, d] for none; stop: [1] int,
        set by another thread to abandon the run. Returns (status, saves recorded): OK,
        NONFINITE (later rows are left untouched; for a block, when none of its systems goes
        on) or STOPPED.
        """
        saves = obs.shape[-2]  # [n_saves, N_OBS], or [B, n_saves, N_OBS] for a block
        for s in range(saves):
            if s > 0 and advance(system, x, (s - 1) * save_stride, save_stride,
                                 stop) < save_stride:
                return STOPPED, s
            if not save(system, x, obs, traj, s):
                return NONFINITE, s
            if stop[0] != 0:
                return STOPPED, s + 1
        return OK, saves

    return run


run = _loop(advance, save)  # the Python loop (blocked.py), through what was registered
