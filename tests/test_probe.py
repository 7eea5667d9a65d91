"""The trained-transformer probe on a tiny random BERT built here: safetensors reading,
WordPiece rules, the forward pass and the per-layer observables against plain NumPy, the
extracted matrices against the model's own attention, and the CLI commands."""

import json
import math

import numpy as np
import pytest
import xarray as xr
import yaml

import reference
from helpers import invoke, tiny_model_dir, write_safetensors
from sweep.kernels.codes import RESOLVED, SERIES
from sweep.pretrained import bert
from sweep.pretrained import probing as probe

TEXT = "Héllo, the tokens clustered! A b bb world."
TOKENS = ["[CLS]", "hello", ",", "the", "token", "##s", "cluster", "##ed", "!", "a", "b", "b",
          "##b", "world", ".", "[SEP]"]


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    path, tensors = tiny_model_dir(tmp_path_factory.mktemp("tiny"))
    raw = {k: v.astype(np.float64) for k, v in tensors.items()}
    return bert.open_model(str(path)), raw, path



def test_safetensors_round_trip_and_damage(tmp_path):
    arrays = {"a": np.arange(6, dtype=np.float32).reshape(2, 3), "b": np.array([1.5, -2.0]),
              "c": np.arange(4, dtype=np.int64)}
    write_safetensors(tmp_path / "m.safetensors", arrays)
    back = bert.read_safetensors(tmp_path / "m.safetensors")
    for name, a in arrays.items():
        assert back[name].dtype == a.dtype
        np.testing.assert_array_equal(back[name], a)
    (tmp_path / "bad.safetensors").write_bytes((tmp_path / "m.safetensors").read_bytes()[:-8])
    with pytest.raises(bert.ModelError, match="bad.safetensors"):
        bert.read_safetensors(tmp_path / "bad.safetensors")


def test_wordpiece_rules(tiny):
    tok = tiny[0].tokenizer
    assert tok.tokens(TEXT) == TOKENS
    assert tok.tokens("the zzz tokens") == ["[CLS]", "the", "[UNK]", "token", "##s", "[SEP]"]
    assert tok.tokens("the\u200b\tcluster\x00") == ["[CLS]", "the", "cluster", "[SEP]"]
    # truncation (4) and padding (12) declared in tokenizer.json are never applied
    assert len(tok.encode(" ".join(["the"] * 20))) == 22
    assert len(tok.encode("")) == 2


def test_forward_matches_plain_numpy(tiny):
    model, raw, _ = tiny
    ids = model.tokenizer.encode(TEXT)
    trace = bert.forward(model, ids)
    hidden, attn = reference.bert_forward(raw, ids, heads=2, eps=1e-12)
    assert trace.hidden.shape == (3, len(TOKENS), 8)
    np.testing.assert_allclose(trace.hidden, hidden, atol=1e-12)
    np.testing.assert_allclose(trace.attention, attn, atol=1e-12)
    np.testing.assert_allclose(trace.attention.sum(axis=-1), 1.0, atol=1e-12)


def test_probe_observables_equal_a_numpy_recomputation(tiny):
    model, raw, _ = tiny
    beta, eps, threshold = 2.0, 0.05, 0.3
    ds = probe.probe(model, TEXT, beta=beta, cluster_eps=eps, threshold=threshold)
    hidden, attn = reference.bert_forward(raw, model.tokenizer.encode(TEXT), heads=2, eps=1e-12)
    assert ds.sizes == {"layer": 3, "bin": 40, "nv": 2} and list(ds.layer.values) == [0, 1, 2]
    for layer, h in enumerate(hidden):
        x = reference.normalize(h)
        want = reference.observables(x, "softmax", beta, eps)
        got = np.array([float(ds[name][layer]) for name in SERIES])
        np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12)
        coarse = reference.observables(x, "softmax", beta, 1 - threshold)
        assert float(ds.coarse_n_clusters[layer]) == coarse[4]
        assert float(ds.coarse_clustered_fraction[layer]) == pytest.approx(coarse[3])
        assert float(ds.coarse_largest_cluster[layer]) == pytest.approx(coarse[5])
        assert float(ds.pc1_share[layer]) == pytest.approx(reference.pc1_share(x), rel=1e-9)
        assert float(ds.token_norm[layer]) == pytest.approx(np.linalg.norm(h, axis=1).mean())
    p = attn[1]
    assert float(ds.model_attention_entropy[2]) == pytest.approx(-(p * np.log(p)).sum(-1).mean())
    assert math.isnan(float(ds.model_attention_entropy[0]))
    # a looser threshold can only merge clusters
    assert (ds.coarse_n_clusters <= ds.n_clusters).all()


