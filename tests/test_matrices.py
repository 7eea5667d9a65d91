"""Random matrices of a model (sweep.execution.matrices): the GOE draw's law, and the physics it
enables: with Q^T K = V symmetric the USA model is a gradient flow of its energy."""

import numpy as np
import pytest
from typer.testing import CliRunner

import sweep
from sweep.cli import app
from sweep.execution import matrices
from sweep.execution.simulate import job_dynamics, simulate


def test_goe_is_symmetric_with_the_ensembles_variances():
    d = 40
    m = matrices.goe(400, d, np.random.default_rng(7))
    assert m.shape == (400, d, d) and np.array_equal(m, np.swapaxes(m, 1, 2))
    off = m[:, ~np.eye(d, dtype=bool)]
    diag = np.diagonal(m, axis1=1, axis2=2)
    assert abs(off.mean()) < 3e-3 and abs(diag.mean()) < 1e-2
    assert off.var() * d == pytest.approx(1.0, rel=0.02)
    assert diag.var() * d == pytest.approx(2.0, rel=0.05)


def test_goe_spectrum_fills_the_semicircle_to_two():
    top = np.linalg.eigvalsh(matrices.goe(1, 600, np.random.default_rng(3))[0])
    assert top[-1] == pytest.approx(2.0, abs=0.08) and top[0] == pytest.approx(-2.0, abs=0.08)


def usa(qk: str = "goe") -> dict:
    return {"name": "usa", "model": {"attention": "unnormalized", "n": 6, "d": 3, "beta": 1.5,
                                     "qk": qk, "v": "qk"},
            "integrate": {"method": "rk4", "dt": 0.01, "t_max": 3.0, "save_every": 0.1},
            "output": {"positions": "trajectory"},
            "grid": {"seed": [0, 1, 2]}}


def test_usa_with_qk_goe_and_v_qk_climbs_its_energy():
    """dx_i/dt = P_x (1/n) sum_j exp(beta <x_i, M x_j>) M x_j with M symmetric is the gradient
    ascent of E = (1/(2 beta n)) sum_ij exp(beta <x_i, M x_j>) on the product of spheres."""
    for job in sweep.plan(sweep.load(usa())).jobs:
        m = job_dynamics(job).qk[0]
        assert np.array_equal(m, m.T) and not np.allclose(m, np.eye(3))
        x = simulate(job, positions="trajectory").positions
        beta = job.model.beta
        energy = [np.exp(beta * xt @ m @ xt.T).sum() / (2 * beta * len(xt)) for xt in x]
        rises = np.diff(energy)
        assert (rises >= -1e-12 * np.abs(energy[1:])).all(), rises.min()
        assert energy[-1] > energy[0] * (1 + 1e-3)  # it moved


def test_goe_is_a_choice_and_a_near_miss_is_one_line(tmp_path):
    import yaml

    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump(usa("goee")))
    result = CliRunner().invoke(app, ["plan", str(path)])
    assert result.exit_code == 2 and result.output.count("\n") == 1, result.output
    assert "model.qk" in result.output and "goe" in result.output
