"""One attention layer on long equiangular contexts at beta = gamma log n (arXiv 2512.01868):
the closed form against the layer computed from the Gram matrix, and its limits."""

import numpy as np
import pytest

from helpers import invoke
from sweep.analysis import theory


def layer_cosine(n, rho, gamma):
    """The output cosine computed directly: Gram G = (1 - rho) I + rho 1 1^T of the inputs,
    A = softmax(beta G) by rows, outputs' Gram A G A^T."""
    g = (1 - rho) * np.eye(n) + rho
    scores = gamma * np.log(n) * g
    a = np.exp(scores - scores.max(axis=1, keepdims=True))
    a /= a.sum(axis=1, keepdims=True)
    out = a @ g @ a.T
    return out[0, 1] / np.sqrt(out[0, 0] * out[1, 1])


def test_published_values_at_n_1024():
    got = theory.output_cosine(1024, 0.5, [1.0, 2.0, 3.0])
    assert [f"{c:.4f}" for c in got] == ["0.9991", "0.8003", "0.5154"]


@pytest.mark.parametrize("n", [2, 7, 64, 1024])
@pytest.mark.parametrize("rho", ["simplex", 0.0, 0.5, 0.9])
@pytest.mark.parametrize("gamma", [0.0, 0.5, 2.0, 3.0])
def test_closed_form_matches_the_layer(n, rho, gamma):
    rho = -0.9 / (n - 1) if rho == "simplex" else rho  # negative cosines exist down to -1/(n-1)
    assert theory.output_cosine(n, rho, gamma) == pytest.approx(layer_cosine(n, rho, gamma),
                                                                rel=1e-10, abs=1e-12)


@pytest.mark.parametrize("rho", [0.2, 0.5, 0.8])
def test_limits_below_at_and_above_gamma_c(rho):
    gamma_c = 1 / (1 - rho)
    gammas = np.array([0.5 * gamma_c, gamma_c, 1.5 * gamma_c])
    want = [1.0, 4 * rho / (1 + 3 * rho), rho]
    np.testing.assert_allclose(theory.long_context_limit(rho, gammas), want, rtol=1e-15)
    np.testing.assert_allclose(theory.output_cosine(1e14, rho, gammas), want, atol=1e-5)
    # and the approach is monotone in n on each side
    ns = np.array([1e3, 1e6, 1e9, 1e12])
    gaps = np.abs(theory.output_cosine(ns[:, None], rho, gammas) - want)
    assert np.all(np.diff(gaps, axis=0) < 0)


def test_huge_contexts_do_not_overflow():
    np.testing.assert_allclose(theory.output_cosine(1e150, 0.5, [0.1, 2.0, 3.0]),
                               [1.0, 0.8, 0.5], atol=1e-12)


def test_long_context_command(tmp_path):
    r = invoke("theory", "long-context", "--n", 1024, "--rho", 0.5, "--gamma", 1, "--gamma", 2,
               "--gamma", 3, "-o", tmp_path / "lc.nc")
    assert r.exit_code == 0, r.output
    for number in ("0.999138", "0.800273", "0.515396"):
        assert number in r.output
    r = invoke("theory", "long-context", "--n", 8, "--rho", -0.5, "--gamma", 1)
    assert r.exit_code == 2 and "rho" in r.output
