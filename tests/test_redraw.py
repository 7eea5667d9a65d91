"""model.redraw_every (docs/models.md): random attention matrices drawn afresh every tau time
units. A tau of t_max or more is the run without redraws bit for bit; the first segment is
that run's; each later segment is integrate() from the previous segment's last positions
under its own draw; shards and workers keep the bits; bad input is one line."""

from __future__ import annotations

import copy

import numpy as np
import pytest
import yaml

from helpers import invoke, load
from sweep.config import schema
from sweep.config.grid import expand
from sweep.execution.simulate import job_dynamics, simulate
from sweep.kernels.codes import OBSERVABLES
from sweep.kernels.general.drive import integrate

BASE = {"name": "redraw",
        "model": {"d": 4, "n": 6, "beta": 1.5, "qk": "gaussian", "v": "orthogonal",
                  "noise": 0.02, "heads": 2},
        "integrate": {"t_max": 4.0, "dt": 0.1, "save_every": 0.5}}


def job_of(**model):
    raw = copy.deepcopy(BASE)
    raw["model"].update(model)
    return expand(schema.from_dict(raw))[0]


def same(a, b):
    return np.array_equal(a, b, equal_nan=True)


def test_a_tau_of_t_max_or_more_is_the_run_without_redraws():
    plain = simulate(job_of(), "trajectory")
    for tau in (4.0, 10.0):
        once = simulate(job_of(redraw_every=tau), "trajectory")
        assert same(once.observables, plain.observables)
        assert same(once.positions, plain.positions)


def test_each_segment_runs_its_own_draw_from_where_the_last_one_ended():
    job, plain = job_of(redraw_every=1.0), simulate(job_of(), "trajectory")
    ran = simulate(job, "trajectory")
    assert same(ran.observables[:3], plain.observables[:3])  # segment 0: t = 0, 0.5, 1
    assert not same(ran.observables[3:], plain.observables[3:])
    integ = job.integrate
    for k in (1, 2, 3):
        start = 2 * k  # the save at t = k
        x = ran.positions[start].copy()
        obs = np.full((3, len(OBSERVABLES)), np.nan)
        traj = np.full((3, 6, 4), np.nan)
        integrate(x, job_dynamics(job, k), 0, integ.dt, integ.save_stride,
                  integ.cluster_eps, obs, traj, np.zeros(1, dtype=np.int64))
        assert same(obs[1:], ran.observables[start + 1:start + 3])
        assert same(traj[1:], ran.positions[start + 1:start + 3])
    draws = [job_dynamics(job, k) for k in range(3)]
    assert not np.array_equal(draws[0].qk, draws[1].qk)
    assert not np.array_equal(draws[1].v, draws[2].v)
    assert draws[1].noise_key != draws[2].noise_key
    assert np.array_equal(job_dynamics(job, 1).qk, draws[1].qk)  # a function of (seed, k)


def test_shards_and_workers_keep_the_bits(tmp_path):
    raw = copy.deepcopy(BASE)
    raw["model"]["redraw_every"] = 1.0
    raw["grid"] = {"seed": [0, 1, 2], "beta": [0.5, 2.0]}
    path = tmp_path / "r.yaml"
    path.write_text(yaml.safe_dump(raw))
    assert invoke("run", path, "--out", tmp_path / "one.nc").exit_code == 0
    for i in range(2):
        done = invoke("run", path, "--out", tmp_path / "split.nc", "--shard", f"{i}/2",
                      "--workers", 2)
        assert done.exit_code == 0, done.output
    merged = invoke("merge", path, "--out", tmp_path / "split.nc")
    assert merged.exit_code == 0, merged.output
    one, split = load(tmp_path / "one.nc"), load(tmp_path / "split.nc")
    for name in OBSERVABLES:
        np.testing.assert_array_equal(one[name], split[name], err_msg=name)


@pytest.mark.parametrize(("model", "message"), [
    ({"qk": "identity", "v": "identity"}, "gaussian or orthogonal"),
    ({"redraw_every": 0.7}, "whole multiple of integrate.save_every"),
    ({"redraw_every": 0.0}, "model.redraw_every"),
    ({"layers": 2}, "needs a flow"),
])
def test_bad_redraw_settings_are_one_line_naming_the_key(tmp_path, model, message):
    raw = copy.deepcopy(BASE)
    raw["model"].update({"redraw_every": 1.0, **model})
    if "layers" in model:
        raw.pop("integrate")  # a layer model has no clock
    path = tmp_path / "r.yaml"
    path.write_text(yaml.safe_dump(raw))
    result = invoke("plan", path)
    assert result.exit_code == 2 and message in result.output, result.output
    assert "Traceback" not in result.output
