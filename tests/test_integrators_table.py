"""docs/integrators.md: its table is the committed JSON's, and the JSON says what the doc says."""

import json
import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
import integrators  # noqa: E402


def committed():
    return json.loads(integrators.JSON.read_text())


def test_the_doc_holds_the_table_of_the_committed_json():
    doc = integrators.DOC.read_text()
    assert integrators.with_table(doc, integrators.table(committed())) == doc
    assert "python benchmarks/integrators.py" in doc and committed()["seeds"] == 128


def test_the_published_boundaries_say_what_the_doc_says():
    times = {k: np.array(v, dtype=float) for k, v in committed()["boundary_time"].items()}
    assert np.isfinite(times["rk4"]).all()
    converged = np.abs(times["rk4 dt 0.02"] / times["rk4"] - 1)
    assert converged.max() < 1e-3 and max(committed()["rk4_cosine_gap"]) < 1e-4
    assert np.all(times["layer"] > times["rk4"])  # the slowed clock: later, every beta
    assert np.all(np.abs(times["euler"] - times["rk4"]) < np.abs(times["layer"] - times["rk4"]))


def test_boundary_time_interpolates_the_first_crossing():
    t = np.arange(6) * 0.5
    assert integrators.boundary_time(t, np.array([0, 0.2, 0.4, 0.6, 0.4, 0.9])) == \
        pytest.approx(1.25)
    assert integrators.boundary_time(t, np.full(6, 0.49)) is None


def test_a_small_measurement_runs_every_integrator():
    times, gap = integrators.measure([1.0], seeds=2, t_max=15.0)
    assert set(times) == set(integrators.RUNS) and 0 < gap[0] < 1e-4
    assert all(v[0] is not None and 0 < v[0] < 15 for v in times.values())
