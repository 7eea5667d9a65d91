"""Random matrices drawn once and redrawn (configs/random-matrices.yaml, configs/redrawn-
matrices.yaml, figures/random_matrices.py): the sidecar of reduced runs, the physics it
reports (under softmax too, a symmetric Q^T K = V keeps the energy climbing, segment by
segment when it is redrawn), and the committed sidecar behind the tables of docs/models.md."""

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from helpers import invoke

ROOT = Path(__file__).resolve().parents[1]
# at most 3 values per axis, 2 seeds, 8 tokens, 4 saves: as tests/test_configs.py shrinks them
REDUCED = ["--set", "model.n=8", "--set", "integrate.t_max=2.0", "--set", "grid.seed=[0, 1]"]
ONCE = "configs/random-matrices.yaml"
REDRAWN = "configs/redrawn-matrices.yaml"


def figure_script():
    spec = importlib.util.spec_from_file_location("random_matrices",
                                                  ROOT / "figures/random_matrices.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def same_runs(a: dict, b: dict) -> bool:
    """Two rows' numbers, their grid labels left out."""
    keys = set(a) - {"qk", "v", "beta", "redraw_every", "fell_within", "worst_within"}
    return all(a[k] == b[k] for k in keys)


@pytest.fixture(scope="module")
def reduced_sidecar(tmp_path_factory):
    folder = tmp_path_factory.mktemp("random-matrices")
    once, redrawn = folder / "once.nc", folder / "redrawn.nc"
    r = invoke("run", ROOT / ONCE, "--out", once, "--workers", 1, *REDUCED)
    assert r.exit_code == 0, r.output
    r = invoke("run", ROOT / REDRAWN, "--out", redrawn, "--workers", 1, *REDUCED,
               "--set", "grid.redraw_every=[0.5, 1.0, 2.0]", "--set", "grid.beta=[4.0]")
    assert r.exit_code == 0, r.output
    png = folder / "figures" / "random-matrices.png"
    subprocess.run([sys.executable, ROOT / "figures/random_matrices.py", once, redrawn, png],
                   check=True, capture_output=True)
    assert png.stat().st_size > 5_000
    return json.loads(png.with_suffix(".json").read_text())


def test_sidecar_of_the_reduced_runs(reduced_sidecar):
    facts = reduced_sidecar
    assert facts["n"] == 8 and facts["t_max"] == 2.0 and facts["seeds"] == 2
    assert [(r["qk"], r["v"]) for r in facts["once"][::2]] == [
        ("identity", "identity"), ("goe", "identity"), ("goe", "qk"),
        ("gaussian", "identity"), ("gaussian", "qk")]  # identity / qk is the identity: left out
    assert [(r["v"], r["redraw_every"]) for r in facts["redrawn"]] == [
        (v, tau) for v in ("qk", "identity") for tau in (0.5, 1.0, 2.0)]
    assert len(facts["span"]) == 5 and all(len(s["y"]) == 5 for s in facts["span"])
    for r in facts["once"] + facts["redrawn"]:
        assert r["runs"] == 2 and 0 <= r["clustered"] <= 2
        assert 1 <= r["span_dimension"]["min"] <= r["span_dimension"]["max"] <= 8
        assert r.get("fell_within", 0) <= r["fell"]


def test_the_symmetric_model_climbs_its_energy_under_softmax(reduced_sidecar):
    """a_ij = softmax_j(beta <x_i, M x_j>), v_i = P_x sum_j a_ij M x_j with M symmetric: the
    gradient of E_beta in x_i times n^2 / Z_i > 0, so E_beta never falls (docs/models.md)."""
    once = {(r["qk"], r["v"], r["beta"]): r for r in reduced_sidecar["once"]}
    for beta in (1.0, 4.0):
        assert once[("goe", "qk", beta)]["fell"] == 0
        assert once[("identity", "identity", beta)]["fell"] == 0
    for r in reduced_sidecar["redrawn"]:
        if r["v"] == "qk":
            assert r["fell_within"] == 0, r  # a gradient flow within each segment
    # the redraws themselves change the energy's function: it falls across them
    assert sum(r["fell"] for r in reduced_sidecar["redrawn"]
               if r["v"] == "qk" and r["redraw_every"] < 2.0) > 0


def test_a_tau_of_t_max_is_the_drawn_once_run(reduced_sidecar):
    """The redrawn sweep at tau = t_max reproduces the drawn-once sweep's GOE rows, the
    same draws from the same starts (tests/test_redraw.py checks the bits)."""
    once = {(r["v"], r["beta"]): r for r in reduced_sidecar["once"] if r["qk"] == "goe"}
    last = [r for r in reduced_sidecar["redrawn"] if r["redraw_every"] == 2.0]
    assert len(last) == 2 and all(same_runs(r, once[(r["v"], r["beta"])]) for r in last)
    assert all(r["fell_within"] == r["fell"] for r in last)


def test_redraw_crossings_are_the_intervals_after_each_segments_last_save():
    crossings = figure_script().redraw_crossings
    assert list(np.flatnonzero(crossings(1.0, 0.5, 7))) == [2, 4]
    assert not crossings(3.0, 0.5, 7).any()  # tau = t_max: no redraw


def test_committed_sidecar_behind_the_docs_tables():
    facts = json.loads((ROOT / "figures/random-matrices.json").read_text())
    assert facts["configs"] == [ONCE, REDRAWN] and facts["t_max"] == 30.0
    for r in facts["once"]:
        if r["qk"] == "identity" or (r["qk"], r["v"]) == ("goe", "qk"):
            assert r["fell"] == 0, r
    assert sum(r["fell"] for r in facts["once"]) > 0  # the other variants are no gradient flow
    once = {(r["v"], r["beta"]): r for r in facts["once"] if r["qk"] == "goe"}
    for r in facts["redrawn"]:
        if r["v"] == "qk":
            assert r["fell_within"] == 0, r
        if r["redraw_every"] == facts["t_max"]:
            assert same_runs(r, once[(r["v"], r["beta"])]), r
