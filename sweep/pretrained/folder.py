"""`sweep extract --full`: a BERT as a weights folder (sweep.config.weights) that a layer model
with `norm: post`, `head_combine: sum` and `ffn: mlp` runs as the model itself.

Per layer l, in float64 (the products of the stored float32 weights, computed in float64):
    qk[h]   = W_q,h^T W_k,h / sqrt(d_h)             v[h]   = W_O[:, h] W_v,h
    qk_bias = W_k,h^T b_q,h / sqrt(d_h)             v_bias = W_O b_v + b_O
    ln1 = the attention output's LayerNorm, ffn_w1, ffn_b1, ffn_w2, ffn_b2 (the
    intermediate and output dense layers, [out, in]), ln2 = the block output's LayerNorm.
The other bias terms of the score are constant along a softmax row and drop out; b_v passes
through W_O because every softmax row sums to one. So with beta = 1 the layer model's block
is BERT's to rounding (docs/layers.md). The embeddings' LayerNorm is written too
(embeddings_ln_gain.npy, embeddings_ln_bias.npy): `sweep probe --save-embeddings` saves its
output, the model's layer 0, which is what the layer model starts from.
controls: index-gaussian.json, the same model with every matrix (qk, v per head; ffn_w1,
ffn_w2 whole) replaced by a Gaussian one of the same Frobenius norm (vectors kept).
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np

from sweep.config import weights
from sweep.pretrained.bert import Bert
from sweep.pretrained.probing import norm_matched_gaussian, score_matrices, value_matrices

CONTROLLED = ("qk", "v", "ffn_w1", "ffn_w2")  # the matrices the Gaussian control replaces


def layer_arrays(bert: Bert, layer: int) -> dict[str, np.ndarray]:
    """name -> float64 array (weights.ARRAYS shapes) of block `layer` (1-based)."""
    blk, dh = bert.layers[layer - 1], bert.d_head
    k = blk.wk.reshape(bert.heads, dh, bert.d)
    bq = blk.bq.reshape(bert.heads, dh)
    return {"qk": score_matrices(bert, layer),
            "qk_bias": np.einsum("had,ha->hd", k, bq) / math.sqrt(dh),
            "v": value_matrices(bert, layer), "v_bias": blk.wo @ blk.bv + blk.bo,
            "ln1_gain": blk.ln1[0], "ln1_bias": blk.ln1[1],
            "ffn_w1": blk.w1, "ffn_b1": blk.b1, "ffn_w2": blk.w2, "ffn_b2": blk.b2,
            "ln2_gain": blk.ln2[0], "ln2_bias": blk.ln2[1]}


def control(m: np.ndarray, layer: int, name: str) -> np.ndarray:
    """The norm-matched Gaussian of one matrix, seeded by (layer, name): per head for qk and
    v (the draws of `sweep extract --controls`), whole for the FFN's."""
    rng = np.random.default_rng([layer, CONTROLLED.index(name)])
    return norm_matched_gaussian(m if m.ndim == 3 else m[None], rng).reshape(m.shape)


def extract_full(bert: Bert, directory: str | Path, controls: bool = False) -> dict:
    """Write the folder (index.json and, with controls, index-gaussian.json); the index."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    files, gaussian = [], []
    for layer in range(1, len(bert.layers) + 1):
        entry = {"layer": layer}
        for name, array in layer_arrays(bert, layer).items():
            entry[name] = _save(directory, f"layer{layer}_{name}.npy", array)
        files.append(entry)
        if controls:
            swap = {name: _save(directory, f"layer{layer}_{name}_gaussian.npy",
                                control(np.load(directory / entry[name]), layer, name))
                    for name in CONTROLLED}
            gaussian.append({**entry, **swap})
    meta = {"format": weights.FORMAT, "model": bert.name, "d": bert.d, "heads": bert.heads,
            "d_head": bert.d_head, "layers": len(bert.layers),
            "ffn_width": int(bert.layers[0].w1.shape[0]) if bert.layers else None,
            "ln_eps": bert.eps, "head_combine": "sum", "beta": 1.0, "norm": "post",
            "embeddings_ln": {"gain": _save(directory, "embeddings_ln_gain.npy", bert.ln0[0]),
                              "bias": _save(directory, "embeddings_ln_bias.npy", bert.ln0[1])},
            "convention": CONVENTION}
    index = {**meta, "files": files}
    _write(directory / "index.json", index)
    if controls:
        _write(directory / "index-gaussian.json",
               {**meta, "control": "norm-matched Gaussian " + ", ".join(CONTROLLED),
                "files": gaussian})
    return index


def _save(directory: Path, name: str, array: np.ndarray) -> str:
    np.save(directory / name, np.asarray(array, dtype=np.float64))
    return name


def _write(path: Path, index: dict) -> None:
    path.write_text(json.dumps(index, indent=1) + "\n")


CONVENTION = ("a layer model with beta 1, norm post, norm_fn layernorm, head_combine sum, "
              "ffn mlp: s_ij = <y_i, qk[h] y_j> + <qk_bias[h], y_j> (1/sqrt(d_head) "
              "included), output sum_h sum_j A^h_ij v[h] y_j + v_bias; Linear weights [out, in]")
