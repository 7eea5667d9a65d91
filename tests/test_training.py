"""`sweep train` (docs/training.md): the hand-written gradients against central finite
differences, the training forward pass against the layer model itself, the zero-learning-rate
run against the untrained `sweep run` bit for bit, one step lowering its batch's loss,
determinism and common random numbers, the dataset, and bad input in one line."""

from __future__ import annotations

import copy
import os
from pathlib import Path

import numpy as np
import pytest
import yaml

from helpers import invoke, load
from sweep.execution.simulate import initial_state, layer_blocks, noise_key, simulate_layers
from sweep.kernels.general.noise import normal
from sweep.training import backprop, optimise, settings, sweeping, tasks

BASE = {
    "name": "tiny",
    "model": {"d": 3, "n": 6, "beta": 2.0, "layers": 3, "alpha": 0.4, "ffn": "gaussian",
              "noise": 0.05},
    "init": {"kind": "clusters", "clusters": 2, "spread": 0.4},
    "training": {"task": "labels", "lambda": 0.01, "lr": 0.05, "steps": 4, "batch": 3,
                 "checkpoints": 3},
}
CASES = {
    "identity attention": {},
    "gaussian qk and v, two heads": {"qk": "gaussian", "v": "gaussian", "heads": 2,
                                     "head_beta": [1.5, 0.5], "beta": 1.0},
    "no noise, no initial ffn": {"noise": 0.0, "ffn": "none"},
    "fixed features (mlp), gaussian qk": {"ffn": "mlp", "ffn_width": 5, "qk": "gaussian"},
}


def config(model=None, training=None, **top):
    raw = copy.deepcopy(BASE)
    raw["model"].update(model or {})
    raw["training"].update(training or {})
    raw.update(top)
    return raw


def first_job(raw):
    tc = settings.from_raw(raw)
    return tc, settings.jobs(tc)[0]


def problem(raw, task="labels", step=0):
    """(ws, x0, xi, t, attentions, job) of one training step at the job's own FFN."""
    tc, job = first_job(raw)
    blocks = layer_blocks(job)
    c = tasks.centres(job)
    x0, xi = tasks.draws(job, 0, step, tc.training.batch, c)
    return (sweeping.initial_ffn(blocks, job.model.d), x0, xi,
            tasks.readout(task, x0, c, job.model.beta), sweeping.fixed_parts(blocks), job)


def check_gradient(case, task, reg=None, init=None):
    ws, x0, xi, t, atts, job = problem(config(CASES[case]), task)
    ws = ws + 0.3 * np.random.default_rng(5).standard_normal(ws.shape) if init is None else \
        optimise.initial(init, 0.8, ws, 0, job.seed)  # off the start, or at an init
    m = job.model
    penalty = None if reg is None else tasks.regularizer(reg, 0.3, m.beta)

    def f(w):
        return backprop.objective(w, x0, xi, t, atts, m.alpha, m.noise, 0.01, penalty)

    assert_central_differences(f, ws)
    return f(ws)[0]


def assert_central_differences(f, ws, h=1e-5):
    """The gradient f(ws)[1] equals central differences of f(ws)[0] to 1e-6 relative."""
    _, grad = f(ws)
    numeric = np.empty_like(ws)
    for idx in np.ndindex(ws.shape):  # every layer l and entry (row, column) of W_l
        e = np.zeros_like(ws)
        e[idx] = h
        numeric[idx] = (f(ws + e)[0] - f(ws - e)[0]) / (2 * h)
    assert np.abs(grad).min() > 1e-5  # every entry is checked relative to a real signal
    assert np.max(np.abs(numeric - grad) / np.abs(grad)) < 1e-6


@pytest.mark.parametrize("task", tasks.TASKS)
@pytest.mark.parametrize("case", CASES)
def test_gradients_match_central_differences_for_every_layer_and_entry(case, task):
    check_gradient(case, task)


