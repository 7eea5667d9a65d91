"""Grid expansion: order, ids, seeding, shards."""

import numpy as np
import pytest

from helpers import spelled_out_id
from sweep.config import schema as config
from sweep.config.grid import axes, expand, kinds, shard
from sweep.errors import ConfigError
from sweep.execution.simulate import initial_state


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
    with pytest.raises(ConfigError):
        shard([], 3, 3)


# ---------------------------------------------------------------- ids, lazily built jobs

ID_CONFIGS = {
    "plain": {"model": {"d": 3, "n": 4}, "grid": {"beta": [0.0, 1.5], "seed": {"range": [0, 2]}}},
    "zip": {"model": {"d": 3, "heads": 2, "head_beta": [1.0, 2.0]},
            "integrate": {"t_max": 1.0, "save_every": 0.5},
            "grid": {"zip": [{"n": [4, 6], "dt": [0.1, 0.05]}], "attention": ["softmax", "relu"]},
            "output": {"positions": "final"}},
    "files": {"model": {"d": 3, "n": 4, "qk": "qk.npy", "v": "qk"},
              "init": {"kind": "file", "path": "start.npy"},
              "grid": {"seed": [0, 1], "beta": [1.0, 2.0]}},
    "head_beta": {"model": {"d": 3, "n": 4, "heads": 2},
                  "grid": {"head_beta": [[1.0, 2.0], [0.5, 3.25]], "mask": ["dense", "window:1"]}},
}
# The ids these configs had before jobs were built lazily: results on disk keep their ids.
KNOWN_IDS = {
    "plain": ["92a2664f824b5b43", "a460e7137a4bf09d", "402d990a7b4aa91f", "2f91c816283cbade"],
    "zip": ["faabb9f4c692c611", "ab41c23121196873", "3c3b80118301f761", "186e7e0f2460dce8"],
    "files": ["88f5e64fd155aead", "5b6d108496f7f215", "9c72c389f33d01e7", "2272df6095919399"],
    "head_beta": ["f82024bd42490b32", "521e19f229db7ef6", "817183d173edb506",
                  "21d9b095358f7bff"],
}


def id_config(tmp_path, name):
    np.save(tmp_path / "qk.npy", np.arange(9.0).reshape(3, 3) / 10)
    np.save(tmp_path / "start.npy", np.random.default_rng(0).standard_normal((2, 4, 3)))
    return config.from_dict({"name": "ids", **ID_CONFIGS[name]}, source=tmp_path / "c.yaml")


@pytest.mark.parametrize("name", list(ID_CONFIGS))
def test_job_ids_of_existing_configs_are_unchanged(tmp_path, name):
    cfg = id_config(tmp_path, name)
    jobs = expand(cfg)
    assert [j.id for j in jobs] == KNOWN_IDS[name]
    assert all(j.id == spelled_out_id(j, cfg.output.positions) for j in jobs)
    assert [jobs[i].id for i in range(-len(jobs), len(jobs))] == 2 * KNOWN_IDS[name]
    assert [j.id for j in jobs[1::2]] == KNOWN_IDS[name][1::2]
    with pytest.raises(IndexError):
        jobs[len(jobs)]


def test_a_key_added_later_enters_the_id_once_it_is_set(tmp_path):
    """beta_scale and the layer models' keys stay out of an id at their defaults (the ids
    above), and change it when set, even to a value of the same effect."""
    plain = ID_CONFIGS["plain"]
    ids = {}
    for name, extra in {"default": {}, "beta_scale": {"beta_scale": "d"},
                        "layers": {"layers": 1}, "norm": {"layers": 1, "norm": "post"}}.items():
        model = {**plain["model"], **extra}
        jobs = expand(config.from_dict({"name": "ids", **plain, "model": model}))
        ids[name] = jobs[0].id
        assert jobs[0].id == spelled_out_id(jobs[0], "none")
    assert ids["default"] == KNOWN_IDS["plain"][0] and len(set(ids.values())) == 4


def test_kinds_stand_for_every_job_of_equal_cost():
    jobs = expand(cfg({"beta": [0.0, 1.0], "jitter": [0.0, 0.1, 0.2], "seed": {"range": [0, 4]},
                       "n": [3, 5]}))
    found = list(kinds(jobs))
    assert sum(count for _, count in found) == len(jobs) == 48
    assert [(j.model.beta, j.model.n) for j, _ in found] == [
        (0.0, 3), (0.0, 5), (1.0, 3), (1.0, 5)]  # jitter and seed change only the start
    assert {count for _, count in found} == {12}
    assert [(j, 1) for j in list(jobs)[:3]] == list(kinds(list(jobs)[:3]))
