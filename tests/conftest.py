import numpy as np
import pytest
import yaml

from helpers import SMALL
from sweep.execution import states


@pytest.fixture
def rng():
    return np.random.default_rng(12345)


def sphere_points(n, d, seed=0):
    return states.uniform(n, d, np.random.default_rng(seed))


ARRAY_VARIABLES = ("SWEEP_SHARD", "SWEEP_SHARDS", "SLURM_ARRAY_TASK_ID", "SGE_TASK_ID",
                   "PBS_ARRAY_INDEX", "LSB_JOBINDEX")


@pytest.fixture(autouse=True)
def _outside_any_job_array(monkeypatch):
    """Tests run the whole sweep unless they say otherwise, even inside a scheduler's array."""
    for name in ARRAY_VARIABLES:
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def cfg_path(tmp_path):
    path = tmp_path / "small.yaml"
    path.write_text(yaml.safe_dump(SMALL, sort_keys=False))
    return path
