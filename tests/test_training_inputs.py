"""`sweep train` on fixed tokens (init.kind: file) with each token's label from a file
(training.labels): the centres they name, the gradient against central differences, the
zero-learning-rate run against `sweep run` bit for bit, the label cosines against a plain
loop, resumes that notice an edited labels file, and bad input in one line."""

from __future__ import annotations

import copy

import numpy as np
import pytest
from test_training import assert_central_differences, assert_is_the_run, write

from helpers import invoke, load
from sweep.training import backprop, inputs, settings, sweeping, tasks

N, D = 7, 4
LABELS = np.array([0, 0, 0, 1, 1, 1, 1])  # two "sentences", not i mod k


def setup(tmp_path, model=None, training=None, labels=LABELS):
    x = np.random.default_rng(3).standard_normal((N, D))
    np.save(tmp_path / "tokens.npy", x)
    if labels is not None:
        np.save(tmp_path / "labels.npy", labels)
    raw = {"name": "tiny",
           "model": {"d": D, "n": N, "beta": 2.0, "layers": 3, "alpha": 0.4, "ffn": "gaussian",
                     "noise": 0.05, "qk": "gaussian", **(model or {})},
           "init": {"kind": "file", "path": "tokens.npy"},
           "training": {"task": "labels", "labels": "labels.npy", "lambda": 0.01, "lr": 0.05,
                        "steps": 4, "batch": 2, "checkpoints": 3, **(training or {})}}
    return raw, x / np.linalg.norm(x, axis=1, keepdims=True)


def job_of(tmp_path, raw):
    path = write(tmp_path, raw)
    tc = settings.load_training(path)
    return tc, settings.jobs(tc)[0]


def test_the_centres_are_the_unit_means_of_each_label_and_the_inputs_are_fixed(tmp_path):
    raw, x = setup(tmp_path)
    tc, job = job_of(tmp_path, raw)
    given = inputs.of(job, tc.training)
    for k in (0, 1):
        mean = x[LABELS == k].mean(axis=0)
        np.testing.assert_allclose(given.centres[k], mean / np.linalg.norm(mean), atol=1e-14)
    np.testing.assert_array_equal(given.labels, LABELS)
    (a, xi_a), (b, xi_b) = given.draws(job, 0, 0, 2), given.draws(job, 0, 1, 2)
    np.testing.assert_allclose(a, np.broadcast_to(x, (2, N, D)), atol=1e-15)
    assert (a == b).all() and not (xi_a == xi_b).any()  # the same tokens, fresh noise
    t = tasks.targets("labels", a, given.centres, given.labels)
    assert (t[:, :3] == given.centres[0]).all() and (t[:, 3:] == given.centres[1]).all()


@pytest.mark.parametrize("task", ["labels", "mean", "spread"])
def test_gradients_on_file_tokens_match_central_differences(tmp_path, task):
    raw, _ = setup(tmp_path, training={"task": task})
    tc, job = job_of(tmp_path, raw)
    given = inputs.of(job, tc.training)
    x0, xi = given.draws(job, 0, 0, 2)
    loss = tasks.readout(task, x0, given.centres, job.model.beta, given.labels)
    blocks = sweeping.layer_blocks(job)
    atts, m = sweeping.fixed_parts(blocks), job.model
    ws = sweeping.initial_ffn(blocks, D) + 0.3 * np.random.default_rng(5).standard_normal(
        (3, D, D))

    def f(w):
        return backprop.objective(w, x0, xi, loss, atts, m.alpha, m.noise, 0.01)

    assert_central_differences(f, ws)


def test_zero_learning_rate_on_file_tokens_is_the_untrained_run_bit_for_bit(tmp_path):
    raw, _ = setup(tmp_path, training={"lr": 0.0})
    done = invoke("train", write(tmp_path, raw), "-o", tmp_path / "train")
    assert done.exit_code == 0, done.output
    ds = load(tmp_path / "train" / "tiny.nc")
    assert_is_the_run(tmp_path, ds, {k: v for k, v in raw.items() if k != "training"})
    assert (ds.eval_loss == ds.eval_loss.isel(checkpoint=0)).all()


def test_training_keeps_the_labelled_groups_apart(tmp_path):
    """Trained on labels, the observed run ends nearer its targets, and its tokens are closer
    within a label than across labels, more so than untrained."""
    raw, _ = setup(tmp_path, {"noise": 0.0}, {"steps": 60, "lr": 0.05, "lambda": 0.0})
    assert invoke("train", write(tmp_path, raw), "-o", tmp_path / "t").exit_code == 0
    ds = load(tmp_path / "t" / "tiny.nc")
    gap = (ds.within_cosine - ds.between_cosine).isel(layer=-1).values.ravel()
    loss = ds.eval_loss.values.ravel()
    assert loss[-1] < 0.5 * loss[0]
    assert gap[-1] > gap[0] + 0.1


def test_label_cosines_are_the_means_over_pairs():
    x = np.random.default_rng(1).standard_normal((2, 5, 3))
    y = np.array([0, 1, 0, 2, 1])
    got = inputs.label_cosines(x, y)
    u = x / np.linalg.norm(x, axis=-1, keepdims=True)
    for layer in range(2):
        across = [u[layer, i] @ u[layer, j] for i in range(5) for j in range(5) if y[i] != y[j]]
        inside = [u[layer, i] @ u[layer, j] for i in range(5) for j in range(5)
                  if y[i] == y[j] and i != j]
        np.testing.assert_allclose(got[layer], [np.mean(across), np.mean(inside)], atol=1e-14)


def test_an_edited_labels_file_trains_the_point_again(tmp_path):
    raw, _ = setup(tmp_path)
    path = write(tmp_path, raw)
    assert invoke("train", path, "-o", tmp_path / "o").exit_code == 0
    first = load(tmp_path / "o" / "tiny.nc")
    np.save(tmp_path / "labels.npy", LABELS[::-1].copy())
    assert invoke("train", path, "-o", tmp_path / "o").exit_code == 0
    again = load(tmp_path / "o" / "tiny.nc")
    assert len(list((tmp_path / "o" / "tiny.parts").glob("*.npz"))) == 2
    assert not (first.eval_loss == again.eval_loss).all()


@pytest.mark.parametrize(("change", "labels", "message"), [
    ({}, np.array([0, 0, 1]), "training.labels: "),
    ({}, np.array([0, 0, 0, 2, 2, 2, 2]), "1 is not"),
    ({}, np.array([0, 0, 0, 1, 1, 1, 1.5]), "integers"),
    ({"training": {"labels": "labels.txt"}}, LABELS, "training.labels: 'labels.txt'"),
    ({"training": {"labels": None}}, LABELS, "needs each token's label"),
    ({"init": {"kind": "clusters", "clusters": 2}}, LABELS, "only with init.kind: file"),
    ({"init": {"kind": "uniform"}}, LABELS, "init.kind: sweep train needs"),
])
def test_bad_labels_are_one_line_naming_the_key_exit_2(tmp_path, change, labels, message):
    raw, _ = setup(tmp_path, labels=labels)
    raw = copy.deepcopy(raw)
    for section, values in change.items():
        raw[section] = {**raw[section], **values}
        if values.get("labels", 1) is None:
            raw[section].pop("labels")
    result = invoke("train", write(tmp_path, raw), "-o", tmp_path / "o")
    assert result.exit_code == 2 and message in result.output, result.output
    assert "Traceback" not in result.output and len(result.output.strip().splitlines()) == 1