@pytest.mark.parametrize("reg", ["energy", "cosine"])
@pytest.mark.parametrize("case", CASES)
def test_regularizer_gradients_match_central_differences(case, reg):
    """The geometric penalty on the intermediate layers adds to the loss and its gradient
    is right in every entry of every layer."""
    assert check_gradient(case, "spread", reg) > check_gradient(case, "spread")


@pytest.mark.parametrize("init", ["gaussian", "orthogonal", "antisymmetric"])
def test_gradients_at_each_initialisation_match_central_differences(init):
    check_gradient("gaussian qk and v, two heads", "labels", "cosine", init)


def test_the_initialisations_have_their_shape_and_structure():
    w0 = np.zeros((3, 4, 4))
    q = optimise.initial("orthogonal", 2.0, w0, 0, 1)
    np.testing.assert_allclose(q @ q.transpose(0, 2, 1), np.broadcast_to(4 * np.eye(4), q.shape),
                               atol=1e-12)
    a = optimise.initial("antisymmetric", 1.0, w0, 0, 1)
    assert (a == -a.transpose(0, 2, 1)).all() and np.abs(a).max() > 0
    wide = optimise.initial("orthogonal", 1.0, np.zeros((2, 3, 5)), 0, 1)
    np.testing.assert_allclose(wide @ wide.transpose(0, 2, 1),
                               np.broadcast_to(np.eye(3), (2, 3, 3)), atol=1e-12)
    g = optimise.initial("gaussian", 1.0, w0, 0, 1)
    assert not (g == optimise.initial("gaussian", 1.0, w0, 0, 2)).all()  # the job's seed
    assert (g == optimise.initial("gaussian", 1.0, w0, 0, 1)).all()
    assert (optimise.initial("model", 1.0, w0 + 1, 0, 1) == 1).all()
    assert not optimise.initial("zero", 1.0, w0 + 1, 0, 1).any()


@pytest.mark.parametrize("init", ["gaussian", "orthogonal", "antisymmetric"])
def test_zero_learning_rate_from_an_initialisation_is_the_run_of_those_matrices(tmp_path, init):
    """One layer: the init's matrix, saved as model.ffn: W.npy, is the untrained run of
    sweep run bit for bit."""
    raw = config({"qk": "gaussian", "layers": 1, "ffn": "none"},
                 {"lr": 0.0, "init": init, "init_scale": 0.7})
    ds = trained(tmp_path, raw)
    w = ds.ffn_weight.isel(seed=0, checkpoint=0, block=0).values
    assert np.abs(w).max() > 0 and (ds.ffn_weight.isel(checkpoint=-1) == ds.ffn_weight
                                    .isel(checkpoint=0)).all()
    np.save(tmp_path / "w.npy", w)
    untrained = {k: v for k, v in raw.items() if k != "training"}
    untrained["model"] = {**raw["model"], "ffn": str(tmp_path / "w.npy")}
    assert_is_the_run(tmp_path, ds, untrained)


def test_the_mean_cosine_penalty_is_the_mean_off_diagonal_cosine():
    x = np.random.default_rng(2).standard_normal((2, 5, 3))
    x /= np.linalg.norm(x, axis=-1, keepdims=True)
    gram = x @ x.transpose(0, 2, 1)
    want = np.mean([(g.sum() - np.trace(g)) / 20 for g in gram])
    assert tasks.mean_cosine(x, 1.0)[0] == pytest.approx(want, rel=1e-12)
    assert tasks.regularizer("l2", 1.0, 1.0) is None and tasks.regularizer("cosine", 0, 1) is None


def kernel_noise(job) -> np.ndarray:
    """[1, L, n, d]: the Gaussians the compiled layer step draws (tick = layer - 1)."""
    m, key = job.model, noise_key(job)
    xi = np.empty((1, m.layers, m.n, m.d))
    for layer, i, c in np.ndindex(m.layers, m.n, m.d):
        xi[0, layer, i, c] = normal(key, (layer * m.n + i) * m.d + c)
    return xi


