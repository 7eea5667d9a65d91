"""A trained transformer through the simulations' lens: its tokens layer by layer, measured
with the same observables, and its attention matrices as files the `qk:` / `v:` keys read.

Layer l's hidden states h_i (l = 0 the embeddings, l >= 1 the output of block l) become
x_i = h_i / |h_i| on S^{d-1}, and the observables of x (docs/results.md) come from the very kernel a
simulation records with (`energy` and `attention_entropy` therefore mean identity attention
at the given beta on these positions, as in an identity-matrix simulation). Because trained
tokens rarely reach cosine 1 - 1e-3, the dataset adds observables that still speak: clusters
at a looser cosine threshold, the variance share of the first principal component, the
model's own attention entropy and the raw token norm. `project`: every cluster observable
again on each layer's tokens projected on their top principal components (`projected_`).
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np

from sweep.errors import ConfigError, StoreError
from sweep.kernels.codes import N_OBS, RESOLVED, SERIES
from sweep.kernels.codes import OBSERVABLES as NAMES
from sweep.kernels.general.model import dynamics
from sweep.kernels.general.observables import observe
from sweep.kernels.general.workspace import workspace
from sweep.pretrained import histograms
from sweep.pretrained.bert import Bert, Trace, embed, forward
from sweep.storage.netcdf import environment

# name: (long_name, units), beside the observables of kernels.codes.SERIES
EXTRA = {
    "coarse_clustered_fraction": ("fraction of pairs i != j with cosine > cosine_threshold",
                                  "1"),
    "coarse_n_clusters": ("number of clusters (components of the cosine > cosine_threshold "
                          "graph)", "1"),
    "coarse_largest_cluster": ("size of the largest cosine > cosine_threshold cluster as a "
                               "fraction of n", "1"),
    "pc1_share": ("share of the variance of the centred unit tokens along the first principal "
                  "component", "1"),
    "token_norm": ("mean Euclidean norm of the hidden states before normalisation", "1"),
    "model_attention_entropy": ("mean Shannon entropy of the model's own attention rows, over "
                                "heads, in the block that produced the layer (NaN at 0)", "nat"),
}
_COARSE = {"coarse_clustered_fraction": "clustered_fraction",
           "coarse_n_clusters": "n_clusters", "coarse_largest_cluster": "largest_cluster"}
# the cluster-resolved observables at cosine_threshold too: trained tokens seldom form a group
# at 1 - cluster_eps, so without these every one of them would read "no group"
_COARSE.update({f"coarse_{name}": name for name in RESOLVED})
EXTRA.update({f"coarse_{name}": (f"{SERIES[name][0]}, clusters at cosine > cosine_threshold",
                                 SERIES[name][1]) for name in RESOLVED})
# the names that --project K measures again on the projected tokens
CLUSTER_NAMES = NAMES + tuple(_COARSE)


def unit(h: np.ndarray) -> np.ndarray:
    """[..., n, d] rows scaled onto the unit sphere."""
    return h / np.linalg.norm(h, axis=-1, keepdims=True)


def observables(x: np.ndarray, beta: float, eps: float) -> np.ndarray:
    """The NAMES observables of unit tokens x: [n, d], by the simulations' compiled kernel."""
    x = np.ascontiguousarray(x, dtype=np.float64)
    out = np.empty(N_OBS)
    dyn = dynamics("softmax", beta)
    observe(x, dyn, eps, out, workspace(x, dyn))
    return out


def pc1_share(x: np.ndarray) -> float:
    """lambda_1 / sum_k lambda_k of the covariance of x: [n, d] (NaN if x has no spread)."""
    s = np.linalg.svd(x - x.mean(axis=0), compute_uv=False)
    total = float(np.sum(s**2))
    return float(s[0] ** 2 / total) if total > 0 else math.nan


def attention_entropy(w: np.ndarray) -> float:
    """Mean over heads and rows of -sum_j w_ij log w_ij, for w: [heads, n, n]."""
    with np.errstate(divide="ignore", invalid="ignore"):
        terms = np.where(w > 0, -w * np.log(w), 0.0)
    return float(terms.sum(axis=-1).mean())


def principal(x: np.ndarray, k: int) -> np.ndarray:
    """[n, k] unit tokens: x: [n, d] centred, its coordinates on its top k principal axes,
    renormalised onto S^{k-1}.

    Centred, because a trained model's tokens share a common direction (a positive mean
    cosine in every layer) that would otherwise take the leading component and raise every
    cosine alike; renormalised, because every observable is one of unit tokens (cosines,
    clusters at 1 - eps, identity attention at beta). A token at the mean has no direction (NaN).
    """
    centred = x - x.mean(axis=0)
    axes = np.linalg.svd(centred, full_matrices=False)[2][:k]
    with np.errstate(invalid="ignore", divide="ignore"):
        return unit(centred @ axes.T)