def test_extracted_matrices_reproduce_the_attention_block(tiny):
    model, raw, _ = tiny
    trace = bert.forward(model, model.tokenizer.encode(TEXT))
    for layer in (1, 2):
        x, blk = trace.hidden[layer - 1], model.layers[layer - 1]
        qk, vo = probe.score_matrices(model, layer), probe.value_matrices(model, layer)
        assert qk.shape == vo.shape == (2, 8, 8)
        # the query bias adds b_q,h^T K_h x_j / sqrt(d_h); the key bias cancels in softmax
        k = bert.split_heads(x @ blk.wk.T, 2)
        bias = np.einsum("ha,hja->hj", blk.bq.reshape(2, 4), k) / 2.0
        s = np.einsum("id,hde,je->hij", x, qk, x) + bias[:, None, :]
        w = np.exp(s - s.max(-1, keepdims=True))
        np.testing.assert_allclose(w / w.sum(-1, keepdims=True), trace.attention[layer - 1],
                                   atol=1e-12)
        # attention output = sum_h A_h x V_h^T plus the biases (rows of A sum to one)
        v = bert.split_heads(x @ blk.wv.T + blk.bv, 2)
        context = (trace.attention[layer - 1] @ v).transpose(1, 0, 2).reshape(x.shape)
        mixed = np.einsum("hij,hde,je->id", trace.attention[layer - 1], vo, x)
        np.testing.assert_allclose(mixed + blk.wo @ blk.bv, context @ blk.wo.T, atol=1e-12)


def test_cli_probe_writes_a_layer_dataset_that_show_reads(tiny, tmp_path):
    text = tmp_path / "words.txt"
    text.write_text(TEXT, encoding="utf-8")
    out = tmp_path / "probe.nc"
    result = invoke("probe", "--text", text, "--model", tiny[2], "-o", out, "--threshold", 0.5)
    assert result.exit_code == 0, result.output
    assert "16 tokens" in result.output
    with xr.open_dataset(out) as ds:
        assert ds.sizes == {"layer": 3, "bin": 40, "nv": 2}
        for name in SERIES:
            assert ds[name].attrs["long_name"] == SERIES[name][0]
            assert ds[name].attrs["units"] == SERIES[name][1]
        for name in probe.EXTRA:
            assert ds[name].attrs["long_name"] and "units" in ds[name].attrs
        assert ds.attrs["n_tokens"] == 16 and ds.attrs["cosine_threshold"] == 0.5
        assert ds.attrs["token_ids"].split()[0] == "2"
        for key in ("Conventions", "title", "source", "history", "numpy_version"):
            assert key in ds.attrs
    shown = invoke("show", out)
    assert shown.exit_code == 0 and "layer" in shown.output and "pc1_share" in shown.output


def test_cli_extract_writes_matrices_and_index(tiny, tmp_path):
    result = invoke("extract", "--model", tiny[2], "-o", tmp_path / "m", "--controls")
    assert result.exit_code == 0, result.output
    index = json.loads((tmp_path / "m" / "index.json").read_text())
    assert (index["d"], index["heads"], index["d_head"], index["layers"]) == (8, 2, 4, 2)
    for entry in index["files"]:
        for key, make in (("qk", probe.score_matrices), ("v", probe.value_matrices)):
            m = np.load(tmp_path / "m" / entry[key])
            assert m.shape == (2, 8, 8) and m.dtype == np.float32
            np.testing.assert_allclose(m, make(tiny[0], entry["layer"]), rtol=1e-6, atol=1e-6)
            assert entry[f"{key}_frobenius"][1] == pytest.approx(np.linalg.norm(m[1]), rel=1e-5)
            g = np.load(tmp_path / "m" / entry[f"{key}_gaussian"])
            assert g.shape == m.shape and not np.allclose(g, m, atol=1e-3)
            np.testing.assert_allclose(np.linalg.norm(g, axis=(1, 2)),
                                       np.linalg.norm(m, axis=(1, 2)), rtol=1e-5)


