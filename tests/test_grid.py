"""Grid expansion: order, ids, seeding, shards."""

import numpy as np
import pytest

from sweep.core import config
from sweep.core.grid import axes, expand, shard
from sweep.core.simulate import initial_state


def cfg(grid, **sections):
    return config.from_dict({"name": "g", "grid": grid, **sections})


def test_cartesian_order_is_c_order_of_declared_axes():
    jobs = expand(cfg({"d": [3, 4], "beta": [0.0, 1.0, 2.0]}))
    assert [(j.params["d"], j.params["beta"]) for j in jobs] == [
        (3, 0.0), (3, 1.0), (3, 2.0), (4, 0.0), (4, 1.0), (4, 2.0)]
    assert [j.index for j in jobs] == list(range(6))


def test_value_forms():
    grid = axes(cfg({"beta": {"logspace": [-1, 1, 3]}, "n": {"range": [2, 9, 3]},
                     "seed": {"range": [0, 2]}}))
    np.testing.assert_allclose(grid[0].values[0], [0.1, 1.0, 10.0])
    assert grid[0].log and not grid[1].log
    assert grid[1].values[0] == (2, 5, 8)
    assert grid[2].values[0] == (0, 1)


def test_zip_is_one_dimension_named_after_its_first_axis():
    grid = axes(cfg({"zip": [{"n": [8, 16], "dt": [0.1, 0.05]}], "beta": [1.0, 2.0]}))
    assert grid[0].name == "n" and grid[0].keys == ("n", "dt")
    jobs = expand(cfg({"zip": [{"n": [8, 16], "dt": [0.1, 0.05]}], "beta": [1.0, 2.0]}))
    assert len(jobs) == 4
    assert jobs[2].model.n == 16 and jobs[2].integrate.dt == 0.05


def test_dotted_axis_names_and_seed_default():
    grid = axes(cfg({"model.beta": [1.0]}))
    assert [a.name for a in grid] == ["beta", "seed"]
    assert grid[1].values[0] == (0,)


def test_ids_are_stable_and_depend_on_resolved_parameters_only():
    a = expand(cfg({"beta": [1.0, 2.0]}))
    b = expand(cfg({"beta": [2.0, 1.0, 3.0]}))
    assert a[0].id == b[1].id and a[1].id == b[0].id
    assert len({j.id for j in b}) == 3
    c = expand(cfg({"beta": [1.0]}, model={"beta": 1.0}))
    assert c[0].id == a[0].id  # same resolved job, however it was declared


def test_start_depends_only_on_seed_init_n_d():
    jobs = expand(cfg({"beta": [0.0, 5.0], "attention": ["softmax", "unnormalized"],
                       "seed": [0, 1]}))
    starts = {(j.params["seed"]): [] for j in jobs}
    for j in jobs:
        starts[j.params["seed"]].append(initial_state(j))
    for xs in starts.values():
        for x in xs[1:]:
            np.testing.assert_array_equal(x, xs[0])
    assert not np.array_equal(starts[0][0], starts[1][0])


@pytest.mark.parametrize("k", [1, 2, 3, 7, 50])
def test_shards_cover_every_job_exactly_once(k):
    jobs = expand(cfg({"beta": {"linspace": [0, 1, 11]}, "seed": {"range": [0, 2]}}))
    seen = sorted(j.index for i in range(k) for j in shard(jobs, i, k))
    assert seen == list(range(len(jobs)))
    assert [j.index for j in shard(jobs, k - 1, k)] == list(range(k - 1, len(jobs), k))


def test_bad_shard():
    with pytest.raises(config.ConfigError):
        shard([], 3, 3)