def cluster_series(x: np.ndarray, beta: float, cluster_eps: float,
                   threshold: float) -> dict[str, np.ndarray]:
    """name -> [layers] values of CLUSTER_NAMES for unit tokens x: [layers, n, d]."""
    fine = np.array([observables(xl, beta, cluster_eps) for xl in x])
    coarse = np.array([observables(xl, beta, 1.0 - threshold) for xl in x])
    series = {name: fine[:, k] for k, name in enumerate(NAMES)}
    for name, base in _COARSE.items():
        series[name] = coarse[:, NAMES.index(base)]
    return series


def projected_meta(k: int) -> dict[str, tuple[str, str]]:
    """(long_name, units) of the projected_ variables of `--project k`."""
    meta = {**SERIES, **EXTRA}
    return {f"projected_{name}": (f"{meta[name][0]}, of the tokens projected on their top {k} "
                                  "principal components (centred, renormalised)", meta[name][1])
            for name in CLUSTER_NAMES}


def layer_series(trace: Trace, beta: float = 1.0, cluster_eps: float = 1e-3,
                 threshold: float = 0.9, project: int | None = None) -> dict[str, np.ndarray]:
    """name -> [layers + 1] values: the observables of docs/results.md (eps = cluster_eps) and
    EXTRA, and with project = K the cluster observables of the tokens on their top K
    principal axes."""
    x = unit(trace.hidden)
    series = cluster_series(x, beta, cluster_eps, threshold)
    if project is not None:
        if not 1 <= project <= x.shape[-1]:
            raise ConfigError(f"--project {project}: the number of principal components "
                              f"must be between 1 and the model's d = {x.shape[-1]}")
        flat = np.array([principal(xl, project) for xl in x])
        series.update({f"projected_{name}": values for name, values in
                       cluster_series(flat, beta, cluster_eps, threshold).items()})
    series["pc1_share"] = np.array([pc1_share(xl) for xl in x])
    series["token_norm"] = np.linalg.norm(trace.hidden, axis=-1).mean(axis=-1)
    entropy = [math.nan] + [attention_entropy(w) for w in trace.attention]
    series["model_attention_entropy"] = np.array(entropy)
    return series


def probe(bert: Bert, text: str, beta: float = 1.0, cluster_eps: float = 1e-3,
          threshold: float = 0.9, source: str = "", command: str | None = None,
          project: int | None = None, bins: int = histograms.BINS):
    """The dataset over `layer` (0 = embeddings, 1..L) for one text: every token the model
    sees, [CLS] and [SEP] included, nothing truncated. project: K, see layer_series (the
    dataset then has the attribute project = K); bins: of the pairwise-cosine histograms
    (`cosine_hist` over (layer, bin), sweep.pretrained.histograms)."""
    import xarray as xr

    trace = forward(bert, bert.tokenizer.encode(text))
    series = layer_series(trace, beta, cluster_eps, threshold, project)
    meta = {**SERIES, **EXTRA, **(projected_meta(project) if project is not None else {})}
    data = {name: ("layer", values, {"long_name": meta[name][0], "units": meta[name][1]})
            for name, values in series.items()}
    layer = np.arange(trace.hidden.shape[0])
    coords = {"layer": ("layer", layer, {"long_name": "layer (0 = embeddings)", "units": "1"})}
    hist, bin_coords = histograms.variables(unit(trace.hidden), bins)
    ds = xr.Dataset({**data, **hist}, coords={**coords, **bin_coords})
    if project is not None:
        ds.attrs["project"] = int(project)
    ds.attrs.update(environment(f"probe {bert.name}: {Path(source).name or 'a text'}", command))
    ds.attrs.update(model=bert.name, text=source, n_tokens=int(trace.ids.size), d=bert.d,
                    heads=bert.heads, beta=float(beta), cluster_eps=float(cluster_eps),
                    cosine_threshold=float(threshold),
                    token_ids=" ".join(str(i) for i in trace.ids))
    return ds


def embeddings(bert: Bert, text: str) -> np.ndarray:
    """[n, d] float64: the model's layer 0 for `text` (the embeddings after their LayerNorm,
    unnormalised), the start of a layer model that is this model (docs/layers.md)."""
    return embed(bert, np.asarray(bert.tokenizer.encode(text), dtype=np.int64))


def save_embeddings(bert: Bert, text: str, path: Path) -> Path:
    """np.save the embeddings of `text` at path; StoreError (exit 1) if it cannot be written."""
    return save_array(embeddings(bert, text), path)


def sentence_labels(bert: Bert, text: str) -> np.ndarray:
    """[n] int64: for each token of `text` (as the model sees it), the line it came from,
    counting only lines that hold a token: one sentence a line, the labels of `sweep train`'s
    task `labels` on a text. The template's tokens ([CLS] ... [SEP]) take the first and the
    last line's label. ConfigError if the lines' tokens are not the text's (a special token
    split over lines)."""
    tok = bert.tokenizer
    before = tok.template.index("$A")
    after = len(tok.template) - before - 1
    bodies = [body for body in (_body(tok.tokens(line), before, after)
                                for line in text.splitlines()) if body]
    if len(bodies) < 1:
        raise ConfigError("--save-labels: the text has no tokens")
    whole = _body(tok.tokens(text), before, after)
    if whole != [t for body in bodies for t in body]:
        raise ConfigError("--save-labels: the text's tokens are not those of its lines "
                          "taken one at a time")
    y = [0] * before + [k for k, body in enumerate(bodies) for _ in body]
    return np.array(y + [len(bodies) - 1] * after, dtype=np.int64)


