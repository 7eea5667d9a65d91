"""Flows' cosine histograms over time (output.hist_bins, sweep.observables.cosines): the
fractions against a plain loop over pairs, one line for bad values, the results through
parts and merge bit for bit whatever the shards, workers or resume, no other bit moved, and
the memory the plan counts."""

import json

import numpy as np
import pytest
import yaml

import reference as ref
import sweep
from helpers import invoke
from sweep.execution.kernel import job_memory
from sweep.observables import cosines
from sweep.pretrained import histograms


def loop_fractions(x, bins):
    """The fraction of pairs i < j per bin, bin k = [-1 + k w, -1 + (k + 1) w), the last one
    closed, by a loop over the pairs."""
    n, counts = len(x), np.zeros(bins)
    for i in range(n):
        for j in range(i + 1, n):
            c = min(1.0, max(-1.0, float(np.dot(x[i], x[j]))))
            counts[min(bins - 1, int((c + 1.0) / (2.0 / bins)))] += 1
    return counts / counts.sum()


@pytest.mark.parametrize("bins", [1, 4, 7, 40])
def test_fractions_are_a_loop_over_pairs(bins):
    rng = np.random.default_rng(bins)
    traj = ref.normalize(rng.standard_normal((3, 9, 4)))
    traj[2, :5] = traj[2, 0]  # five equal tokens: cosines of 1 land in the last bin
    got = cosines.fractions(traj, bins)
    for s in range(3):
        assert got[s] == pytest.approx(loop_fractions(traj[s], bins), abs=1e-15)
    assert np.allclose(got.sum(axis=1), 1.0)
    assert got[2, -1] >= 10 / 36  # the ten pairs of equal tokens


def test_non_finite_saves_and_single_tokens_are_nan():
    traj = ref.normalize(np.random.default_rng(0).standard_normal((2, 5, 3)))
    traj[1, 2, 0] = np.nan
    got = cosines.fractions(traj, 6)
    assert np.isfinite(got[0]).all() and np.isnan(got[1]).all()
    assert np.isnan(cosines.fractions(traj[:, :1], 6)).all()


def test_the_probe_shares_the_bins_and_their_names():
    x = ref.normalize(np.random.default_rng(1).standard_normal((2, 7, 3)))
    data, coords = histograms.variables(x, 8)
    flow = cosines.coordinates(8)
    assert set(data) == {"cosine_hist", "bin_bounds"} and set(coords) == {"bin"}
    assert np.array_equal(coords["bin"][1], flow["bin"][1])
    assert np.array_equal(data["bin_bounds"][1], flow["bin_bounds"][1])
    # the probe's density is the flow's fraction over the bin width
    assert np.allclose(data["cosine_hist"][1] * 2 / 8, cosines.fractions(x, 8))


def config(tmp_path, name="h", **output):
    return sweep.load({"name": name, "model": {"attention": "softmax", "d": 3, "n": 12},
                       "integrate": {"dt": 0.1, "t_max": 2.0, "save_every": 0.5},
                       "grid": {"beta": [0.5, 4.0], "seed": {"range": [0, 3]}},
                       "output": {"path": str(tmp_path / f"{name}.nc"), **output}})


def test_a_run_records_each_saves_histogram(tmp_path):
    with sweep.run(config(tmp_path, hist_bins=10), workers=1) as ds:
        h = ds.cosine_hist.load()
        assert h.dims == ("beta", "seed", "time", "bin") and h.sizes["bin"] == 10
        assert np.allclose(h.sum("bin"), 1.0)
        assert np.allclose(ds.bin_bounds.values, np.column_stack(
            [np.linspace(-1, 1, 11)[:-1], np.linspace(-1, 1, 11)[1:]]))
        assert "positions" not in ds  # asked for no positions: none kept
        assert h.attrs["long_name"] == cosines.FLOW_ATTRS["long_name"]
    with sweep.run(config(tmp_path, "t", hist_bins=10, positions="trajectory"),
                   workers=1) as ds:
        traj = ds.positions.values
        assert np.array_equal(ds.cosine_hist.values, h.values)
    for b in range(2):
        for s in range(3):
            assert np.array_equal(h.values[b, s], cosines.fractions(traj[b, s], 10))
    # clustering moves mass to the last bin at large beta
    assert h.isel(beta=1, time=-1, bin=-1).mean() > h.isel(beta=1, time=0, bin=-1).mean()


def test_no_other_bit_moves_and_ids_stay(tmp_path):
    off, on = config(tmp_path, "off"), config(tmp_path, "on", hist_bins=5)
    assert off.hash == config(tmp_path, "off", hist_bins=0).hash != on.hash
    assert "hist_bins" not in off.to_dict()["output"]
    assert [j.id for j in sweep.plan(off).jobs] == [j.id for j in sweep.plan(on).jobs]
    with sweep.run(off, workers=1) as a, sweep.run(on, workers=1) as b:
        assert set(b.data_vars) - set(a.data_vars) == {"cosine_hist", "bin_bounds"}
        for name in a.data_vars:
            if name != "wall_seconds":
                assert np.array_equal(a[name].values, b[name].values, equal_nan=True), name


def test_shards_workers_and_resume_give_the_same_bits(tmp_path):
    whole = config(tmp_path, "whole", hist_bins=6)
    with sweep.run(whole, workers=1) as ds:
        want = ds.cosine_hist.values
    split = config(tmp_path, "split", hist_bins=6)
    assert sweep.run(split, workers=1, shard="0/2") is None
    with sweep.run(split, workers=2) as ds:  # resumes: the other shard's jobs only
        assert np.array_equal(ds.cosine_hist.values, want)
    with sweep.merge(split) as ds:
        assert np.array_equal(ds.cosine_hist.values, want)


def test_the_plan_counts_the_histograms_memory(tmp_path):
    job = sweep.plan(config(tmp_path, hist_bins=50)).jobs[0]
    off, on = job_memory(job), job_memory(job, "none", 50)
    pairs, saves = 12 * 11 // 2, job.integrate.n_saves
    assert off["output.hist_bins"] == 0
    assert on["output.hist_bins"] >= saves * 12 * 3 * 8 + pairs * 8 + saves * 50 * 8
    # a trajectory kept anyway is not counted twice
    assert job_memory(job, "trajectory", 50)["output.hist_bins"] < on["output.hist_bins"]


@pytest.mark.parametrize("value", [-1, 2.5, "many", True])
def test_bad_hist_bins_is_one_line(tmp_path, value):
    raw = {"name": "bad", "model": {"n": 4}, "grid": {"beta": [1.0]},
           "output": {"hist_bins": value}}
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump(raw))
    result = invoke("plan", path)
    assert result.exit_code == 2, result.output
    line = result.output.strip()
    assert "\n" not in line and "Traceback" not in line and "output.hist_bins" in line


def test_layer_models_are_refused(tmp_path):
    raw = {"name": "layers", "model": {"n": 4, "layers": 2}, "grid": {"beta": [1.0]},
           "output": {"hist_bins": 4}}
    path = tmp_path / "layers.yaml"
    path.write_text(json.dumps(raw))
    result = invoke("plan", path)
    assert result.exit_code == 2 and "output.hist_bins" in result.output
    assert "Traceback" not in result.output
