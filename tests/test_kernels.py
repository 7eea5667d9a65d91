"""Compiled kernels against the plain NumPy reference (tests/reference.py)."""

import numpy as np
import pytest

import reference as ref
from helpers import assert_matches_reference, kernel_velocity, run_kernel
from sweep.execution import states
from sweep.kernels.general.model import dynamics

CASES = [(7, 3, 0.0), (16, 4, 1.5), (9, 12, 8.0), (5, 2, 30.0)]


@pytest.mark.parametrize("kind", ["softmax", "unnormalized"])
@pytest.mark.parametrize("n,d,beta", CASES)
def test_velocity_matches_reference(kind, n, d, beta):
    x = states.uniform(n, d, np.random.default_rng(n * d))
    out = kernel_velocity(x, dynamics(kind, beta))
    np.testing.assert_allclose(out, ref.velocity(x, kind, beta), rtol=0, atol=1e-12 * max(
        1.0, np.abs(ref.velocity(x, kind, beta)).max()))


@pytest.mark.parametrize("method", ["euler", "layer", "rk4"])
@pytest.mark.parametrize("kind", ["softmax", "unnormalized"])
@pytest.mark.parametrize("n,d,beta", CASES[:3])
def test_integration_and_observables_match_reference(kind, method, n, d, beta):
    x0 = states.uniform(n, d, np.random.default_rng(7))
    dt = 0.05 if kind == "softmax" else 0.05 * np.exp(-beta)
    status, obs, x, _ = run_kernel(x0, kind, beta, method, dt, stride=3, n_saves=4, eps=0.05)
    want_obs, want_x = ref.trajectory(x0, kind, beta, method, dt, 3, 4, 0.05)
    assert status == 0
    assert_matches_reference(obs, x, want_obs, want_x)


@pytest.mark.parametrize("kind, beta", [("softmax", 2.0), ("unnormalized", 1.0)])
def test_layer_step_is_a_shorter_projected_step(kind, beta):
    # x + dt v = (1 + dt <x, v>) (x + h P_x v) with h = dt / (1 + dt <x, v>): after
    # normalising, one layer step is a projected Euler step of size h (docs/integrators.md)
    x0, dt = states.uniform(8, 3, np.random.default_rng(4)), 0.3
    _, _, x, _ = run_kernel(x0, kind, beta, "layer", dt)
    v = ref.attention(x0, kind, beta) @ x0
    h = dt / (1 + dt * np.sum(x0 * v, axis=1, keepdims=True))
    assert h.max() < dt
    np.testing.assert_allclose(x, ref.normalize(x0 + h * ref.project(x0, v)), rtol=0,
                               atol=1e-14)


def test_observables_of_known_states():
    # two antipodal pairs of coincident tokens: two clusters of two
    e = np.eye(3)
    x = np.array([e[0], e[0], -e[0], -e[0]])
    _, obs, _, _ = run_kernel(x, beta=0.0, n_saves=1)
    order, mean_cos, min_cos, frac, count, largest, energy, entropy = obs[0, :8]
    assert order == pytest.approx(0.0)
    assert mean_cos == pytest.approx((4 * 1 + 8 * -1) / 12)  # ordered pairs: 4 twins, 8 opposite
    assert min_cos == -1
    assert frac == pytest.approx(4 / 12)
    assert (count, largest) == (2, 0.5)
    assert energy == pytest.approx(0.0)  # beta = 0 limit: sum of cosines / (2 n^2)
    assert entropy == pytest.approx(np.log(4))  # uniform attention at beta = 0


def test_single_token_has_no_pairs():
    _, obs, _, _ = run_kernel(np.array([[1.0, 0.0, 0.0]]), n_saves=1)
    assert np.isnan(obs[0, 1:4]).all()
    assert tuple(obs[0, 4:6]) == (1, 1)


def test_float32_tracks_float64():
    x0 = states.uniform(12, 5, np.random.default_rng(3))
    _, obs64, x64, _ = run_kernel(x0, beta=2.0, dt=0.05, stride=4, n_saves=6)
    status, obs32, x32, _ = run_kernel(x0, beta=2.0, dt=0.05, stride=4, n_saves=6,
                                       dtype=np.float32)
    assert status == 0 and x32.dtype == np.float32
    np.testing.assert_allclose(x32, x64, atol=1e-5)
    np.testing.assert_allclose(obs32[:, :4], obs64[:, :4], atol=1e-5)


def test_blow_up_is_reported_not_raised():
    x0 = states.uniform(6, 3, np.random.default_rng(0))
    status, obs, _, _ = run_kernel(x0, "unnormalized", beta=800.0, dt=1.0, n_saves=3)
    assert status == 1
    assert np.isnan(obs[-1]).all()


def test_huge_beta_softmax_stays_finite():
    x0 = states.uniform(10, 3, np.random.default_rng(1))
    status, obs, x, _ = run_kernel(x0, "softmax", beta=1e3, dt=0.1, stride=5, n_saves=3)
    assert status == 0 and np.isfinite(x).all()
    np.testing.assert_allclose(np.linalg.norm(x, axis=1), 1.0, atol=1e-14)


def test_trajectory_records_every_save():
    x0 = states.uniform(5, 3, np.random.default_rng(2))
    _, _, x, traj = run_kernel(x0, stride=2, n_saves=4, trajectory=True)
    np.testing.assert_array_equal(traj[0], x0)
    np.testing.assert_array_equal(traj[-1], x)
