"""Modes of the uniform state: the closed form on the circle, Funk-Hecke by quadrature, and
the linearisation of sweep's own velocity field on a quasi-uniform sphere in d = 3."""

import numpy as np
import pytest
from numpy.polynomial import legendre
from scipy.special import eval_gegenbauer, iv, roots_jacobi

from helpers import invoke, kernel_velocity, load
from sweep.analysis import theory
from sweep.errors import ConfigError
from sweep.kernels.general.model import dynamics

K = np.arange(1, 13)


@pytest.mark.parametrize("beta", [0.5, 2.0, 5.0, 12.0])
def test_circle_rates_are_the_closed_forms(beta):
    np.testing.assert_allclose(theory.growth_rates(K, 2, beta, "softmax"),
                               K**2 * iv(K, beta) / (beta * iv(0, beta)), rtol=1e-12)
    np.testing.assert_allclose(theory.growth_rates(K, 2, beta, "unnormalized"),
                               K**2 * iv(K, beta) / beta, rtol=1e-12)
    assert theory.fastest_mode(2, beta)[0] == K[np.argmax(K**2 * iv(K, beta))]


def test_three_clusters_nucleate_on_the_circle_at_beta_5(tmp_path):
    assert theory.fastest_mode(2, 5.0)[0] == 3
    r = invoke("theory", "modes", "--d", 2, "--beta", 5, "-o", tmp_path / "modes.nc")
    assert r.exit_code == 0, r.output
    assert "0.68268" in r.output  # g_3 = 9 I_3(5) / (5 I_0(5)), the fastest
    assert int(load(tmp_path / "modes.nc").fastest_mode.sel(d=2, beta=5.0)) == 3


@pytest.mark.parametrize("d", [3, 4, 5, 8])
@pytest.mark.parametrize("beta", [0.5, 3.0, 8.0])
def test_funk_hecke_coefficients_by_quadrature(d, beta):
    """lambda_k = E_sigma[e^{beta t} C_k(t) / C_k(1)], t = <x, e_1> of density
    (1 - t^2)^{(d-3)/2}, with C_k the Gegenbauer polynomial of index d/2 - 1."""
    a = d / 2 - 1
    t, w = roots_jacobi(60, (d - 3) / 2, (d - 3) / 2)  # Gauss-Jacobi for the weight
    ks = np.arange(0, 7)
    want = [np.sum(w * np.exp(beta * t) * eval_gegenbauer(k, a, t))
            / (w.sum() * eval_gegenbauer(k, a, 1.0)) for k in ks]
    # the quadrature of a small coefficient cancels: rounding of the lambda_0-sized terms
    np.testing.assert_allclose(theory.funk_hecke(ks, d, beta), want, rtol=1e-9,
                               atol=1e-13 * want[0])


def fibonacci_sphere(n):
    """n quasi-uniform points on S^2 (a spiral lattice: quadrature error ~1/n^2 for smooth f)."""
    i = np.arange(n) + 0.5
    z, phi = 1 - 2 * i / n, np.pi * (1 + 5**0.5) * i
    r = np.sqrt(1 - z * z)
    return np.column_stack([r * np.cos(phi), r * np.sin(phi), z])


@pytest.mark.parametrize("model", ["softmax", "unnormalized"])
@pytest.mark.parametrize("beta", [1.0, 3.0])
def test_linearised_kernel_velocity_in_d3(model, beta):
    """Displace a quasi-uniform configuration along u = eps grad P_k(<x, e_3>): the density
    changes by eps k(k+1) P_k sigma, and the kernel's velocity answers with g_k u."""
    x, e3, eps = fibonacci_sphere(1000), np.array([0.0, 0.0, 1.0]), 1e-6
    dyn = dynamics(model, beta)
    rest = kernel_velocity(x, dyn)
    for k in range(1, 5):  # beyond, g_k at beta = 1 is below the lattice's resolution
        slope = legendre.legval(x[:, 2], legendre.legder(np.eye(k + 1)[k]))
        moved = x + eps * slope[:, None] * (e3 - x[:, 2:] * x)
        moved /= np.linalg.norm(moved, axis=1, keepdims=True)
        u, dv = moved - x, kernel_velocity(moved, dyn) - rest
        rate = np.sum(dv * u) / np.sum(u * u)
        assert rate == pytest.approx(theory.growth_rates([k], 3, beta, model)[0], rel=1e-3)
        assert np.linalg.norm(dv - rate * u) < 1e-2 * np.linalg.norm(dv)  # an eigenmode


@pytest.mark.parametrize("d", [2, 3, 8])
@pytest.mark.parametrize("beta", [0.5, 3.0])
def test_degree_one_usa_mode_is_neutral_at_the_noise_threshold(d, beta):
    noise_c = 1 / theory.kappa_c(beta, d)
    g = theory.growth_rates([1, 2], d, beta, "unnormalized", noise=noise_c)
    assert g[0] == pytest.approx(0.0, abs=1e-12)
    assert theory.growth_rates([1], d, beta, "unnormalized", noise=0.9 * noise_c)[0] > 0


def test_modes_dataset_covers_the_fastest_mode(tmp_path):
    ds = theory.modes([2, 3], [1.0, 5.0, 20.0])
    assert ds.growth_rate.dims == ("d", "beta", "k")
    best = ds.growth_rate.argmax("k") + 1
    np.testing.assert_array_equal(best, ds.fastest_mode)
    assert int(ds.fastest_mode.sel(d=2, beta=5.0)) == 3
    with pytest.raises(ConfigError, match="beta"):
        theory.modes([3], [0.0])
    with pytest.raises(ConfigError, match="model"):
        theory.growth_rates([1], 3, 1.0, "relu")