def _body(tokens: list[str], before: int, after: int) -> list[str]:
    return tokens[before:len(tokens) - after]


def save_array(array: np.ndarray, path: Path) -> Path:
    """np.save array at path; StoreError (exit 1) if it cannot be written."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(path, "wb") as f:
            np.save(f, array)
    except OSError as err:
        raise StoreError(f"{path}: cannot write ({err.strerror or type(err).__name__})") \
            from None
    return path


# ---------------------------------------------------------------- attention matrices

def score_matrices(bert: Bert, layer: int) -> np.ndarray:
    """[heads, d, d]: QK_h = W_q,h^T W_k,h / sqrt(d_h) of block `layer` (1-based), so that the
    model's score is x_i^T QK_h x_j plus bias terms. W_q,h is rows h d_h .. (h+1) d_h - 1 of
    the query weight. The key bias shifts a whole row and cancels in softmax; the query bias
    adds b_q,h^T W_k,h x_j / sqrt(d_h), which a matrix cannot hold and is dropped."""
    blk = bert.layers[layer - 1]
    q = blk.wq.reshape(bert.heads, bert.d_head, bert.d)
    k = blk.wk.reshape(bert.heads, bert.d_head, bert.d)
    return np.einsum("hai,haj->hij", q, k) / math.sqrt(bert.d_head)


def value_matrices(bert: Bert, layer: int) -> np.ndarray:
    """[heads, d, d]: V_h = W_O[:, h d_h : (h+1) d_h] W_v,h, the value-output map, so that the
    block adds sum_h sum_j A^h_ij V_h x_j to the residual stream (biases dropped)."""
    blk = bert.layers[layer - 1]
    o = blk.wo.reshape(bert.d, bert.heads, bert.d_head).transpose(1, 0, 2)
    v = blk.wv.reshape(bert.heads, bert.d_head, bert.d)
    return o @ v


def norm_matched_gaussian(m: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """[heads, d, d] Gaussian matrices with the Frobenius norm of each head of m: the
    control that keeps a trained matrix's size and drops its structure."""
    g = rng.standard_normal(m.shape)
    return g * (np.linalg.norm(m, axis=(1, 2)) / np.linalg.norm(g, axis=(1, 2)))[:, None, None]


def extract(bert: Bert, directory: str | Path, controls: bool = False) -> dict:
    """Write layer{l}_qk.npy and layer{l}_v.npy ([heads, d, d] float32) for every block and
    index.json describing them; return the index. controls: also layer{l}_qk_gaussian.npy
    and layer{l}_v_gaussian.npy, norm-matched Gaussian matrices seeded by (layer, key)."""
    directory = Path(directory)
    if directory.exists() and not directory.is_dir():
        raise ConfigError(f"-o {directory}: exists and is not a directory (extract writes a "
                          "folder of .npy files)")
    try:
        return _extract(bert, directory, controls)
    except OSError as err:
        raise StoreError(f"{directory}: cannot write the matrices ({err.strerror or err})")\
            from None


def _extract(bert: Bert, directory: Path, controls: bool) -> dict:
    directory.mkdir(parents=True, exist_ok=True)
    files = []
    for layer in range(1, len(bert.layers) + 1):
        entry = {"layer": layer, "shape": [bert.heads, bert.d, bert.d]}
        for k, (key, make) in enumerate((("qk", score_matrices), ("v", value_matrices))):
            m = make(bert, layer)
            entry[key] = _save(directory, f"layer{layer}_{key}.npy", m)
            entry[f"{key}_frobenius"] = [round(float(f), 6) for f in np.linalg.norm(m, axis=(1, 2))]
            if controls:
                g = norm_matched_gaussian(m, np.random.default_rng([layer, k]))
                entry[f"{key}_gaussian"] = _save(directory, f"layer{layer}_{key}_gaussian.npy", g)
        files.append(entry)
    index = {"model": bert.name, "d": bert.d, "heads": bert.heads, "d_head": bert.d_head,
             "layers": len(bert.layers), "dtype": "float32", "convention": CONVENTION,
             "files": files}
    (directory / "index.json").write_text(json.dumps(index, indent=1) + "\n")
    return index


def _save(directory: Path, name: str, m: np.ndarray) -> str:
    np.save(directory / name, m.astype(np.float32))
    return name


CONVENTION = ("score_ij = x_i^T qk[h] x_j (1/sqrt(d_head) included); the block adds "
              "sum_h sum_j A^h_ij v[h] x_j; head h is index h; biases dropped")