@pytest.mark.parametrize("case", CASES)
def test_the_training_forward_pass_is_the_layer_model(case):
    """With the kernel's own noise draws, the NumPy forward pass that training
    differentiates ends where `sweep run` of the layer model does (the compiled step)."""
    ws, _, _, _, atts, job = problem(config(CASES[case]))
    x, _ = backprop.forward(initial_state(job)[None], atts, ws, job.model.alpha,
                            job.model.noise, kernel_noise(job))
    ran = simulate_layers(job, "final")
    np.testing.assert_allclose(x[0], ran.positions, rtol=0, atol=1e-12)


def write(tmp_path, raw, name="t.yaml"):
    path = tmp_path / name
    path.write_text(yaml.safe_dump(raw, sort_keys=False))
    return path


UNTRAINED = {"general kernel": {"qk": "gaussian", "heads": 2, "noise": None},
             "a fast flow": {"ffn": "none", "noise": None},  # identity attention, no FFN
             "fixed features": {"ffn": "mlp", "ffn_width": 5, "noise": None}}


def trained(tmp_path, raw):
    done = invoke("train", write(tmp_path, raw), "-o", tmp_path / "train")
    assert done.exit_code == 0, done.output
    return load(tmp_path / "train" / "tiny.nc")


def assert_is_the_run(tmp_path, ds, untrained):
    """Every observable of ds at every checkpoint is `sweep run` of `untrained`, bit for
    bit."""
    ran = invoke("run", write(tmp_path, untrained, "u.yaml"), "--out", tmp_path / "u.nc")
    assert ran.exit_code == 0, ran.output
    want = load(tmp_path / "u.nc")
    for name in sweeping.COLUMNS:
        for c in ds.checkpoint.values:
            np.testing.assert_array_equal(ds[name].sel(checkpoint=c).transpose(*want[name].dims),
                                          want[name], err_msg=name)


def trained_as_run(tmp_path, raw):
    """sweep train of raw, checked to be sweep run of raw without its training section."""
    ds = trained(tmp_path, raw)
    assert_is_the_run(tmp_path, ds, {k: v for k, v in raw.items() if k != "training"})
    return ds


@pytest.mark.parametrize("model", UNTRAINED)
@pytest.mark.parametrize("optimizer", settings.OPTIMIZERS)
def test_zero_learning_rate_reproduces_the_untrained_run_bit_for_bit(tmp_path, optimizer, model):
    raw = config(UNTRAINED[model], {"lr": 0.0, "optimizer": optimizer},
                 grid={"noise": [0.0, 0.05] if model == "general kernel" else [0.0],
                       "seed": [0, 1]})
    raw["model"].pop("noise")
    ds = trained_as_run(tmp_path, raw)
    assert (ds.ffn_weight.isel(checkpoint=-1) == ds.ffn_weight.isel(checkpoint=0)).all()


NEW_OPTIONS = {**{task: {"task": task} for task in tasks.DISTRIBUTION},
               **{f"regularizer {r}": {"regularizer": r, "mu": 0.5}
                  for r in ("energy", "cosine")}}


@pytest.mark.parametrize("option", NEW_OPTIONS)
def test_zero_learning_rate_with_each_new_option_is_the_untrained_run(tmp_path, option):
    raw = config({"qk": "gaussian", "heads": 2}, {"lr": 0.0, **NEW_OPTIONS[option]})
    ds = trained_as_run(tmp_path, raw)
    assert (ds.eval_loss == ds.eval_loss.isel(checkpoint=0)).all()


@pytest.mark.parametrize("ffn", ["gaussian", "mlp"])
@pytest.mark.parametrize("optimizer", settings.OPTIMIZERS)
@pytest.mark.parametrize("task", tasks.TASKS)
def test_one_training_step_lowers_the_loss_on_its_batch(task, optimizer, ffn):
    raw = config({"qk": "gaussian", "ffn": ffn}, {"task": task, "optimizer": optimizer,
                                                  "steps": 1, "checkpoints": 2, "lr": 0.01})
    tc, job = first_job(raw)
    ws, x0, xi, t, atts, _ = problem(raw, task)
    (w0, w1), loss = sweeping.optimise.train(job, tc.training, atts, ws)
    m = job.model
    after, _ = backprop.objective(w1, x0, xi, t, atts, m.alpha, m.noise, tc.training.lam)
    assert loss[0] == backprop.objective(w0, x0, xi, t, atts, m.alpha, m.noise,
                                         tc.training.lam)[0]
    assert after < loss[0]


