"""The noisy transition: Bessel functions in log space, kappa_c against Mun-Rosenzweig's
K_#, and beta*(d) above which the transition is discontinuous (arXiv 2606.05140)."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.special import gamma, iv, ive

from helpers import invoke
from sweep.analysis import theory
from sweep.analysis.theory.bessel import iv_ratio, log_iv
from sweep.errors import ConfigError


@pytest.mark.parametrize("x", [1e-3, 0.5, 2.4, 10.0, 100.0, 2000.0])
def test_log_iv_matches_scipy(x):
    nu = np.array([0.0, 0.5, 1.0, 4.0, 10.5, 50.0])
    want = np.log(ive(nu, x)) + x  # ive = iv e^-x: no overflow at large x
    np.testing.assert_allclose(log_iv(nu, x), want, rtol=1e-13, atol=1e-13)


def test_ratio_survives_where_the_functions_overflow():
    assert iv_ratio(4.0, 5000.0) == pytest.approx(ive(5.0, 5000.0) / ive(4.0, 5000.0),
                                                  rel=1e-12)


def test_beta_star_published_values():
    assert f"{theory.beta_star(2):.4f}" == "2.4469"
    assert f"{theory.beta_star(8):.4f}" == "1.2666"


@settings(max_examples=40, deadline=None)
@given(st.integers(min_value=2, max_value=200))  # scipy.special.ive underflows beyond
def test_beta_star_is_the_root_and_falls_toward_one(d):
    b = theory.beta_star(d)
    assert ive(d / 2 + 1, b) / ive(d / 2, b) == pytest.approx(1 / d, rel=1e-12)
    # unique root: the ratio increases, so it lies below 1/d before b and above after
    assert ive(d / 2 + 1, 0.99 * b) / ive(d / 2, 0.99 * b) < 1 / d
    assert 1.0 < theory.beta_star(d + 1) < b


@pytest.mark.parametrize("d", [2, 3, 5, 8, 16, 64])
@pytest.mark.parametrize("beta", [0.1, 1.0, 2.4469, 7.0, 30.0])
def test_kappa_c_is_twice_mun_rosenzweig_k_sharp(d, beta):
    k_sharp = beta ** (d / 2) / (2 ** (d / 2) * gamma(d / 2) * iv(d / 2, beta))  # their K_#
    assert theory.k_sharp(beta, d) == pytest.approx(k_sharp, rel=1e-12)
    assert theory.kappa_c(beta, d) == pytest.approx(2 * k_sharp, rel=1e-12)


def test_kappa_c_dataset_says_which_transition():
    ds = theory.kappa_c_dataset([2, 8], [1.0, 2.0, 3.0])
    np.testing.assert_array_equal(ds.discontinuous.values, [[0, 0, 1], [0, 1, 1]])
    np.testing.assert_allclose(ds.k_sharp, ds.kappa_c / 2, rtol=1e-12)
    assert "sqrt(2 D)" in ds.attrs["convention"]
    assert ds.attrs["Conventions"] == "CF-1.8"
    for name in list(ds.data_vars) + list(ds.coords):
        assert {"long_name", "units"} <= set(ds[name].attrs), name


def test_beta_star_and_kappa_c_commands(tmp_path):
    r = invoke("theory", "beta-star", "--d", 2, "--d", 8, "-o", tmp_path / "b.nc")
    assert r.exit_code == 0, r.output
    assert "2.44692" in r.output and "1.26655" in r.output
    r = invoke("theory", "kappa-c", "--d", 8, "--beta", 3)
    assert r.exit_code == 0, r.output
    assert "kappa_c / 2" in r.output and "discontinuous" in r.output
    assert "2.5905329" in r.output  # K_# = kappa_c / 2 = 5.1810659 / 2
    r = invoke("theory", "beta-star", "--d", 1)
    assert r.exit_code == 2 and "d:" in r.output


def test_bad_dimension_is_a_config_error():
    with pytest.raises(ConfigError, match="d:"):
        theory.beta_star(1.5)
