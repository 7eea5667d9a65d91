"""The JAX peer of `make bench` (benchmarks/jax_peer.py, jax_targets.py) and the reference
workload it shares with the NumPy peer (benchmarks/workload.py): the NumPy peer counts what
`sweep run` counts; JAX counts what the NumPy peer counts (only where jax is installed: it is
an optional benchmark dependency); the comparison of a JAX run with sweep's results file and
the rows it gives (without jax)."""

import sys
from pathlib import Path

import numpy as np
import pytest

from helpers import invoke

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
import jax_peer  # noqa: E402
import jax_targets  # noqa: E402
import workload  # noqa: E402

BETAS, SEEDS, T_MAX = [1.0, 4.0, 9.0], 6, 12.0
STEPS = round(T_MAX / workload.DT)


@pytest.fixture(scope="module")
def swept(tmp_path_factory):
    """`sweep run` of the reference config at BETAS x SEEDS seeds to T_MAX, and the peers'
    systems from sweep's starts: (results path, x, beta)."""
    out = tmp_path_factory.mktemp("jax") / "reference.nc"
    result = invoke("run", workload.CONFIG, "--set", f"grid.beta={BETAS}",
                    "--set", f"grid.seed={{range: [0, {SEEDS}]}}",
                    "--set", f"integrate.t_max={T_MAX}", "--out", out, "--workers", 1)
    assert result.exit_code == 0, result.output
    return (out, *workload.systems(workload.sweep_starts(SEEDS), np.array(BETAS)))


def test_the_numpy_peer_counts_the_pairs_sweep_counts(swept):
    out, x, beta = swept
    counted = workload.numpy_phase(x, beta, steps=STEPS)
    assert ((counted > 0.05) & (counted < 0.95)).sum() > 50  # neither all 0 nor all 1
    same = jax_targets.agreement(counted, out)
    assert same == {"cells": len(BETAS) * SEEDS * (STEPS + 1), "cells_differing": 0,
                    "max_pairs_differing": 0}


def test_other_starts_or_betas_are_seen_as_different(swept):
    out, x, beta = swept
    other = workload.numpy_phase(*workload.systems(workload.random_starts(SEEDS),
                                                   np.array(BETAS)), steps=STEPS)
    assert jax_targets.agreement(other, out)["cells_differing"] > 100
    shifted = workload.numpy_phase(x, beta[::-1].copy(), steps=STEPS)
    assert jax_targets.agreement(shifted, out)["max_pairs_differing"] > 10
    one_pair = workload.numpy_phase(x, beta, steps=STEPS)
    one_pair[4, 7] += 1.0 / (workload.N * (workload.N - 1))
    assert jax_targets.agreement(one_pair, out) | {"cells": 0} == {
        "cells": 0, "cells_differing": 1, "max_pairs_differing": 1}
    with pytest.raises(ValueError, match="cells"):
        jax_targets.agreement(one_pair[:, :-1], out)


def test_systems_are_beta_major_with_every_start_at_every_beta():
    starts = workload.random_starts(3, 4, 2)
    x, beta = workload.systems(starts, np.array([0.5, 2.0]))
    np.testing.assert_array_equal(beta, [0.5, 0.5, 0.5, 2.0, 2.0, 2.0])
    np.testing.assert_array_equal(x[3:], starts)
    np.testing.assert_allclose(np.linalg.norm(x, axis=-1), 1.0, rtol=0, atol=1e-15)


def test_without_jax_nothing_is_measured_and_the_reason_is_given(monkeypatch, tmp_path):
    monkeypatch.setitem(sys.modules, "jax", None)  # import jax raises ImportError
    assert not jax_peer.available() and jax_peer.euler_steps_or_none() is None
    for entry in (jax_targets.entry(tmp_path, 2), jax_targets.small(tmp_path, {})):
        assert entry == {"measured": False, "why": jax_peer.MISSING}
    assert not list(tmp_path.iterdir())


def test_jax_counts_the_pairs_the_numpy_peer_counts(swept):
    pytest.importorskip("jax")
    out, x, beta = swept
    counted = np.asarray(jax_peer.reference_fn(steps=STEPS)(x, beta))
    assert jax_targets.agreement(counted, out)["cells_differing"] == 0
    np.testing.assert_allclose(counted, workload.numpy_phase(x, beta, steps=STEPS),
                               rtol=0, atol=1e-15)


def test_jax_steps_as_the_numpy_reference_step():
    pytest.importorskip("jax")
    from reference_step import numpy_steps

    xs = workload.random_starts(4, 16, 3)
    steps_fn = jax_peer.euler_steps_or_none()
    np.testing.assert_allclose(steps_fn(xs, 4.0, 0.05, 40), numpy_steps(xs, 4.0, 0.05, 40),
                               rtol=0, atol=1e-12)
    assert steps_fn.compile_s > 0