def test_runs_are_deterministic_and_share_their_draws_across_the_grid(tmp_path):
    """The same config gives the same bits; a point's numbers do not depend on which other
    lambdas or noise levels are swept beside it (common random numbers)."""
    raw = config(grid={"lambda": [0.0, 0.1], "noise": [0.0, 0.05]})
    raw["model"].pop("noise")
    raw["training"].pop("lambda")
    path = write(tmp_path, raw)
    for out in ("a", "b"):
        assert invoke("train", path, "-o", tmp_path / out).exit_code == 0
    a, b = load(tmp_path / "a" / "tiny.nc"), load(tmp_path / "b" / "tiny.nc")
    for name in a.data_vars:
        np.testing.assert_array_equal(a[name], b[name], err_msg=name)
    one = invoke("train", path, "--set", "grid.lambda=[0.1]", "--set", "grid.noise=[0.05]",
                 "-o", tmp_path / "c")
    assert one.exit_code == 0, one.output
    c = load(tmp_path / "c" / "tiny.nc")
    for name in ("loss", "order_parameter", "ffn_weight"):
        np.testing.assert_array_equal(a[name].sel({"lambda": 0.1, "noise": 0.05}),
                                      c[name].sel({"lambda": 0.1, "noise": 0.05}))


def test_shards_and_resumes_give_the_bits_of_one_run(tmp_path):
    """A train point is a job: shards write parts, a run without --shard assembles them, a
    rerun trains nothing again, and a damaged or missing part is trained again, with the
    same bits as one uninterrupted run."""
    raw = config(grid={"lambda": [0.0, 0.1], "seed": [0, 1, 2]})
    raw["training"].pop("lambda")
    path = write(tmp_path, raw)
    assert invoke("train", path, "-o", tmp_path / "one").exit_code == 0
    whole = load(tmp_path / "one" / "tiny.nc")
    for i in range(3):
        shard = invoke("train", path, "-o", tmp_path / "split", "--shard", f"{i}/3")
        assert shard.exit_code == 0 and "shard done" in shard.output, shard.output
    parts = sorted((tmp_path / "split" / "tiny.parts").glob("*.npz"))
    assert len(parts) == 6 and not (tmp_path / "split" / "tiny.nc").exists()
    parts[0].write_bytes(b"not a part")  # damaged: trained again
    parts[1].unlink()                    # missing: trained again
    parts[2].unlink()
    os.mkfifo(parts[2])                  # not a regular file: never opened for reading
    kept = {p: p.stat().st_mtime_ns for p in parts[3:]}
    assert invoke("train", path, "-o", tmp_path / "split").exit_code == 0
    assert all(p.stat().st_mtime_ns == t for p, t in kept.items())  # read, not rewritten
    merged = load(tmp_path / "split" / "tiny.nc")
    for name in whole.data_vars:
        np.testing.assert_array_equal(whole[name], merged[name], err_msg=name)
    bad = invoke("train", path, "-o", tmp_path / "x", "--shard", "3/3")
    assert bad.exit_code == 2 and "--shard" in bad.output


