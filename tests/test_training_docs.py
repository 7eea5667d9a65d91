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
