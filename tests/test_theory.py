"""Theory curves against direct ODE solves, closed forms and a real simulation."""

import numpy as np
import pytest
import yaml
from scipy.integrate import quad, solve_ivp
from scipy.special import iv

import reference as ref
from sweep.analysis import results, theory, thresholds
from sweep.core.config import ConfigError


def solve(n, beta, kind, t_end, **kwargs):
    """scipy's solution of the equiangular ODE; implicit for the stiff unnormalized model."""
    method = "DOP853" if kind == "softmax" else "Radau"
    return solve_ivp(lambda t, r: ref.equiangular_rhs(r, n, beta, kind), (0, t_end), [0.0],
                     method=method, rtol=1e-12, atol=1e-14, **kwargs)


@pytest.mark.parametrize("kind", ["softmax", "unnormalized"])
@pytest.mark.parametrize("n,beta", [(32, 0.0), (32, 1.0), (32, 5.0), (32, 9.0), (5, 3.0)])
def test_rho_curve_matches_a_direct_solve(kind, n, beta):
    t = np.linspace(0, 20, 41)
    rho = theory.rho_curve(t, [beta], n, kind)[:, 0]
    np.testing.assert_allclose(rho, solve(n, beta, kind, t[-1], t_eval=t).y[0], atol=1e-9)


@pytest.mark.parametrize("kind", ["softmax", "unnormalized"])
@pytest.mark.parametrize("beta", [0.0, 2.0, 6.0])
def test_boundary_time_matches_an_event_of_the_direct_solve(kind, beta):
    eps = 1e-3
    def event(t, r):
        return r[0] - (1 - eps)

    event.terminal = True
    sol = solve(32, beta, kind, 1e3, events=event)
    t_star = theory.boundary_time([beta], 32, kind, eps)[0]
    assert t_star == pytest.approx(sol.t_events[0][0], rel=1e-8)


def test_two_tokens_at_beta_zero_follow_tanh():
    t = np.linspace(0, 6, 25)
    np.testing.assert_allclose(theory.rho_curve(t, [0.0], 2)[:, 0], np.tanh(t), atol=1e-12)
    for eps in (1e-1, 1e-3, 1e-6):
        t_star = theory.boundary_time([0.0], 2, "softmax", eps)[0]
        assert t_star == pytest.approx(np.arctanh(1 - eps), rel=1e-10)


def test_equiangular_dataset_is_consistent():
    ds = theory.equiangular(32, "softmax", 1e-3, np.linspace(0, 8, 9), np.arange(0, 40.5, 0.5))
    assert ds.rho.dims == ("time", "beta") and ds.t_boundary.dims == ("beta",)
    # the 0/1 indicator switches on at the first saved time after t*(beta)
    first = ds.time.values[ds.clustered.argmax("time").values]
    t_star = ds.t_boundary.values
    seen = t_star < 40
    assert np.all(first[seen] >= t_star[seen]) and np.all(first[seen] - t_star[seen] < 0.5)
    assert np.all(np.diff(t_star) > 0)  # softmax clusters later as beta grows


@pytest.mark.parametrize("d", [2, 3, 5, 8, 100])
@pytest.mark.parametrize("beta", [0.5, 3.0, 20.0])
def test_kappa_c_against_quadrature(d, beta):
    weight = lambda t: (1 - t * t) ** ((d - 3) / 2)  # noqa: E731
    mean = quad(lambda t: t * np.exp(beta * t) * weight(t), -1, 1, limit=200)[0] / \
        quad(weight, -1, 1, limit=200)[0]
    assert theory.kappa_c(beta, d) == pytest.approx(beta / mean, rel=1e-7)


def test_kappa_c_closed_forms():
    for beta in (0.1, 1.0, 7.0, 50.0):
        assert theory.kappa_c(beta, 2) == pytest.approx(beta / iv(1, beta), rel=1e-12)
    for d in (2, 3, 16):
        assert theory.kappa_c(0.0, d) == d
        assert theory.kappa_c(1e-6, d) == pytest.approx(d, rel=1e-9)
    assert theory.kappa_c(1.0, 3) == pytest.approx(np.e, rel=1e-12)  # E[t e^t] = 1/e
    assert 0 < theory.kappa_c(600.0, 3) < 1e-200  # log-space sums do not overflow


@pytest.mark.parametrize("call", [
    lambda: theory.boundary_time([1.0], 1, "softmax"),
    lambda: theory.boundary_time([1.0], 8, "relu"),
    lambda: theory.boundary_time([1.0], 8, "softmax", eps=1.5),
    lambda: theory.kappa_c(1.0, 1),
])
def test_bad_arguments_are_config_errors(call):
    with pytest.raises(ConfigError):
        call()


@pytest.mark.physics
def test_measured_boundary_in_high_dimension_matches_the_ode(tmp_path):
    """n = 32, d = 512 from a uniform start: the time at which half the pairs have cosine
    > 1 - 1e-3 lies within 5% of the equiangular t*(beta) (docs/theory.md, result 3)."""
    from typer.testing import CliRunner

    from sweep.cli import app

    cfg = {"name": "high-d", "model": {"attention": "softmax", "n": 32, "d": 512},
           "integrate": {"method": "euler", "dt": 0.02, "t_max": 11.0, "save_every": 0.1},
           "grid": {"beta": [1.0, 3.0, 5.0], "seed": {"range": [0, 2]}}}
    path = tmp_path / "high-d.yaml"
    path.write_text(yaml.safe_dump(cfg))
    out = tmp_path / "high-d.nc"
    assert CliRunner().invoke(app, ["run", str(path), "--out", str(out)]).exit_code == 0
    ds = results.open_results(out)
    th = thresholds.threshold(ds, "clustered_fraction", along="time", level=0.5, bootstrap=100)
    ode = theory.boundary_time(ds.beta.values, 32, "softmax", 1e-3)
    np.testing.assert_allclose(th.threshold.values, ode, rtol=0.05)