def test_a_training_sweep_submits_as_an_array_of_train_tasks(tmp_path, monkeypatch):
    """sweep submit of a training config: each task runs `sweep train` on the shard its array
    variables name, the merge job `sweep train` without one; run here as the scheduler would,
    the tasks and the merge give the bits of one run. sweep compile takes the config too."""
    monkeypatch.chdir(tmp_path)
    raw = config(grid={"lambda": [0.0, 0.1], "seed": [0, 1]})
    raw["training"].pop("lambda")
    path = write(tmp_path, raw)
    shown = invoke("submit", path, "--shards", 2, "--dry-run")
    assert shown.exit_code == 0, shown.output
    array, merge = shown.output.split("# ---- ")[1:3]
    assert f"sweep train {path} -o {tmp_path / 'results'}" in array and "SWEEP_SHARDS=2" in array
    assert f"sweep train {path} -o {tmp_path / 'results'}" in merge and "SHARD" not in merge
    assert invoke("compile", path).exit_code == 0
    for task in ("0", "1"):  # what the array script exports, then its command
        env = {"SWEEP_SHARDS": "2", "SWEEP_SHARD": f"{task}/2"}
        done = invoke("train", path, "-o", tmp_path / "results", env=env)
        assert done.exit_code == 0 and "shard done" in done.output, done.output
    assert len(list((tmp_path / "results" / "tiny.parts").glob("*.npz"))) == 4
    assert invoke("train", path, "-o", tmp_path / "results").exit_code == 0
    assert invoke("train", path, "-o", tmp_path / "one").exit_code == 0
    a, b = load(tmp_path / "results" / "tiny.nc"), load(tmp_path / "one" / "tiny.nc")
    for name in a.data_vars:
        np.testing.assert_array_equal(a[name], b[name], err_msg=name)


def test_the_dataset_holds_observables_losses_and_matrices_over_labelled_dims(tmp_path):
    raw = config(grid={"task": ["labels", "mean"], "lambda": [0.0, 1.0], "seed": [0, 1]})
    raw["training"].pop("lambda")
    raw["training"].pop("task")
    assert invoke("train", write(tmp_path, raw), "-o", tmp_path).exit_code == 0
    ds = load(tmp_path / "tiny.nc")
    assert ds.order_parameter.dims == ("task", "lambda", "seed", "checkpoint", "layer")
    assert list(ds.checkpoint.values) == [0, 2, 4] and list(ds.layer.values) == [0, 1, 2, 3]
    assert ds.loss.dims == ("task", "lambda", "seed", "step") and ds.sizes["step"] == 4
    assert ds.ffn_weight.dims[-4:] == ("checkpoint", "block", "row", "column")
    for name in ("n_groups", "overlap_gap", "inter_attention", "attention_entropy"):
        assert ds[name].attrs["long_name"]
    # before training every task and lambda sees the same model: the same observables
    before = ds.order_parameter.isel(checkpoint=0)
    assert (before == before.isel(task=0, **{"lambda": 0})).all()
    # a large penalty keeps the matrices smaller than none does
    size = np.abs(ds.ffn_weight.isel(checkpoint=-1)).sum(("block", "row", "column"))
    assert (size.sel({"lambda": 1.0}) < size.sel({"lambda": 0.0})).all()
    assert "lambda" in yaml.safe_load(ds.attrs["sweep_training"])["axes"]


@pytest.mark.parametrize("task", tasks.TASKS)
def test_training_lowers_the_task_loss_of_the_observed_run(tmp_path, task):
    raw = config({"qk": "gaussian"}, {"task": task, "steps": 60, "lr": 0.05, "lambda": 0.0,
                                      "checkpoints": 2}, grid={"seed": [0, 1]})
    assert invoke("train", write(tmp_path, raw), "-o", tmp_path).exit_code == 0
    ds = load(tmp_path / "tiny.nc")
    assert (ds.eval_loss.isel(checkpoint=-1) < ds.eval_loss.isel(checkpoint=0)).all()


