"""docs/training.md says what figures/training.json holds: its table and paragraph are the
sidecar's (tests/test_sidecars.py), and each claim of "Against the abstract" holds in those
numbers."""

import json
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def runs():
    return json.loads((ROOT / "figures/training.json").read_text())["runs"]


def output(run, when):
    return run["mean_cosine"][when][-1]


def test_labels_training_keeps_the_tokens_apart_and_mean_training_does_not(runs):
    for run in runs:
        trained, untrained = output(run, "after"), output(run, "before")
        if run["task"] == "labels":
            assert trained < untrained - 0.1, run
        else:
            assert trained >= untrained, run


def test_no_run_shows_clustering_falling_in_the_final_layers(runs):
    for run in runs:
        cosines = run["mean_cosine"]["after"]
        assert max(cosines) == cosines[-1], run


def test_without_penalty_the_tokens_spread_first_then_close_in(runs):
    free = [r["mean_cosine"]["after"] for r in runs if r["task"] == "labels"
            and r["lambda"] == 0]
    for cosines in free:
        assert cosines[1] < cosines[0] and min(cosines) < cosines[-1]


def test_a_larger_penalty_weakens_the_effect(runs):
    for noise in {r["noise"] for r in runs}:
        labels = sorted((r["lambda"], output(r, "after")) for r in runs
                        if r["task"] == "labels" and r["noise"] == noise)
        ends = [end for _, end in labels]
        assert all(b >= a - 0.02 for a, b in zip(ends, ends[1:])) and ends[-1] > ends[0]


@pytest.fixture(scope="module")
def phase():
    return json.loads((ROOT / "figures/train-phase.json").read_text())["runs"]


def signature(run):
    return [d is not None and d >= 1 and f >= 0.3
            for d, f in zip(run["escape_depth"], run["peak_fall"])]


def test_the_escape_appears_with_noise_and_a_small_penalty(phase):
    every = [r for r in phase if all(signature(r))]
    assert every and all(r["noise"] > 0 and 0.003 <= r["lambda"] <= 0.03 for r in every)
    assert any(r["lambda"] == 0.01 and r["noise"] == 0.05 for r in every)  # the replica's
    assert {r["lambda"] for r in every} >= {0.01, 0.03}
    for r in every:
        after = r["mean_cosine"]["after"]
        assert max(after) > max(r["mean_cosine"]["before"])  # more tightly clustered first
        assert all(5 <= d <= 8 for d in r["escape_depth"])
        assert max(r["ffn_norm"]) == r["ffn_norm"][-1]


def test_no_escape_without_noise_nor_at_a_large_penalty(phase):
    for r in phase:
        if r["noise"] == 0 or r["lambda"] >= 0.1:
            assert not any(signature(r)), r
        if r["noise"] == 0 and r["lambda"] >= 0.01:
            assert r["mean_cosine"]["after"][-1] >= 0.995 and max(r["peak_fall"]) == 0
    smallest = [r for r in phase if r["lambda"] == min(q["lambda"] for q in phase)]
    spread_first = [r["noise"] for r in smallest if r["escape_depth"] == [0] * len(
        r["escape_depth"])]
    assert 0.0 in spread_first and 0.05 in spread_first
    calm = next(r for r in smallest if r["noise"] == 0)
    after = calm["mean_cosine"]["after"]
    assert after[1] < after[0] and after[-1] < 0.1


def sidecar(name):
    return json.loads((ROOT / "figures" / name).read_text())["runs"]


def mean(values):
    return sum(values) / len(values)


def test_the_regularizers_keep_the_intermediate_layers_apart_at_no_worse_task_loss():
    runs = sidecar("train-regularizer.json")
    alone = next(r for r in runs if r["mu"] == 0)
    for kind in ("energy", "cosine"):
        mine = sorted((r for r in runs if r["regularizer"] == kind and r["mu"] > 0),
                      key=lambda r: r["mu"])
        inner = [mean(r["intermediate_cosine"]) for r in mine]
        assert inner == sorted(inner, reverse=True)
        assert inner[0] < mean(alone["intermediate_cosine"])
        assert all(mean(r["task_loss"]) < mean(alone["task_loss"]) for r in mine)
    top = {r["regularizer"]: mean(r["intermediate_cosine"]) for r in runs if r["mu"] == 0.1}
    assert top["cosine"] < top["energy"]


def test_a_symmetry_breaking_init_does_not_reach_the_stated_loss_sooner():
    runs = {r["init"]: r for r in sidecar("train-init.json")}
    zero = runs.pop("zero")
    assert None not in zero["steps_to_target"]
    for r in runs.values():
        assert None not in r["steps_to_target"]
        assert mean(r["first_loss"]) > max(zero["first_loss"])
        assert mean(r["steps_to_target"]) > 3 * mean(zero["steps_to_target"])
        assert abs(mean(r["final_task_loss"]) - mean(zero["final_task_loss"])) < 0.005
    skew = runs["antisymmetric"]["steps_to_target"]
    assert min(mean(skew) - mean(runs[k]["steps_to_target"]) for k in ("gaussian",
                                                                        "orthogonal")) > -2


@pytest.fixture(scope="module")
def minilm():
    return json.loads((ROOT / "figures" / "train-minilm.json").read_text())


def test_training_holds_the_two_sentences_apart(minilm):
    """docs/training.md, "Real tokens": per run, the trained output's between-sentence cosine
    below the untrained one's, one cluster per sentence at the output but in the most
    penalised noisy run, the tokens of a sentence condensed."""
    worst = max(minilm["runs"], key=lambda r: (r["noise"], r["lambda"]))
    for run in minilm["runs"]:
        before, after = run["before"], run["after"]
        assert after["between_cosine"][-1] < before["between_cosine"][-1] - 0.3, run
        assert after["within_cosine"][-1] > 0.9 > before["within_cosine"][-1], run
        assert after["within_cosine"][0] < 0.1  # nearly orthogonal at the input
        assert (after["n_clusters"][-1] == 2) == (run is not worst), run


def test_without_penalty_the_sentences_pass_orthogonal_mid_depth(minilm):
    mid = minilm["layers"] // 2
    for noise in {r["noise"] for r in minilm["runs"]}:
        runs = sorted((r for r in minilm["runs"] if r["noise"] == noise),
                      key=lambda r: r["lambda"])
        between = [r["after"]["between_cosine"][mid] for r in runs]
        assert between[0] < 0 and between == sorted(between), runs
        losses = [r["eval_loss"][-1] for r in runs]
        assert losses == sorted(losses), runs
        assert runs[0]["after"]["between_cosine"][-1] > between[0]  # drawn partly back
