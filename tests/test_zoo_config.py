"""The model zoo's config keys, input files, starts and matrices, through plan and run."""

from pathlib import Path

import numpy as np
import pytest
import xarray as xr
import yaml
from typer.testing import CliRunner

import reference as ref
from helpers import per_job
from sweep.cli import app
from sweep.config import schema as config
from sweep.config.grid import expand
from sweep.errors import ConfigError
from sweep.execution import states
from sweep.execution.simulate import initial_state, job_dynamics, simulate

BASE = {
    "name": "z",
    "model": {"attention": "softmax", "beta": 1.0, "d": 3, "n": 6},
    "integrate": {"method": "euler", "dt": 0.1, "t_max": 1.0, "save_every": 0.5},
    "grid": {"seed": [0, 1]},
}


def write(tmp_path, cfg, name="c.yaml"):
    path = tmp_path / name
    path.write_text(yaml.safe_dump(cfg, sort_keys=False))
    return path


def with_keys(**sections):
    cfg = yaml.safe_load(yaml.safe_dump(BASE))
    for section, values in sections.items():
        cfg.setdefault(section, {}).update(values)
    return cfg


def plan(path, *extra):
    return CliRunner().invoke(app, ["plan", str(path), *extra])


BAD = [
    ({"model": {"attention": "sigmoid"}}, "model.attention"),
    ({"model": {"heads": 0}}, "model.heads"),
    ({"model": {"head_beta": [1.0, -1.0], "heads": 2}}, "model.head_beta"),
    ({"model": {"head_beta": 2.0}}, "model.head_beta"),
    ({"model": {"head_beta": [1.0, 2.0]}}, "model.head_beta"),        # heads = 1
    ({"model": {"qk": "random"}}, "model.qk"),
    ({"model": {"v": "transpose"}}, "model.v"),
    ({"model": {"ffn": "relu"}}, "model.ffn"),
    ({"model": {"mask": "sparse"}}, "model.mask"),
    ({"model": {"mask": "window"}}, "model.mask"),
    ({"model": {"mask": "topk:7"}}, "model.mask"),                    # n = 6
    ({"model": {"mask": "groups:7"}}, "model.mask"),
    ({"model": {"mask": "leaders:6"}}, "model.mask"),
    ({"model": {"noise": -0.1}}, "model.noise"),
    ({"model": {"noise": 0.1}, "integrate": {"method": "rk4"}}, "integrate.method"),
    ({"init": {"kind": "clusters", "clusters": 7}}, "init.clusters"),
    ({"init": {"kind": "clusters", "spread": -1.0}}, "init.spread"),
    ({"init": {"kind": "file"}}, "init.path"),
    ({"init": {"kind": "file", "path": "missing.npy"}}, "init.path"),
    ({"model": {"qk": "missing.npy"}}, "model.qk"),
]


@pytest.mark.parametrize("change,named", BAD, ids=[n + str(i) for i, (_, n) in enumerate(BAD)])
def test_bad_zoo_input_is_refused_at_plan_time(tmp_path, change, named):
    result = plan(write(tmp_path, with_keys(**change)))
    assert result.exit_code == 2, result.output
    line = result.output.strip()
    assert "\n" not in line and "Traceback" not in line and named in line