@pytest.mark.parametrize("args, message", [
    (["--text", "missing.txt"], "missing.txt: no such text file"),
    (["--text", "{text}", "--model", "nowhere"], "--model nowhere: neither a known model"),
    (["--text", "{long}", "--model", "{model}"], "tokens: the model"),
    (["--text", "{text}", "--model", "{empty}"], "no config.json"),
])
def test_cli_probe_user_errors_exit_2_with_one_line(tiny, tmp_path, args, message):
    (tmp_path / "t.txt").write_text("the token")
    (tmp_path / "long.txt").write_text("the " * 40)  # 42 tokens, 24 positions
    (tmp_path / "empty").mkdir()
    paths = {"text": tmp_path / "t.txt", "long": tmp_path / "long.txt", "model": tiny[2],
             "empty": tmp_path / "empty"}
    result = invoke("probe", *[a.format(**paths) for a in args], "-o", tmp_path / "x.nc")
    assert result.exit_code == 2
    assert message in result.output and "Traceback" not in result.output
    assert len(result.output.strip().splitlines()) <= 2  # one message, wrapped at most once


def test_a_simulation_runs_with_the_extracted_matrices(tiny, tmp_path):
    assert invoke("extract", "--model", tiny[2], "-o", tmp_path / "m").exit_code == 0
    x0 = reference.normalize(np.random.default_rng(3).standard_normal((5, 8)))
    np.save(tmp_path / "x0.npy", x0)
    cfg = {"name": "tiny-trained",
           "model": {"d": 8, "n": 5, "heads": 2, "beta": 2.0, "qk": "m/layer2_qk.npy",
                     "v": "m/layer2_v.npy"},
           "init": {"kind": "file", "path": "x0.npy"},
           "integrate": {"dt": 0.1, "t_max": 1.0, "save_every": 0.5}}
    (tmp_path / "c.yaml").write_text(yaml.safe_dump(cfg))
    result = invoke("run", tmp_path / "c.yaml", "--out", tmp_path / "r.nc", "--workers", 1)
    assert result.exit_code == 0, result.output
    model = {"heads": 2, "beta": 2.0, "qk": np.load(tmp_path / "m" / "layer2_qk.npy"),
             "v": np.load(tmp_path / "m" / "layer2_v.npy")}
    want, _ = reference.zoo_trajectory(x0, model, "euler", 0.1, 5, 3, 1e-3)
    with xr.open_dataset(tmp_path / "r.nc") as ds:
        assert int(ds.status.max()) == 0
        got = np.stack([ds[name].values.reshape(-1) for name in SERIES], axis=1)
    np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-12)
    assert not np.allclose(got[-1], got[0])  # the tokens moved


def test_projected_and_coarse_cluster_observables_equal_a_numpy_recomputation(tiny):
    model, raw, _ = tiny
    beta, eps, threshold, k = 2.0, 0.05, 0.3, 3
    ds = probe.probe(model, TEXT, beta=beta, cluster_eps=eps, threshold=threshold, project=k)
    hidden, _ = reference.bert_forward(raw, model.tokenizer.encode(TEXT), heads=2, eps=1e-12)
    assert ds.attrs["project"] == k
    resolved = list(RESOLVED)
    for layer, h in enumerate(hidden):
        x = reference.normalize(h)
        coarse = reference.observables(x, "softmax", beta, 1 - threshold)
        got = [float(ds[f"coarse_{name}"][layer]) for name in resolved]
        want = [coarse[SERIES_INDEX[name]] for name in resolved]
        np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12)
        # centred, on the top k principal axes, renormalised
        c = x - x.mean(axis=0)
        xp = reference.normalize(c @ np.linalg.svd(c)[2][:k].T)
        want = reference.observables(xp, "softmax", beta, eps)
        got = np.array([float(ds[f"projected_{name}"][layer]) for name in SERIES])
        np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12)
        want = reference.observables(xp, "softmax", beta, 1 - threshold)
        assert float(ds.projected_coarse_n_groups[layer]) == want[SERIES_INDEX["n_groups"]]
        assert float(ds.projected_coarse_silhouette[layer]) == pytest.approx(
            want[SERIES_INDEX["silhouette"]], nan_ok=True)


