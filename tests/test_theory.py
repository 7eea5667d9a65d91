"""Theory curves against direct ODE solves, closed forms and a real simulation."""

import numpy as np
import pytest
import yaml
from scipy.integrate import quad, solve_ivp
from scipy.special import iv

import reference as ref
from sweep.analysis import results, theory, thresholds
from sweep.errors import ConfigError


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
    ds = theory.equiangular(32, "softmax", 1e-3, beta=(0, 8, 9), t_max=40, save_every=0.5)
    np.testing.assert_array_equal(ds.time, np.arange(0, 40.5, 0.5))
    np.testing.assert_array_equal(ds.beta, np.linspace(0, 8, 9))
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
    lambda: theory.boundary_time([1.0], 8, "hardmax"),
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


# ---------------------------------------------------------------- several heads, ReLU

def heads_rhs(rho, n, betas):
    """sweep averages the heads' velocities: the mean of the one-head right-hand sides."""
    return np.mean([ref.equiangular_rhs(rho, n, b, "softmax") for b in betas], axis=0)


def relu_beta_t_star(n, rho0, eps):
    """beta t* of the ReLU ODE in closed form, by partial fractions of 1 / (rho (1 - rho)
    (1 + (n-1) rho)) = 1/rho + (1/n) / (1 - rho) - ((n-1)^2 / n) / (1 + (n-1) rho)."""
    r1 = 1 - eps
    return n / 2 * (np.log(r1 / rho0) - np.log((1 - r1) / (1 - rho0)) / n
                    - (n - 1) / n * np.log((1 + (n - 1) * r1) / (1 + (n - 1) * rho0)))


@pytest.mark.parametrize("heads,published", [((5.0, 7.0), 16.422), ((1.0, 11.0), 6.915)])
def test_two_heads_boundary_time(heads, published):
    def event(t, r):
        return r[0] - (1 - 1e-3)

    event.terminal = True
    sol = solve_ivp(lambda t, r: heads_rhs(r, 16, heads), (0, 1e3), [0.0], method="DOP853",
                    rtol=1e-12, atol=1e-14, events=event)
    t_star = theory.boundary_time([heads], 16, "softmax", 1e-3)[0]
    assert round(t_star, 3) == published
    assert t_star == pytest.approx(sol.t_events[0][0], rel=1e-8)
    t = np.linspace(0, 20, 41)
    direct = solve_ivp(lambda t, r: heads_rhs(r, 16, heads), (0, 20), [0.0], t_eval=t,
                       method="DOP853", rtol=1e-12, atol=1e-14).y[0]
    np.testing.assert_allclose(theory.rho_curve(t, [heads], 16)[:, 0], direct, atol=1e-9)


def test_identical_heads_are_one_head():
    t = np.linspace(0, 15, 31)
    np.testing.assert_array_equal(theory.boundary_time([[3.0, 3.0, 3.0]], 16),
                                  theory.boundary_time([3.0], 16))
    np.testing.assert_allclose(theory.rho_curve(t, [[3.0, 3.0]], 16),
                               theory.rho_curve(t, [3.0], 16), rtol=1e-14)


@pytest.mark.parametrize("beta", [0.5, 1.0, 3.0, 10.0])
def test_relu_beta_t_star_is_the_same_for_every_beta(beta):
    t_star = theory.boundary_time([beta], 16, "relu", 1e-3, rho0=0.05)[0]
    assert round(beta * t_star, 3) == 10.796
    assert beta * t_star == pytest.approx(relu_beta_t_star(16, 0.05, 1e-3), rel=1e-10)


def test_relu_does_not_leave_zero_or_negative_cosines():
    for rho0 in (0.0, -0.05):
        assert theory.boundary_time([2.0], 16, "relu", rho0=rho0)[0] == np.inf
        np.testing.assert_array_equal(theory.rho_curve([0, 5, 50], [2.0], 16, "relu", rho0),
                                      rho0)


