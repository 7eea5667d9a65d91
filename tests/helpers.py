"""Small helpers shared by the tests: run the compiled kernel on one state, compare results."""

from __future__ import annotations

import numpy as np

from sweep.kernels import METHOD_CODES, OBSERVABLES, dynamics, integrate


def run_kernel(x0, kind="softmax", beta=1.0, method="euler", dt=0.1, stride=1, n_saves=2,
               eps=1e-3, dtype=np.float64, trajectory=False, model=None):
    """(status, observables [n_saves, 8], final x, traj) from the compiled kernel.

    model: keyword arguments of sweep.kernels.dynamics (overrides kind and beta)."""
    dyn = dynamics(kind, beta) if model is None else dynamics(**model)
    x = np.array(x0, dtype=dtype, copy=True)
    obs = np.full((n_saves, len(OBSERVABLES)), np.nan)
    traj = np.zeros((n_saves if trajectory else 0,) + x.shape, dtype=dtype)
    status, _ = integrate(x, dyn, METHOD_CODES[method], dt, stride, eps, obs,
                          traj, np.zeros(1, dtype=np.int64))
    return status, obs, x, traj


def assert_same_results(a, b):
    """Two results datasets agree value for value (NaN where NaN) and come from one config;
    wall_seconds is the one variable allowed to differ."""
    a, b = a.drop_vars("wall_seconds"), b.drop_vars("wall_seconds")
    assert set(a.data_vars) == set(b.data_vars) and dict(a.sizes) == dict(b.sizes)
    for name in a.variables:
        np.testing.assert_array_equal(a[name].values, b[name].values, err_msg=name)
    assert a.attrs["sweep_config_hash"] == b.attrs["sweep_config_hash"]


def assert_matches_reference(obs, x, want_obs, want_x, tol=1e-12):
    """Final state to tol absolute; observables to tol relative (absolute below 1)."""
    np.testing.assert_allclose(x, want_x, rtol=0, atol=tol)
    scale = np.maximum(1.0, np.abs(want_obs))
    np.testing.assert_array_less(np.abs(obs - want_obs), tol * scale)