SERIES_INDEX = {name: k for k, name in enumerate(SERIES)}


def test_cli_probe_project(tiny, tmp_path):
    text = tmp_path / "words.txt"
    text.write_text(TEXT, encoding="utf-8")
    out = tmp_path / "probe.nc"
    result = invoke("probe", "--text", text, "--model", tiny[2], "-o", out, "--project", 2)
    assert result.exit_code == 0, result.output
    with xr.open_dataset(out) as ds:
        assert ds.attrs["project"] == 2
        assert "top 2 principal components" in ds.projected_overlap_gap.attrs["long_name"]
        assert ds.projected_n_groups.attrs["units"] == "1"
        assert {f"projected_{name}" for name in probe.CLUSTER_NAMES} <= set(ds.data_vars)
    result = invoke("probe", "--text", text, "--model", tiny[2], "-o", out, "--project", 9)
    assert result.exit_code == 2
    assert "--project 9" in result.output and "d = 8" in result.output
    assert "Traceback" not in result.output


def test_cosine_histograms_are_numpy_histograms_of_the_pairwise_cosines(tiny):
    """Per layer, the density of the cosines <x_i, x_j>, i < j, of the unit hidden states, as
    np.histogram bins them; edges as CF bounds of the bin centres."""
    model, raw, _ = tiny
    ds = probe.probe(model, TEXT, bins=8)
    hidden, _ = reference.bert_forward(raw, model.tokenizer.encode(TEXT), heads=2, eps=1e-12)
    edges = np.linspace(-1, 1, 9)
    assert ds.cosine_hist.dims == ("layer", "bin")
    assert ds.bin.attrs["bounds"] == "bin_bounds" and ds.bin_bounds.dims == ("bin", "nv")
    np.testing.assert_array_equal(ds.bin_bounds[:, 0], edges[:-1])
    np.testing.assert_array_equal(ds.bin_bounds[:, 1], edges[1:])
    np.testing.assert_allclose(ds.bin, (edges[:-1] + edges[1:]) / 2, atol=1e-15)
    n = len(model.tokenizer.encode(TEXT))
    for layer, h in enumerate(hidden):
        x = reference.normalize(h)
        cosines = [x[i] @ x[j] for i in range(n) for j in range(i + 1, n)]
        want = np.histogram(np.clip(cosines, -1, 1), bins=edges, density=True)[0]
        np.testing.assert_allclose(ds.cosine_hist[layer], want, rtol=1e-12)
        assert float((ds.cosine_hist[layer] * 0.25).sum()) == pytest.approx(1.0)


def test_cli_probe_bins_and_sentence_labels(tiny, tmp_path):
    """--bins sets the histogram's bins; --save-labels writes each token's line, [CLS] with
    the first and [SEP] with the last."""
    text = tmp_path / "two.txt"
    text.write_text("the token\n\nb bb world.\n", encoding="utf-8")
    labels = tmp_path / "labels.npy"
    result = invoke("probe", "--text", text, "--model", tiny[2], "-o", tmp_path / "p.nc",
                    "--bins", 5, "--save-labels", labels)
    assert result.exit_code == 0, result.output
    with xr.open_dataset(tmp_path / "p.nc") as ds:
        assert ds.sizes["bin"] == 5 and ds.attrs["n_tokens"] == 9
    # [CLS] the token | b b ##b world . [SEP]
    np.testing.assert_array_equal(np.load(labels), [0, 0, 0, 1, 1, 1, 1, 1, 1])
    bad = invoke("probe", "--text", text, "--model", tiny[2], "-o", tmp_path / "q.nc",
                 "--bins", 0)
    assert bad.exit_code == 2 and "Traceback" not in bad.output
