"""The hysteresis figure: its make rule's script on a reduced run of the shipped config, and
the docs quoting the numbers of its sidecar."""

import json
import subprocess
import sys
from pathlib import Path

from helpers import invoke

ROOT = Path(__file__).resolve().parents[1]


def test_figure_script_writes_the_figure_and_its_sidecar(tmp_path):
    res, kappa, png = tmp_path / "h.nc", tmp_path / "k.nc", tmp_path / "fig" / "h.png"
    r = invoke("run", ROOT / "configs/hysteresis.yaml", "--out", res, "--workers", 1,
               "--set", "model.n=16", "--set", "integrate.t_max=2",
               "--set", "grid.noise=[0.12, 0.36]", "--set", "grid.seed={range: [0, 2]}")
    assert r.exit_code == 0, r.output
    assert invoke("theory", "kappa-c", "--d", 8, "--beta", 3, "-o", kappa).exit_code == 0
    subprocess.run([sys.executable, ROOT / "figures/hysteresis.py", res, kappa, png],
                   check=True, capture_output=True)
    facts = json.loads(png.with_suffix(".json").read_text())
    assert png.stat().st_size > 10_000
    assert facts["noise_c"] == 0.193 and facts["beta_star"] == 1.2666 and facts["n"] == 16
    assert set(facts["edges"]) == {"uniform", "clusters"}


def test_docs_quote_the_committed_sidecar():
    facts = json.loads((ROOT / "figures/hysteresis.json").read_text())
    text = (ROOT / "docs/theory.md").read_text()
    edges = [facts["edges"][k][b] for k in ("uniform", "clusters")
             for b in ("threshold", "threshold_low", "threshold_high")]
    for x in edges + [facts["noise_c"], facts["beta_star"]]:
        assert f"{x:g}" in text, x
    lo, hi = facts["window"]
    assert facts["noise_c"] < lo < hi  # the window lies beyond the linear threshold
