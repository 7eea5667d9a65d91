"""The dynamics against the known results of the theory (docs/theory.md, results 1 and 2)."""

import numpy as np
import pytest

import reference as ref
from helpers import run_kernel
from sweep.execution import states

pytestmark = pytest.mark.physics


@pytest.mark.parametrize("kind,beta,dt", [("softmax", 4.0, 0.05), ("unnormalized", 1.0, 0.01)])
@pytest.mark.parametrize("method", ["euler", "rk4"])
def test_norms_stay_one_and_energy_never_decreases(kind, beta, dt, method):
    x0 = states.uniform(24, 3, np.random.default_rng(4))
    status, obs, x, traj = run_kernel(x0, kind, beta, method, dt, stride=5, n_saves=80,
                                      trajectory=True)
    assert status == 0
    np.testing.assert_allclose(np.linalg.norm(traj, axis=2), 1.0, atol=1e-13)
    energy = obs[:, 6]
    assert np.all(np.diff(energy) >= -1e-12 * np.abs(energy[1:]))
    assert energy[-1] > energy[0]


@pytest.mark.parametrize("kind,beta", [("softmax", 0.0), ("softmax", 3.0),
                                       ("unnormalized", 1.0)])
def test_equiangular_start_follows_the_ode(kind, beta):
    n, d, dt, stride, saves = 5, 8, 0.01, 25, 13
    x0 = states.orthonormal(n, d, np.random.default_rng(1))
    status, obs, x, traj = run_kernel(x0, kind, beta, "rk4", dt, stride, saves, trajectory=True)
    t = np.arange(saves) * dt * stride
    rho = ref.equiangular_rho(t, n, beta, kind)
    gram = np.einsum("tid,tjd->tij", traj, traj)
    off = ~np.eye(n, dtype=bool)
    spread = gram[:, off].max(axis=1) - gram[:, off].min(axis=1)
    assert spread.max() < 1e-10  # cosines stay equal
    np.testing.assert_allclose(obs[:, 1], rho, atol=1e-6)


def test_two_tokens_at_beta_zero_follow_tanh():
    x0 = np.array([[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]])
    _, obs, _, _ = run_kernel(x0, "softmax", 0.0, "rk4", 0.01, 10, 41)
    t = np.arange(41) * 0.1
    np.testing.assert_allclose(obs[:, 1], np.tanh(t), atol=1e-8)


@pytest.mark.parametrize("seed", range(4))
def test_d3_uniform_start_collapses_to_one_cluster(seed):
    x0 = states.uniform(16, 3, np.random.default_rng(seed))
    _, obs, _, _ = run_kernel(x0, "softmax", 1.0, "euler", 0.1, 50, 9)
    assert obs[-1, 4] == 1  # one cluster
    assert obs[-1, 2] > 1 - 1e-6


def _decay_rate(kind, beta, x0, dt, stride, saves):
    _, obs, _, _ = run_kernel(x0, kind, beta, "rk4", dt, stride, saves)
    t = np.arange(saves) * dt * stride
    gap = 1.0 - obs[:, 2]
    window = (gap < 1e-3) & (gap > 1e-9)
    assert window.sum() >= 5, "the run never entered the asymptotic window"
    slope, _ = np.polyfit(t[window], np.log(gap[window]), 1)
    return -slope


def test_softmax_decay_rate_near_consensus_is_two():
    x0 = states.uniform(8, 3, np.random.default_rng(5))
    rate = _decay_rate("softmax", 1.0, x0, 0.01, 10, 160)
    assert rate == pytest.approx(2.0, rel=0.02)
