"""configs/phase-glpr-reference.yaml, the run of arXiv 2312.10794's public code, at reduced size:
its checkpoints are saves of the config, and its clustering statistic is the seed mean of
clustered_fraction."""

from pathlib import Path

import numpy as np
import yaml

import reference as ref
from helpers import invoke, load

CONFIG = Path(__file__).resolve().parents[1] / "configs" / "phase-glpr-reference.yaml"


def test_the_reference_checkpoints_are_saves_of_the_config():
    integ = yaml.safe_load(CONFIG.read_text())["integrate"]
    steps = ref.checkpoint_steps(integ["t_max"], integ["dt"], 200)
    k = np.arange(200)
    # the rule the config states: checkpoint k is the state at step max(1, ceil(300 k / 199))
    np.testing.assert_array_equal(steps, np.maximum(1, -(-300 * k // 199)))
    stride = round(integ["save_every"] / integ["dt"])
    assert stride == 1 and steps.max() * integ["dt"] <= integ["t_max"] + 1e-9


def test_pooled_pair_statistic_is_the_seed_mean_of_clustered_fraction(tmp_path):
    out = tmp_path / "reference.nc"
    result = invoke("run", CONFIG, "--set", "grid.beta={linspace: [0.1, 9.0, 3]}",
                    "--set", "grid.seed={range: [0, 6]}", "--set", "integrate.t_max=12.0",
                    "--set", "output.positions=trajectory", "--out", out, "--workers", 1)
    assert result.exit_code == 0, result.output
    ds = load(out)
    positions = ds.positions.transpose("beta", "time", "seed", "token", "component").values
    pooled = ref.pooled_clustering(positions)
    assert ((pooled > 0.05) & (pooled < 0.95)).sum() > 20  # a statistic that is not all 0 or 1
    np.testing.assert_allclose(ds.clustered_fraction.mean("seed").transpose("beta", "time"),
                               pooled, rtol=0, atol=1e-15)