BAD = [
    ({"training": {"lambda": -1.0}}, "training.lambda: must be >= 0"),
    ({"training": {"rate": 0.1}}, "training.rate: unknown key"),
    ({"training": {"task": "sort"}}, "training.task: 'sort' is not one of labels | mean"),
    ({"training": {"checkpoints": 9}}, "training.checkpoints: 9 checkpoints for 4 steps"),
    ({"grid": {"optimizer": ["adam", "newton"]}}, "grid.optimizer[1]: 'newton' is not one"),
    ({"grid": {"training.seed": [0, 1]}}, "grid.training.seed: not a sweepable training key"),
    ({"grid": {"d": [3, 4]}}, "grid.d: sweep train does not sweep d"),
    ({"model": {"norm": "post", "noise": 0.0, "ffn": "none"}}, "model.norm: sweep train needs"),
    ({"model": {"ffn": "linear"}}, "model.ffn"),
    ({"model": {"layers": None}}, "model.layers"),
    ({"init": {"kind": "uniform", "clusters": 4, "spread": 0.1}}, "init.kind: sweep train"),
    ({"model": {"mask": "causal"}}, "model.mask: sweep train needs mask: dense"),
    ({"training": {"regularizer": "l1"}}, "training.regularizer: 'l1' is not one of l2 |"),
    ({"training": {"mu": -0.5}}, "training.mu: must be >= 0"),
    ({"training": {"init": "eye"}}, "training.init: 'eye' is not one of model | zero"),
    ({"training": {"init": "antisymmetric"}, "model": {"ffn": "mlp", "ffn_width": 5}},
     "training.init: antisymmetric needs the square in-step FFN"),
    ({"training": {"task": "energy"}, "model": {"beta": 0.0}}, "model.beta: training.task energy"),
]


@pytest.mark.parametrize(("change", "message"), BAD, ids=[m for _, m in BAD])
def test_bad_input_is_one_line_naming_the_key_exit_2(tmp_path, change, message):
    raw = config()
    for section, values in change.items():
        if section == "grid":
            raw["grid"] = values
        else:
            raw[section].update(values)
    result = invoke("train", write(tmp_path, raw), "-o", tmp_path)
    assert result.exit_code == 2, result.output
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and message in lines[0], result.output
    assert "Traceback" not in result.output and not (tmp_path / "tiny.nc").exists()


def test_a_training_value_an_axis_sweeps_is_its_default_unless_set_just_now(tmp_path):
    from sweep.training import settings

    raw = config()
    raw["grid"] = {"lambda": [0.0, 1.0]}  # beside training.lambda: 0.01, the default
    path = write(tmp_path, raw)
    cfg = settings.load_training(path)
    assert [a.values[0] for a in cfg.axes if a.name == "lambda"] == [(0.0, 1.0)]
    result = invoke("train", path, "-o", tmp_path, "--set", "training.lambda=0.5")
    assert result.exit_code == 2 and result.output.count("\n") == 1, result.output
    assert "training.lambda: 0.5 from --set is never used, grid.lambda sweeps lambda" in \
        result.output


def test_a_config_without_a_training_section_is_refused(tmp_path):
    raw = {k: v for k, v in config().items() if k != "training"}
    result = invoke("train", write(tmp_path, raw))
    assert result.exit_code == 2 and "training: required" in result.output


# train-minilm.yaml reads a text's layer 0 that needs the model: tests/test_train_minilm.py
CONFIGS = sorted(p for p in (Path(__file__).resolve().parent.parent / "configs")
                 .glob("train-*.yaml") if p.name != "train-minilm.yaml")


@pytest.mark.parametrize("path", CONFIGS, ids=lambda p: p.stem)
def test_every_training_config_trains_end_to_end(path, tmp_path):
    """Each configs/train-*.yaml at a reduced size: two steps, one seed, eight tokens."""
    result = invoke("train", path, "--set", "training.steps=2", "--set", "training.checkpoints=2",
                    "--set", "grid.seed=[0]",
                    "--set", "model.n=8", "-o", tmp_path)
    assert result.exit_code == 0, result.output
    ds = load(tmp_path / f"{path.stem}.nc")
    assert ds.sizes["step"] == 2 and int(ds.status.max()) == 0
    assert np.isfinite(ds.loss).all()


def test_a_batch_too_large_for_memory_is_refused_naming_the_key(tmp_path):
    raw = config({"n": 4096}, {"batch": 4096})
    result = invoke("train", write(tmp_path, raw), "-o", tmp_path)
    assert result.exit_code == 2, result.output
    assert result.output.strip().startswith("error: training.batch: a training step needs")


def test_an_unwritable_output_is_one_line_exit_1(tmp_path):
    (tmp_path / "taken").write_text("a file, not a folder")
    result = invoke("train", write(tmp_path, config()), "-o", tmp_path / "taken")
    assert result.exit_code == 1, result.output
    assert len(result.output.strip().splitlines()) == 1 and "Traceback" not in result.output


