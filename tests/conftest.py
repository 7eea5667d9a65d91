import numpy as np
import pytest

from sweep import states


@pytest.fixture
def rng():
    return np.random.default_rng(12345)


def sphere_points(n, d, seed=0):
    return states.uniform(n, d, np.random.default_rng(seed))
