"""v_eigenvalue, v_eigen_residual (observables/eigenspace.py): which eigenspace of V the tokens
lie in, against NumPy and against the hyperplane theorem of arXiv 2305.05465."""

import json
from pathlib import Path

import numpy as np
import pytest
from test_span import CASES, first_save

import reference as ref
from helpers import run_kernel
from sweep.execution.simulate import growth_rate
from sweep.kernels.codes import COLUMN
from sweep.kernels.general.model import dynamics
from sweep.observables.eigenspace import fit, identity_eigenvalue, identity_residual

S = np.array([[1.0, 0.5], [-0.3, 1.0]])
V = S @ np.diag([1.0, 0.5]) @ np.linalg.inv(S)  # configs/matrices/v-simple-top.npy


@pytest.mark.parametrize("heads", [1, 3])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_fit_is_numpys(heads, dtype):
    rng = np.random.default_rng(heads)
    x = rng.standard_normal((9, 4)).astype(dtype)
    v = rng.standard_normal((heads, 4, 4))
    np.testing.assert_allclose(fit(x, v), ref.eigen_fit(x, v), rtol=1e-12)


def test_tokens_on_one_eigenline_give_its_eigenvalue_and_no_residual():
    phi = S[:, 0]
    for lam, vector in ((1.0, phi), (0.5, S[:, 1])):
        x = np.outer([0.3, -2.0, 1.1, 4.0], vector)
        value, residual = fit(x, V[None])
        assert value == pytest.approx(lam, abs=1e-14) and residual < 1e-14
        assert fit(7.0 * x, V[None]) == pytest.approx((value, residual), abs=1e-14)
    mixed = np.array([phi, S[:, 1]])  # one token in each eigenspace
    value, residual = fit(mixed, V[None])
    assert 0.5 < value < 1.0 and residual > 0.1
    assert np.isnan(fit(np.zeros((3, 2)), V[None])).all()


def test_identity_is_one_and_zero_and_nan_for_no_tokens():
    x = np.random.default_rng(0).standard_normal((5, 3))
    assert fit(x, np.eye(3)[None]) == (1.0, 0.0)  # the general path's fit agrees, exactly
    assert (identity_eigenvalue(x), identity_residual(x)) == (1.0, 0.0)
    assert np.isnan([identity_eigenvalue(0 * x), identity_residual(0 * x)]).all()


@pytest.mark.parametrize("path", ["general", "rows", "lanes", "blocked", "symmetric"])
def test_every_path_records_the_identitys_values(path):
    for name, x in CASES:
        obs = first_save(path, x)
        assert (obs[COLUMN.v_eigenvalue], obs[COLUMN.v_eigen_residual]) == (1.0, 0.0), name


def test_the_general_path_fits_the_models_v_on_the_sphere():
    """With matrices the general path writes the fit of its V, not the identity's."""
    x = np.random.default_rng(3).standard_normal((6, 2))
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    _, obs, _, _ = run_kernel(x, model=dict(attention="softmax", beta=1.0, v=V), n_saves=1)
    np.testing.assert_allclose(obs[0, [COLUMN.v_eigenvalue, COLUMN.v_eigen_residual]],
                               ref.eigen_fit(x, V[None]), rtol=1e-13)


def test_euclidean_tokens_turn_onto_the_top_eigenspace_at_the_theorys_rate():
    """2305.05465, V with a simple positive top eigenvalue: the rescaled tokens' part off the
    top eigenline decays like exp(-(lambda_1 - lambda_2) t), so lambda -> lambda_1 = 1 and
    the residual's log falls with slope -(1 - 0.5)."""
    x0 = np.random.default_rng(11).standard_normal((12, 2))
    model = dict(attention="softmax", beta=1.0, v=V, space="euclidean",
                 rate=growth_rate("euclidean", V[None]))
    status, obs, _, _ = run_kernel(x0, method="rk4", dt=0.05, stride=10, n_saves=25,
                                   model=model)
    assert status == 0
    t = 0.5 * np.arange(25)
    residual = obs[:, COLUMN.v_eigen_residual]
    slope = np.polyfit(t[12:], np.log(residual[12:]), 1)[0]
    assert slope == pytest.approx(-0.5, rel=0.15)
    assert abs(obs[-1, COLUMN.v_eigenvalue] - 1.0) < 0.02 < abs(obs[0, COLUMN.v_eigenvalue] - 1)


def test_the_published_sidecar_says_what_docs_models_md_says_of_it():
    """docs/models.md, "Euclidean space": every run ends on at most three levels of <psi, y>
    (most on one or two), the eigenvalue read off the tokens is lambda_1 = 1 to 1e-2, and the
    fitted decay rate of the residual lies within 20% of lambda_1 - lambda_2."""
    facts = json.loads((Path(__file__).resolve().parent.parent / "figures"
                        / "euclidean-hyperplanes.json").read_text())
    assert facts["theory_rate"] == pytest.approx(0.5)
    for r in facts["rows"]:
        assert r["at_most_three"] == r["seeds"] and r["levels"]["max"] <= 3
        assert abs(r["eigenvalue"]["median"] - 1.0) < 1e-2
        assert r["rate"]["median"] == pytest.approx(facts["theory_rate"], rel=0.2)


def test_qk_alone_leaves_v_the_identity_and_its_values():
    """dynamics() with qk alone fills V with the identity: the fit then says 1 and 0."""
    x = np.random.default_rng(4).standard_normal((5, 3))
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    qk = np.random.default_rng(5).standard_normal((3, 3))
    assert dynamics("softmax", 1.0, qk=qk).v.shape == (1, 3, 3)
    _, obs, _, _ = run_kernel(x, model=dict(attention="softmax", beta=1.0, qk=qk), n_saves=1)
    assert (obs[0, COLUMN.v_eigenvalue], obs[0, COLUMN.v_eigen_residual]) == (1.0, 0.0)