def test_sweep_run_points_a_training_config_to_sweep_train(tmp_path):
    result = invoke("run", write(tmp_path, config()), "--out", tmp_path / "r.nc")
    assert result.exit_code == 2
    assert "training: a training config (sweep train CONFIG" in result.output


def test_the_python_function_takes_a_dict_and_writes_the_dataset(tmp_path):
    import sweep

    ds = sweep.train(config(), out=tmp_path,
                     overrides=["training.steps=2", "training.checkpoints=2"])
    assert ds.sizes["step"] == 2 and (tmp_path / "tiny.nc").is_file()
    assert ds.encoding["source"] == str(tmp_path / "tiny.nc")


def test_the_escape_depth_in_the_results_is_what_sweep_monotone_measures(tmp_path):
    raw = config({"layers": 4}, {"task": "spread", "lr": 0.2, "lambda": 0.0})
    assert invoke("train", write(tmp_path, raw), "-o", tmp_path).exit_code == 0
    ds = load(tmp_path / "tiny.nc").isel(seed=0)
    assert ds.escape_depth.dims == ("checkpoint",) and ds.attrs["escape_tol"] == 0.1
    cos = ds.mean_cosine.values
    peak = np.maximum.accumulate(cos, axis=-1)
    np.testing.assert_array_equal(ds.peak_fall.values, (peak - cos).max(axis=-1))
    shown = invoke("monotone", tmp_path / "tiny.nc", "--var", "mean_cosine", "--along", "layer",
                   "-o", tmp_path / "m.nc")
    assert shown.exit_code == 0 and "from its running peak" in shown.output, shown.output
    m = load(tmp_path / "m.nc")
    np.testing.assert_array_equal(m.escape_depth.isel(seed=0).values, ds.escape_depth.values)
    for c, depth in enumerate(ds.escape_depth.values):
        fell = peak[c] - cos[c] > 0.1
        if not fell.any():
            assert np.isnan(depth)
        else:
            first = int(np.argmax(fell))
            assert cos[c, int(depth)] == peak[c, first] and depth <= first


def test_the_summary_is_per_task_a_rerun_says_what_it_reused_and_layers_summarise(tmp_path):
    """Two tasks with opposite goals are summarised apart; a rerun reads every point back and
    says so; t_cluster and max_clusters per (point, checkpoint) as a layer model defines
    them: the first layer with clustered_fraction >= 1/2, the most n_clusters over l >= 1."""
    raw = config(grid={"task": ["labels", "mean"], "seed": [0, 1]},
                 model={"noise": 0.0}, integrate={"cluster_eps": 0.3})
    raw["training"].pop("task")
    path = write(tmp_path, raw)
    first = invoke("train", path, "-o", tmp_path)
    assert first.exit_code == 0, first.output
    rows = [line for line in first.output.splitlines() if "eval_loss, mean" in line]
    assert len(rows) == 2 and "labels" in rows[0] and "mean" in rows[1]
    assert "resumed" not in first.output
    again = invoke("train", path, "-o", tmp_path)
    assert again.exit_code == 0, again.output
    assert f"resumed: 4 of 4 point(s) read from {tmp_path / 'tiny.parts'}" in again.output
    assert "0 trained now" in again.output
    ds = load(tmp_path / "tiny.nc")
    assert ds.t_cluster.dims == ds.max_clusters.dims == ("task", "seed", "checkpoint")
    cf, nc = ds.clustered_fraction.values, ds.n_clusters.values
    for index in np.ndindex(ds.t_cluster.shape):
        hit = np.flatnonzero(cf[index] >= 0.5)
        want = float(ds.layer.values[hit[0]]) if hit.size else np.nan
        np.testing.assert_equal(float(ds.t_cluster.values[index]), want)
        assert ds.max_clusters.values[index] == nc[index][1:].max()
    assert np.isfinite(ds.t_cluster.values).any()
