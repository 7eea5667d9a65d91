"""integrate.method: heun (kernels/methods.py): second order against a fine RK4 run, the same
numbers on every path, and refused with noise like rk4."""

import numpy as np
import pytest
from typer.testing import CliRunner

from sweep.cli import app
from sweep.config import schema as config
from sweep.config.grid import expand
from sweep.errors import ConfigError
from sweep.kernels.blocked import integrate_blocked
from sweep.kernels.codes import METHOD_CODES, OBSERVABLES, SAVE_ALL
from sweep.kernels.general.drive import integrate
from sweep.kernels.general.model import dynamics
from sweep.kernels.lanes import integrate_lanes
from sweep.kernels.rows import integrate_rows_batch

HEUN = METHOD_CODES["heun"]
STOP = np.zeros(1, dtype=np.int64)


def _starts(count, n, d, seed=3):
    x = np.random.default_rng(seed).normal(size=(count, n, d))
    return x / np.linalg.norm(x, axis=-1, keepdims=True)


def _general(x, method, dt, steps, beta=2.0):
    x = x.copy()
    obs = np.zeros((2, len(OBSERVABLES)))
    integrate(x, dynamics("softmax", beta), METHOD_CODES[method], dt, steps, 1e-3, obs,
              np.zeros((0,) + x.shape), STOP)
    return x, obs


def test_heun_is_second_order():
    """Halving dt divides the error at t = 1 by about 4 (rk4 at dt / 40 as the truth)."""
    x0 = _starts(1, 8, 3)[0]
    truth, _ = _general(x0, "rk4", 0.0025, 400)
    errors = [np.abs(_general(x0, "heun", dt, round(1 / dt))[0] - truth).max()
              for dt in (0.1, 0.05, 0.025)]
    ratios = [errors[0] / errors[1], errors[1] / errors[2]]
    assert all(3.5 < r < 4.5 for r in ratios), (errors, ratios)
    euler = np.abs(_general(x0, "euler", 0.025, 40)[0] - truth).max()
    assert errors[2] < euler / 10  # and far better than first order at the same step


def _batch(fn, xs, steps, **kw):
    xs = xs.copy()
    B, (n, d) = xs.shape[0], xs.shape[1:]
    obs = np.full((B, 2, len(OBSERVABLES)), np.nan)
    args = (xs, np.full(B, 2.0), True, HEUN, np.full(B, 0.1), steps, np.full(B, 1e-3), obs,
            np.zeros((B, 0, n, d)), STOP, np.zeros(B, dtype=np.int64))
    fn(*args, *kw.values())
    return xs, obs


@pytest.mark.parametrize("count, n, d", [(40, 12, 2), (3, 10, 3), (33, 7, 3)])
def test_heun_lanes_agree_with_the_general_path(count, n, d):
    xs = _starts(count, n, d)
    lanes, obs = _batch(integrate_lanes, xs, 20, recorded=np.zeros(count, dtype=np.int64),
                        level=SAVE_ALL)
    for b in (0, count - 1):
        x, o = _general(xs[b], "heun", 0.1, 20)
        assert np.abs(lanes[b] - x).max() < 1e-12
        assert np.allclose(obs[b], o, rtol=1e-9, atol=1e-12, equal_nan=True)
    assert not np.array_equal(lanes[0], xs[0])


def test_heun_rows_and_blocked_agree_with_the_general_path():
    xs = _starts(2, 10, 12)
    rows, obs = _batch(integrate_rows_batch, xs, 20, level=SAVE_ALL)
    for b in range(2):
        x, o = _general(xs[b], "heun", 0.1, 20)
        assert np.abs(rows[b] - x).max() < 1e-12
        assert np.allclose(obs[b], o, rtol=1e-9, atol=1e-12, equal_nan=True)
    for symmetric in (False, True):
        x = xs[0].copy()
        o = np.zeros((2, len(OBSERVABLES)))
        integrate_blocked(x, 2.0, True, HEUN, 0.1, 20, 1e-3, o, np.zeros((0, 10, 12)), STOP,
                          symmetric=symmetric)
        assert np.abs(x - rows[0]).max() < 1e-12


def test_heun_refuses_noise(tmp_path):
    """As rk4: one line naming the key, exit 2 (and without noise the config is fine)."""
    path = tmp_path / "c.yaml"
    path.write_text("name: c\nmodel: {n: 4, noise: 0.1}\nintegrate: {method: heun}\n")
    with pytest.raises(ConfigError, match="integrate.method"):
        expand(config.load(path))
    result = CliRunner().invoke(app, ["plan", str(path)])
    assert result.exit_code == 2 and "integrate.method" in result.output
    assert "Traceback" not in result.output
    assert expand(config.load(path, ["model.noise=0"]))[0].integrate.method == "heun"
