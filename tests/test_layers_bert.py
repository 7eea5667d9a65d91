"""A trained BERT as a layer model, on a tiny random BERT built here: `sweep extract --full`,
`sweep probe --save-embeddings`, and a layer-model config whose hidden states are the
model's, layer by layer; components switched off; the weights folder's checks."""

import json
import math

import numpy as np
import pytest
import yaml

import reference
from helpers import invoke, load, tiny_model_dir
from sweep.config import schema as config
from sweep.config.grid import expand
from sweep.execution.layers import params
from sweep.pretrained import bert
from sweep.pretrained import probing as probe

TEXT = "hello world, the tokens clustered! a b"
SAME = ("order_parameter", "mean_cosine", "min_cosine", "clustered_fraction", "n_clusters",
        "largest_cluster")  # the observables that depend on the positions alone


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    """(model, raw tensors, model dir, weights folder, embeddings file, text file)."""
    tmp = tmp_path_factory.mktemp("tiny-layers")
    path, tensors = tiny_model_dir(tmp / "model")
    text = tmp / "t.txt"
    text.write_text(TEXT)
    result = invoke("extract", "--model", path, "--full", "--controls", "-o", tmp / "full")
    assert result.exit_code == 0, result.output
    result = invoke("probe", "--model", path, "--text", text, "-o", tmp / "p.nc",
                    "--save-embeddings", tmp / "e.npy")
    assert result.exit_code == 0, result.output
    return bert.open_model(str(path)), tensors, path, tmp / "full", tmp / "e.npy", text


def layer_config(tiny, tmp_path, **model):
    m = tiny[0]
    n = np.load(tiny[4]).shape[0]
    cfg = {"name": "tiny-layers",
           "model": {"layers": len(m.layers), "d": m.d, "n": n, "heads": m.heads,
                     "norm": "post", "head_combine": "sum", "ffn": "mlp",
                     "weights": str(tiny[3]), **model},
           "init": {"kind": "file", "path": str(tiny[4])},
           "output": {"path": str(tmp_path / "l.nc"), "positions": "trajectory"}}
    path = tmp_path / "l.yaml"
    path.write_text(yaml.safe_dump(cfg, sort_keys=False))
    return path


def test_save_embeddings_is_the_models_layer_0(tiny):
    model = tiny[0]
    trace = bert.forward(model, model.tokenizer.encode(TEXT))
    saved = np.load(tiny[4])
    assert saved.dtype == np.float64 and np.array_equal(saved, trace.hidden[0])


def test_the_full_folder_holds_every_weight_in_float64(tiny):
    model, raw, _, folder, _, _ = tiny
    index = json.loads((folder / "index.json").read_text())
    assert (index["d"], index["heads"], index["layers"], index["head_combine"]) == \
        (model.d, model.heads, len(model.layers), "sum")
    entry = index["files"][1]
    arrays = {k: np.load(folder / f) for k, f in entry.items() if k != "layer"}
    assert all(a.dtype == np.float64 for a in arrays.values())
    p, dh = "encoder.layer.1.", model.d_head
    wq, wk = raw[p + "attention.self.query.weight"], raw[p + "attention.self.key.weight"]
    bq = raw[p + "attention.self.query.bias"]
    head = slice(dh, 2 * dh)  # head 1, written out
    np.testing.assert_allclose(arrays["qk"][1], wq[head].T.astype(float) @ wk[head] /
                               math.sqrt(dh), rtol=1e-12)
    np.testing.assert_allclose(arrays["qk_bias"][1], wk[head].T.astype(float) @ bq[head] /
                               math.sqrt(dh), rtol=1e-12)
    wo, bo = raw[p + "attention.output.dense.weight"], raw[p + "attention.output.dense.bias"]
    bv = raw[p + "attention.self.value.bias"]
    np.testing.assert_allclose(arrays["v_bias"], wo.astype(float) @ bv + bo, rtol=1e-12)
    assert np.array_equal(arrays["ffn_w1"], raw[p + "intermediate.dense.weight"])
    assert np.array_equal(arrays["ln2_gain"], raw[p + "output.LayerNorm.weight"])
    assert np.array_equal(np.load(folder / index["embeddings_ln"]["gain"]),
                          raw["embeddings.LayerNorm.weight"])


def test_the_layer_model_is_the_model_layer_by_layer(tiny, tmp_path):
    model, raw, _, _, _, text = tiny
    result = invoke("run", layer_config(tiny, tmp_path))
    assert result.exit_code == 0, result.output
    ds = load(tmp_path / "l.nc")
    hidden = ds.positions.isel(seed=0).values
    ids = model.tokenizer.encode(TEXT)
    want, _ = reference.bert_forward({k.removeprefix("bert."): v.astype(float)
                                      for k, v in raw.items()}, ids, model.heads, model.eps)
    assert hidden.shape == want.shape
    np.testing.assert_allclose(hidden, want, rtol=0, atol=1e-12)
    np.testing.assert_allclose(hidden, bert.forward(model, ids).hidden, rtol=0, atol=1e-13)
    probed = load(tiny[2].parent / "p.nc")
    for name in SAME:
        np.testing.assert_allclose(ds[name].isel(seed=0), probed[name], rtol=1e-12,
                                   atol=1e-14, err_msg=name)
    np.testing.assert_allclose(ds.token_norm.isel(seed=0), probed.token_norm, rtol=1e-12)


