"""configs/overlap-gap.yaml: inter-cluster attention from tight clusters, at a gap that does
not close, falls exponentially with d when beta grows with d; its figure script on a reduced
run, and the statements docs/models.md makes from the committed sidecar."""

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from helpers import invoke

ROOT = Path(__file__).resolve().parents[1]
SIDECAR = ROOT / "figures" / "overlap-gap.json"
SCALES = '[{beta_scale: [sqrt_d, d], beta: [2.82842712474619, 1.0]}]'


@pytest.fixture(scope="module")
def reduced(tmp_path_factory):
    """The config at n = 16 (4 tokens per cluster), d = 8, 16, 32, two seeds."""
    tmp = tmp_path_factory.mktemp("overlap")
    out, png = tmp / "o.nc", tmp / "fig" / "o.png"
    ran = invoke("run", ROOT / "configs/overlap-gap.yaml", "--out", out, "--workers", 1,
                 "--set", "model.n=16", "--set", f"grid.zip={SCALES}",
                 "--set", "grid.d=[8, 16, 32]", "--set", "grid.seed=[0, 1]")
    assert ran.exit_code == 0, ran.output
    subprocess.run([sys.executable, ROOT / "figures/overlap_gap.py", out, png], check=True,
                   capture_output=True)
    return png, json.loads(png.with_suffix(".json").read_text())


def test_inter_attention_falls_with_d_at_reduced_size(reduced):
    png, made = reduced
    assert png.stat().st_size > 10_000
    assert made["n"] == 16 and made["clusters"] == 4 and made["seeds"] == 2
    scales = {s["beta_scale"]: s for s in made["scales"]}
    assert list(scales) == ["sqrt_d", "d"]
    for scale in scales.values():
        rows = scale["rows"]
        assert [r["d"] for r in rows] == [8, 16, 32]
        inter = [r["inter_attention"]["median"] for r in rows]
        # the decay: lower at every larger d, by a factor growing with the step in beta_eff
        assert all(b < a for a, b in zip(inter, inter[1:])), inter
        assert all(r["overlap_gap"]["min"] > 0.3 for r in rows)  # the gap does not close
        # the rate of ln inter in beta_eff against the theory's gap
        assert scale["rate_fitted"] == pytest.approx(scale["rate_theory"], rel=0.25)
        assert scale["per_run_r"] == pytest.approx(1, abs=0.25)
    assert scales["d"]["rows"][-1]["inter_attention"]["max"] < 1e-5
    assert [r["beta"] for r in scales["d"]["rows"]] == [8, 16, 32]
    assert [r["beta"] for r in scales["sqrt_d"]["rows"]] == [8, 11, 16]


def test_the_docs_statements_hold_for_the_committed_sidecar():
    facts = json.loads(SIDECAR.read_text())
    scales = {s["beta_scale"]: s for s in facts["scales"]}
    assert [r["d"] for r in scales["d"]["rows"]] == [8, 16, 32, 64]
    # d = 8: effective beta 8 under every scaling, the same runs
    assert len({json.dumps(s["rows"][0]) for s in scales.values()}) == 1
    for name in ("sqrt_d", "d"):
        s = scales[name]
        inter = [r["inter_attention"]["median"] for r in s["rows"]]
        assert all(b < a / 5 for a, b in zip(inter, inter[1:])), (name, inter)
        assert s["rate_fitted"] == pytest.approx(s["rate_theory"], rel=0.02)
        assert s["per_run_r"] == pytest.approx(1, abs=0.03)
        assert min(r["overlap_gap"]["median"] for r in s["rows"]) > 0.6
    # beta fixed: no decay, the median within a factor 20 over d
    none = [r["inter_attention"]["median"] for r in scales["none"]["rows"]]
    assert scales["none"]["rate_fitted"] is None and max(none) < 20 * min(none)
    rows = scales["none"]["rows"]
    assert min(r["overlap_gap"]["min"] for r in rows) < 0.1  # two clusters drew together
    assert max(r["inter_attention"]["max"] for r in rows) > 0.1
    # the measured values inside the theory's bounds (k = 4: ln(2 / 12) below, 0 above)
    assert facts["lower_bound"] == pytest.approx(np.log(1 / 6), abs=1e-2)
    for s in scales.values():
        lo, hi = s["bounds"]
        assert facts["lower_bound"] - 0.01 <= lo <= hi <= 0.01
