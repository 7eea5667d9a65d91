"""configs/beta-scale.yaml: inter-cluster attention on the multi-cluster plateau per
beta_scale and d; its sidecar script on a reduced run, and the statements docs/models.md
makes from the committed sidecar."""

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from helpers import invoke

ROOT = Path(__file__).resolve().parents[1]
SIDECAR = ROOT / "figures" / "beta-scale.json"


@pytest.fixture(scope="module")
def facts():
    rows = json.loads(SIDECAR.read_text())["rows"]
    return {(r["beta_scale"], r["d"]): r for r in rows}


def test_the_sidecar_script_on_a_reduced_run(tmp_path):
    out, sidecar = tmp_path / "b.nc", tmp_path / "b.json"
    ran = invoke("run", ROOT / "configs/beta-scale.yaml", "--out", out, "--workers", 1,
                 "--set", "model.n=12", "--set", "integrate.t_max=60", "--set", "grid.d=[4, 8]",
                 "--set", "grid.seed=[0, 1]")
    assert ran.exit_code == 0, ran.output
    subprocess.run([sys.executable, ROOT / "figures/beta_scale.py", out, sidecar], check=True,
                   capture_output=True)
    made = json.loads(sidecar.read_text())
    assert made["n"] == 12 and made["t_max"] == 60 and made["seeds"] == 2
    rows = {(r["beta_scale"], r["d"]): r for r in made["rows"]}
    assert list(rows) == [(s, d) for s in ("none", "d", "sqrt_d", "log_n") for d in (4, 8)]
    # the effective betas: 8 at d = 8 for every scaling; log_n at n = 12 is 8 ln 12 / ln 32
    assert all(rows[s, 8]["beta"] == 8 for s in ("none", "d", "sqrt_d"))
    assert rows["d", 4]["beta"] == 4 and rows["sqrt_d", 4]["beta"] == 5.7
    assert rows["log_n", 4]["beta"] == pytest.approx(8 * np.log(12) / np.log(32), rel=1e-2)
    for r in rows.values():
        assert r["seeds"] == 2 and 0 <= r["plateaus"] <= 2
        if r["plateaus"]:
            assert r["n_groups"] >= 2 and 0 <= r["from_time"] <= 60
            assert 0 <= r["held_for"] <= 60 and 0 <= r["inter_attention"] <= 1
            assert -2 <= r["overlap_gap"] <= 2


def test_the_docs_statements_hold_for_the_committed_sidecar(facts):
    inter = {key: r["inter_attention"] for key, r in facts.items()}
    dims = (4, 8, 16, 32)
    # d = 8: effective beta 8 under every scaling, the same runs; log_n is none at fixed n
    assert len({json.dumps({k: v for k, v in facts[s, 8].items() if k != "beta_scale"})
                for s in ("none", "d", "sqrt_d", "log_n")}) == 1
    assert all(facts["log_n", d] == {**facts["none", d], "beta_scale": "log_n"} for d in dims)
    # fixed beta: rises with d at every step
    assert all(inter["none", a] < inter["none", b] for a, b in zip(dims, dims[1:]))
    # d and sqrt d: lower from 4 to 8, then no lower at any larger d (where there is a plateau)
    for scale in ("d", "sqrt_d"):
        assert inter[scale, 8] < inter[scale, 4]
        larger = [inter[scale, d] for d in (16, 32) if facts[scale, d]["plateaus"]]
        assert larger and min(larger) >= inter[scale, 8]
        # fragmentation: the plateau's gap shrinks as the effective beta grows from d = 8 on
        gaps = [facts[scale, d]["overlap_gap"] for d in (8, 16, 32) if facts[scale, d]["plateaus"]]
        assert len(gaps) >= 2 and all(b < a for a, b in zip(gaps, gaps[1:])), (scale, gaps)
    # d at d = 32 (beta = 32): no two groups in any run by t_max
    assert facts["d", 32]["plateaus"] == 0 and facts["d", 32]["inter_attention"] is None
    assert all(r["plateaus"] == r["seeds"] for key, r in facts.items() if key != ("d", 32))