def test_components_switch_off_what_they_name(tiny, tmp_path):
    path = layer_config(tiny, tmp_path)
    cfg = config.load(path)
    full = params.blocks(j := expand(cfg)[0], None)
    for name, check in {
        "no_ffn": lambda b, f: b.ffn is None and b.ln2 == f.ln2,
        "identity_ffn": lambda b, f: b.ffn.w is None and b.ffn.w2 is None,
        "v_identity": lambda b, f: b.v is None and b.v_bias is None and b.combine == "mean"
        and b.qk is f.qk,
        "no_ln_gain": lambda b, f: b.ln1[0] is None and b.ln2[0] is None
        and b.ln1[1] is f.ln1[1],
    }.items():
        off = params.blocks(expand(config.load(path, [f"model.components={name}"]))[0], None)
        assert all(check(b, f) for b, f in zip(off, full)), name
    assert j.model.components == "full" and full[0].ffn.w2 is not None


def test_a_components_axis_runs_and_labels_its_values(tiny, tmp_path):
    path = layer_config(tiny, tmp_path)
    components = ["full", "no_ffn", "identity_ffn", "v_identity", "no_ln_gain"]
    result = invoke("run", path, "--set", f"grid.components={components}",
                    "--set", "output.positions=none")
    assert result.exit_code == 0, result.output
    ds = load(tmp_path / "l.nc")
    assert list(ds.components.values) == components
    cos = ds.mean_cosine.isel(seed=0)
    assert np.array_equal(cos.sel(layer=0).values, np.full(5, cos.values[0, 0]))
    assert len({float(c) for c in cos.sel(layer=2).values}) == 5  # each changes the output


def test_the_gaussian_controls_keep_each_matrix_norm(tiny, tmp_path):
    folder = tiny[3]
    trained = json.loads((folder / "index.json").read_text())["files"]
    control = json.loads((folder / "index-gaussian.json").read_text())["files"]
    for a, b in zip(trained, control):
        for name in ("qk", "v", "ffn_w1", "ffn_w2"):
            m, g = np.load(folder / a[name]), np.load(folder / b[name])
            assert a[name] != b[name] and not np.allclose(m, g)
            axes = (1, 2) if m.ndim == 3 else (0, 1)
            np.testing.assert_allclose(np.linalg.norm(g, axis=axes),
                                       np.linalg.norm(m, axis=axes), rtol=1e-12)
        assert a["qk_bias"] == b["qk_bias"] and a["ln1_gain"] == b["ln1_gain"]
    qk = np.load(folder / control[0]["qk"])
    assert np.allclose(qk.astype(np.float32), probe.norm_matched_gaussian(
        probe.score_matrices(tiny[0], 1), np.random.default_rng([1, 0])), rtol=1e-6)
    result = invoke("run", layer_config(tiny, tmp_path, weights=str(
        folder / "index-gaussian.json")))
    assert result.exit_code == 0, result.output


@pytest.mark.parametrize("edit, message", [
    (lambda i, f: i.update(heads=3), "heads is 3, the model has heads=2"),
    (lambda i, f: i.update(format="other"), "not a weights index"),
    (lambda i, f: i["files"][1].update(layer=7), "files[1] must be the mapping of layer 2"),
    (lambda i, f: i["files"][0].update(gain="x.npy"), "unknown array(s) gain"),
    (lambda i, f: i["files"][0].pop("ffn_w2"), "model.ffn: mlp needs ffn_w2 in every layer"),
    (lambda i, f: np.save(f / "bad.npy", np.ones((3, 3))) or i["files"][1].update(v="bad.npy"),
     "model.weights: layer 2 v: "),
])
def test_a_broken_weights_folder_is_one_line_naming_it(tiny, tmp_path, edit, message):
    folder = tmp_path / "w"
    folder.mkdir()
    index = json.loads((tiny[3] / "index.json").read_text())
    for entry in index["files"]:
        entry.update({k: str(tiny[3] / f) for k, f in entry.items() if k != "layer"})
    edit(index, folder)
    (folder / "index.json").write_text(json.dumps(index))
    result = invoke("plan", layer_config(tiny, tmp_path, weights=str(folder)))
    assert result.exit_code == 2, result.output
    line = result.output.strip()
    assert len(line.splitlines()) == 1 and message in line, line


def test_save_embeddings_to_an_unwritable_place_is_exit_1_in_one_line(tiny, tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("")
    result = invoke("probe", "--model", tiny[2], "--text", tiny[5], "-o", tmp_path / "p.nc",
                    "--save-embeddings", blocker / "e.npy")
    assert result.exit_code == 1 and "Traceback" not in result.output
    assert "e.npy: cannot write" in result.output.strip().splitlines()[-1]