def test_head_beta_dataset_is_labelled_like_a_results_axis():
    ds = theory.equiangular(16, head_beta=[[5, 7], [1, 11]], t_max=12, save_every=0.5)
    assert list(ds.head_beta.values) == ["5,7", "1,11"]
    assert ds.rho.dims == ("time", "head_beta")
    np.testing.assert_array_equal(ds.time, np.arange(25) * 0.5)
    assert ds.attrs["Conventions"] == "CF-1.8" and "history" in ds.attrs
    for name in list(ds.data_vars) + list(ds.coords):
        assert {"long_name", "units"} <= set(ds[name].attrs), name


@pytest.mark.parametrize("kwargs,key", [
    (dict(beta=(0, 5, 3), head_beta=[[1, 2]]), "head_beta"),
    (dict(t_max=0), "t_max"),
    (dict(save_every=-1), "save_every"),
    (dict(beta=(0, 5, 0)), "beta"),
    (dict(beta=(-1, 5, 3)), "beta"),
    (dict(head_beta=[[1, float("nan")]]), "head_beta"),
])
def test_bad_grids_name_their_key(kwargs, key):
    with pytest.raises(ConfigError, match=key):
        theory.equiangular(16, **kwargs)


def test_equiangular_command_with_heads_and_relu(tmp_path):
    from helpers import invoke

    r = invoke("theory", "equiangular", "--n", 16, "--head-beta", "5,7", "--head-beta", "1,11",
               "-o", tmp_path / "heads.nc")
    assert r.exit_code == 0, r.output
    assert "16.422" in r.output and "6.9146" in r.output
    assert list(results.open_results(tmp_path / "heads.nc").head_beta.values) == ["5,7", "1,11"]
    r = invoke("theory", "equiangular", "--n", 16, "--model", "relu", "--rho0", 0.05,
               "--beta", 1, 4, 4)
    assert r.exit_code == 0 and r.output.count("10.796") == 5  # every beta t*, and t*(1)
    r = invoke("theory", "equiangular", "--head-beta", "5,x")
    assert r.exit_code == 2 and "--head-beta" in r.output


# ---------------------------------------------------------------- the simulation on the ODE

def simulate(tmp_path, name, model, init, grid, t_max):
    """A sweep run through the command line: RK4, dt = 0.01, n = 16 tokens in d = 17."""
    from helpers import invoke

    cfg = {"name": name, "model": {"n": 16, "d": 17, **model}, "init": init,
           "integrate": {"method": "rk4", "dt": 0.01, "t_max": t_max, "save_every": 0.5},
           "grid": grid}
    path = tmp_path / f"{name}.yaml"
    path.write_text(yaml.safe_dump(cfg))
    r = invoke("run", path, "--out", tmp_path / f"{name}.nc", "--workers", 1)
    assert r.exit_code == 0, r.output
    return results.open_results(tmp_path / f"{name}.nc")


def test_two_head_simulation_follows_the_ode(tmp_path):
    ds = simulate(tmp_path, "heads", {"heads": 2}, {"kind": "orthonormal"},
                  {"head_beta": [[5.0, 7.0], [1.0, 11.0]]}, 20.0)
    ode = theory.equiangular(16, head_beta=[[5, 7], [1, 11]], t_max=20, save_every=0.5)
    np.testing.assert_allclose(ds.mean_cosine.squeeze().transpose("time", ...), ode.rho,
                               atol=1e-6)


def test_relu_simulation_follows_the_ode(tmp_path):
    ds = simulate(tmp_path, "relu", {"attention": "relu"},
                  {"kind": "equiangular", "overlap": 0.05}, {"beta": [1.0, 4.0]}, 12.0)
    ode = theory.equiangular(16, "relu", beta=(1, 4, 2), t_max=12, save_every=0.5, rho0=0.05)
    np.testing.assert_allclose(ds.mean_cosine.squeeze().transpose("time", ...), ode.rho,
                               atol=1e-6)


def test_the_theory_table_shows_grid_values_without_float_noise():
    from helpers import invoke

    result = invoke("theory", "equiangular", "--n", "8", "--beta", "0", "3.15", "10",
                    "--t-max", "5", "--save-every", "0.05")
    assert result.exit_code == 0, result.output
    first = [line.split("│")[1].strip() for line in result.output.splitlines()
             if line.startswith("│")]
    assert first[:4] == ["0", "0.35", "0.7", "1.05"] and "0.0499999" not in result.output