def test_noise_with_the_layer_step_runs_as_the_reference_steps():
    # Euler-Maruyama with the layer's drift: x <- normalize(x + dt v + sqrt(2 D dt) P_x(xi))
    cfg = config.from_dict(with_keys(model={"noise": 0.2, "mask": "leaders:1"},
                                     integrate={"method": "layer"}))
    job = expand(cfg)[1]
    got = simulate(job, "final")
    model = dict(attention="softmax", beta=1.0, noise=0.2, mask="leaders:1",
                 noise_key=job_dynamics(job).noise_key)
    want_obs, want_x = ref.zoo_trajectory(initial_state(job), model, "layer", 0.1, 5, 3, 1e-3)
    assert got.status == 0
    np.testing.assert_allclose(got.positions, want_x, rtol=0, atol=1e-12)
    np.testing.assert_allclose(got.observables, want_obs, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("key,shape,ok", [
    ("qk", (3, 3), True), ("qk", (2, 3, 3), True), ("qk", (3, 3, 3), False),
    ("v", (2, 3, 3), True), ("v", (3, 4), False), ("ffn", (3, 3), True),
    ("ffn", (2, 3, 3), False), ("qk", (4, 4), False)])
def test_matrix_files_are_shape_checked(tmp_path, key, shape, ok):
    (tmp_path / "in").mkdir()
    np.save(tmp_path / "in" / "m.npy", np.ones(shape))
    cfg = with_keys(model={key: "in/m.npy", "heads": 2})
    result = plan(write(tmp_path, cfg))  # the path is relative to the config file
    assert result.exit_code == (0 if ok else 2), result.output
    if not ok:
        assert f"model.{key}" in result.output and str(shape) in result.output


@pytest.mark.parametrize("key", ["model.qk", "init.path"])
def test_input_file_with_non_finite_values_is_refused(tmp_path, key):
    x = np.eye(3) if key == "model.qk" else np.ones((6, 3))  # the base config: n = 6, d = 3
    x[1, 1] = np.nan
    np.save(tmp_path / "bad.npy", x)
    change = ({"model": {"qk": "bad.npy"}} if key == "model.qk"
              else {"init": {"kind": "file", "path": "bad.npy"}})
    result = plan(write(tmp_path, with_keys(**change)))
    assert result.exit_code == 2, result.output
    line = result.output.strip()
    assert "\n" not in line and key in line and "holds non-finite values" in line


def test_matrix_file_reaches_every_head_and_changes_the_job_id(tmp_path):
    m = np.diag([1.0, 2.0, 3.0])
    np.save(tmp_path / "m.npy", m)
    path = write(tmp_path, with_keys(model={"qk": "m.npy", "v": "qk", "heads": 2}))
    jobs = expand(config.load(path))
    dyn = job_dynamics(jobs[0])
    assert not dyn.identity and dyn.qk.shape == (2, 3, 3)
    np.testing.assert_array_equal(dyn.qk[1], m)
    np.testing.assert_array_equal(dyn.v, dyn.qk)
    np.save(tmp_path / "m.npy", 2 * m)
    again = expand(config.load(path))
    assert jobs[0].id != again[0].id
    np.testing.assert_array_equal(job_dynamics(again[0]).qk[0], 2 * m)


def test_start_file_with_one_start_per_seed(tmp_path):
    starts = np.random.default_rng(0).standard_normal((2, 6, 3))
    np.save(tmp_path / "x0.npy", starts)
    path = write(tmp_path, with_keys(init={"kind": "file", "path": "x0.npy"}))
    jobs = expand(config.load(path))
    for job in jobs:
        want = starts[job.seed] / np.linalg.norm(starts[job.seed], axis=1, keepdims=True)
        np.testing.assert_allclose(initial_state(job), want, atol=1e-15)
    result = plan(path, "--set", "grid.seed=[0, 2]")
    assert result.exit_code == 2 and "init.path" in result.output and "seed 2" in result.output


def test_random_matrices_depend_on_seed_d_heads_qk_v_only(tmp_path):
    cfg = with_keys(model={"qk": "gaussian", "v": "orthogonal", "heads": 2})
    cfg["grid"] = {"beta": [0.5, 2.0], "mask": ["dense", "causal"], "seed": [0, 1]}
    jobs = expand(config.load(write(tmp_path, cfg)))
    dyns = [job_dynamics(j) for j in jobs]
    for job, dyn in zip(jobs, dyns):
        same = dyns[jobs.index(next(j for j in jobs if j.seed == job.seed))]
        np.testing.assert_array_equal(dyn.qk, same.qk)
        np.testing.assert_array_equal(dyn.v, same.v)
    assert not np.array_equal(dyns[0].qk, dyns[1].qk)  # seeds differ
    v = dyns[0].v[0]
    np.testing.assert_allclose(v @ v.T, np.eye(3), atol=1e-12)


def test_new_starts(rng):
    x = states.clusters(12, 4, 3, 0.01, rng)
    np.testing.assert_allclose(np.linalg.norm(x, axis=1), 1.0)
    g = x @ x.T
    same = (np.arange(12)[:, None] % 3) == (np.arange(12)[None, :] % 3)
    assert g[same].min() > 0.99 and g[~same].max() < 0.99
    c = states.circle(8, 5, rng)
    g = c @ c.T
    np.testing.assert_allclose(np.diag(g, 1), np.cos(2 * np.pi / 8), atol=1e-12)
    assert np.linalg.matrix_rank(c, tol=1e-10) == 2


def test_run_with_head_beta_zip_and_matrices(tmp_path):
    cfg = with_keys(model={"qk": "gaussian", "v": "qk", "mask": "window:2", "noise": 0.05,
                           "ffn": "gaussian"})
    cfg["grid"] = {"zip": [{"head_beta": [[1.0], [0.5, 3.0]], "heads": [1, 2]}],
                   "seed": [0, 1]}
    path = write(tmp_path, cfg)
    out = tmp_path / "r.nc"
    result = CliRunner().invoke(app, ["run", str(path), "--out", str(out), "--workers", "2"])
    assert result.exit_code == 0, result.output
    with xr.open_dataset(out) as ds:
        assert list(ds.head_beta.values) == ["1", "0.5,3"]
        assert list(ds.heads.values) == [1, 2]
        assert (ds.status == 0).all() and np.isfinite(ds.energy).all()
    job = expand(config.load(path))[3]
    a, b = simulate(job), simulate(job)
    np.testing.assert_array_equal(a.observables, b.observables)  # noise is reproducible


def test_one_compiled_kernel_serves_every_model(tmp_path):
    from sweep.execution.compiling import warm_up
    from sweep.kernels.general.drive import integrate

    np.save(tmp_path / "m.npy", np.eye(3))
    cfg = with_keys(model={"qk": "m.npy", "v": "gaussian", "ffn": "m.npy", "heads": 2,
                           "attention": "hardmax", "mask": "topk:3", "noise": 0.1},
                    init={"kind": "clusters", "clusters": 2})
    job = expand(config.load(write(tmp_path, cfg)))[0]
    warm_up([job])
    before = len(integrate.signatures)
    simulate(job)
    assert len(integrate.signatures) == before


# these read what `sweep extract` and `sweep probe` write: test_configs.py makes those inputs
MADE_INPUTS = ("trained-vs-random.yaml", "minilm-layers.yaml", "minilm-identity.yaml")
TRAINING = "train-"  # `sweep train` configs: test_training.py runs them


@pytest.mark.parametrize("path", sorted(
    str(p) for p in (Path(__file__).parents[1] / "configs").glob("*.yaml")
    if p.name not in MADE_INPUTS and not p.name.startswith(TRAINING)))
def test_ready_configs_plan(path):
    assert expand(config.load(path))


def huge_header(path):
    """An .npy whose header claims 10^12 float64 values, followed by none of them."""
    header = {"descr": "<f8", "fortran_order": False, "shape": (10**6, 10**6)}
    with open(path, "wb") as f:
        np.lib.format.write_array_header_1_0(f, header)


@pytest.mark.parametrize("make,word", [
    (lambda p: np.savez(p.with_suffix(".npz"), a=np.eye(3)) or
     p.with_suffix(".npz").rename(p), "an .npz archive"),
    (lambda p: p.write_bytes(b""), "an empty file"),
    (huge_header, "shape (1000000, 1000000), expected (3, 3)"),  # told before reading
    (lambda p: __import__("os").mkfifo(p), "a FIFO, not a regular file"),
    (lambda p: p.symlink_to("/dev/zero"), "a device, not a regular file"),
    (lambda p: p.mkdir(), "a directory, not a regular file"),
    (lambda p: np.save(p, np.eye(3) + 1j), "dtype complex128 is not real numbers"),
    (lambda p: np.save(p, np.array([["a"] * 3] * 3)), "is not real numbers"),
    (lambda p: p.write_bytes(open_npy(np.eye(3))[:-8]), "shorter than its header's shape"),
    (lambda p: p.write_bytes(open_npy(np.eye(3)) + b"tail"), "longer than its header's shape"),
    (lambda p: np.save(p, np.eye(4)), "shape (4, 4), expected (3, 3) or (1, 3, 3)"),
], ids=["npz", "empty", "huge-header", "fifo", "dev-zero", "directory", "complex", "text",
        "truncated", "trailing", "wrong-shape"])
def test_unusable_matrix_files_are_one_line_naming_key_and_file(tmp_path, make, word):
    make(tmp_path / "m.npy")
    line = plan(write(tmp_path, with_keys(model={"qk": "m.npy"}))).output.strip()
    assert line.startswith(f"error: model.qk: {tmp_path / 'm.npy'}: ") and "\n" not in line
    assert word in line


def open_npy(array):
    import io

    buffer = io.BytesIO()
    np.save(buffer, array)
    return buffer.getvalue()


def test_a_job_computes_from_the_bytes_its_id_names(tmp_path, monkeypatch):
    """An input edited while a sweep runs: the jobs that start after the edit fail, naming
    the file, instead of saving the new file's numbers under the old file's job ids; with the
    file restored, the next run completes to the very dataset of an undisturbed run."""
    from helpers import merged
    from sweep.execution import runner
    from sweep.storage.store import Store

    m = np.diag([1.0, 2.0, 3.0])
    np.save(tmp_path / "m.npy", m)
    cfg = config.load(write(tmp_path, with_keys(model={"qk": "m.npy"},
                                                grid={"beta": [0.5, 1.0, 2.0], "seed": [0, 1]})))
    jobs, undisturbed = expand(cfg), Store(cfg, tmp_path / "straight.nc")
    runner.run(jobs, undisturbed)
    straight = merged(undisturbed, jobs)
    store, started = Store(cfg, tmp_path / "edited.nc"), []

    def edited_before_the_third(job, *args, **kwargs):
        started.append(job)
        if len(started) == 3:  # one job at a time: the first two read the planned file
            np.save(tmp_path / "m.npy", 2 * m)
        return simulate(job, *args, **kwargs)

    monkeypatch.setattr(runner, "simulate_batch", per_job(edited_before_the_third))
    report = runner.run(jobs, store, workers=1)
    monkeypatch.undo()
    assert (report.completed, len(report.failed)) == (2, len(jobs) - 2)
    for _, error in report.failed:
        assert error.startswith(f"ConfigError: model.qk: {tmp_path / 'm.npy'}: changed since "
                                "this sweep was planned")
    with pytest.raises(ConfigError, match="changed since this sweep was planned"):
        job_dynamics(jobs[0])
    np.save(tmp_path / "m.npy", m)
    assert not runner.run(jobs, store).failed
    again = merged(store, jobs).drop_vars("wall_seconds")
    again.attrs["history"] = straight.attrs["history"]  # the time of each merge, to the second
    xr.testing.assert_identical(again, straight.drop_vars("wall_seconds"))
