"""A weights folder (`model.weights`): every array a layer model needs, per layer, as `.npy`
files an `index.json` names. `sweep extract --full` writes one for a trained BERT.

index.json holds `format` (FORMAT), `d`, `heads`, `layers`, optionally `ffn_width`,
`ln_eps` (LayerNorm's epsilon, default LN_EPS) and `head_combine` (mean | sum), and `files`:
one mapping per layer (in order, with `"layer": 1, 2, ...`) from the names of ARRAYS to file
names relative to the index. A name a layer leaves out takes its neutral value (identity
matrix, zero bias, unit gain; no FFN weights). `model.weights` names the folder (its
index.json) or an index file itself, so several indexes can share one folder's files.
"""

from __future__ import annotations

import functools
import hashlib
import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

import numpy as np

from sweep.config import inputs
from sweep.config.schema import stable_hash
from sweep.errors import ConfigError

FORMAT = "sweep-layers/1"
LN_EPS = 1e-12  # BERT's layer_norm_eps
# name: shape in terms of heads (h), d and the FFN width (m)
ARRAYS = {
    "qk": ("h", "d", "d"),       # score matrices M_h: s_ij = <y_i, M_h y_j> + <u_h, y_j>
    "qk_bias": ("h", "d"),       # u_h, the part of the query bias that survives softmax
    "v": ("h", "d", "d"),        # value-output matrices V_h
    "v_bias": ("d",),            # the bias added to the heads' combined output
    "ln1_gain": ("d",), "ln1_bias": ("d",),  # the attention sublayer's normalisation
    "ffn_w": ("d", "d"),         # ffn: linear, F(y) = W y
    "ffn_w1": ("m", "d"), "ffn_b1": ("m",), "ffn_w2": ("d", "m"), "ffn_b2": ("d",),  # mlp
    "ln2_gain": ("d",), "ln2_bias": ("d",),  # the FFN sublayer's normalisation
}
FFN_ARRAYS = {"linear": ("ffn_w",), "mlp": ("ffn_w1", "ffn_w2")}


@dataclass(frozen=True)
class Index:
    path: Path
    meta: dict
    files: tuple[dict[str, Path], ...]  # per layer: name -> file
    digest: str


def index_path(model, source: Path | None) -> Path:
    path = inputs.resolve(model.weights, source)
    return path / "index.json" if path.suffix != ".json" else path


def read_index(model, source: Path | None) -> Index:
    """The index `model.weights` names, checked against the model (ConfigError naming the
    key and the file)."""
    path = index_path(model, source)
    where = f"model.weights: {path}"
    try:
        text = path.read_bytes()
        meta = json.loads(text)
    except FileNotFoundError:
        raise ConfigError(f"{where}: no such index (sweep extract --full writes one)") from None
    except (OSError, ValueError) as err:
        raise ConfigError(f"{where}: not a readable JSON index ({err})") from None
    if not isinstance(meta, dict) or meta.get("format") != FORMAT:
        raise ConfigError(f"{where}: not a weights index (format {FORMAT} expected)")
    _check_meta(meta, model, where)
    files = tuple(_layer_files(entry, layer, path.parent, where)
                  for layer, entry in enumerate(meta["files"], start=1))
    return Index(path, meta, files, hashlib.sha256(text).hexdigest()[:16])


def _check_meta(meta: dict, model, where: str) -> None:
    want = {"d": model.d, "heads": model.heads, "layers": model.layers,
            "head_combine": model.head_combine}
    for key, value in want.items():
        if meta.get(key, "mean" if key == "head_combine" else None) != value:
            raise ConfigError(f"{where}: {key} is {meta.get(key)!r}, the model has "
                              f"{key}={value!r}")
    if model.ffn == "mlp" and model.ffn_width not in (None, meta.get("ffn_width")):
        raise ConfigError(f"{where}: ffn_width is {meta.get('ffn_width')!r}, the model has "
                          f"ffn_width={model.ffn_width}")
    files = meta.get("files")
    if not isinstance(files, list) or len(files) != model.layers:
        raise ConfigError(f"{where}: files must list the {model.layers} layers")
    eps = meta.get("ln_eps", LN_EPS)
    if not isinstance(eps, (int, float)) or not math.isfinite(eps) or eps <= 0:
        raise ConfigError(f"{where}: ln_eps must be a number > 0, got {eps!r}")


def _layer_files(entry, layer: int, folder: Path, where: str) -> dict[str, Path]:
    if not isinstance(entry, dict) or entry.get("layer") != layer:
        raise ConfigError(f"{where}: files[{layer - 1}] must be the mapping of layer {layer}")
    unknown = set(entry) - set(ARRAYS) - {"layer"}
    if unknown:
        raise ConfigError(f"{where}: layer {layer}: unknown array(s) {', '.join(sorted(unknown))}"
                          f" (known: {', '.join(ARRAYS)})")
    return {name: folder / str(file) for name, file in entry.items() if name != "layer"}


def ffn_width(model, index: Index) -> int:
    return int(index.meta.get("ffn_width") or model.ffn_width or 4 * model.d)


def read_weights(model, source: Path | None) -> tuple[Index, list[dict[str, np.ndarray]]]:
    """(index, per layer: name -> float64 array of its ARRAYS shape), every file checked."""
    index = read_index(model, source)
    sizes = {"h": model.heads, "d": model.d, "m": ffn_width(model, index)}
    layers = []
    for layer, files in enumerate(index.files, start=1):
        arrays = {}
        for name, path in files.items():
            key = f"model.weights: layer {layer} {name}"
            array, _ = inputs.read_array(key, str(path), None)
            shape = tuple(sizes[s] for s in ARRAYS[name])
            if array.shape != shape:
                raise ConfigError(f"{key}: {path}: shape {array.shape}, expected {shape}")
            arrays[name] = array
        layers.append(arrays)
    _check_ffn(model, index, layers)
    return index, layers


def _check_ffn(model, index: Index, layers: list[dict]) -> None:
    for name in FFN_ARRAYS.get(model.ffn, ()):
        if any(name not in arrays for arrays in layers):
            raise ConfigError(f"model.ffn: {model.ffn} needs {name} in every layer of "
                              f"{index.path}")


def check(model, source: Path | None) -> dict[str, str]:
    """Check a layer job's weights folder; {"model.weights": digest of index and arrays}."""
    if not model.kind.stacked or model.weights is None:
        return {}
    shape = Uses(*(getattr(model, k) for k in Uses._fields))
    return {"model.weights": _digest(shape, source, _stamp(index_path(model, source)))}


def _stamp(path: Path) -> tuple:
    """(size, mtime) of the index and of every file it names: a cheap test of change."""
    def stat(p: Path):
        try:
            s = p.stat()
            return str(p), s.st_size, s.st_mtime_ns
        except OSError:
            return str(p), None, None
    try:
        files = json.loads(path.read_bytes()).get("files") or []
        names = [path.parent / str(f) for e in files if isinstance(e, dict)
                 for k, f in e.items() if k != "layer"]
    except (OSError, ValueError, AttributeError):
        names = []
    return (stat(path),) + tuple(stat(p) for p in names)


class Uses(NamedTuple):
    """What of a model a folder is checked against (jobs that differ elsewhere share it)."""

    d: int
    heads: int
    layers: int
    head_combine: str
    ffn: str
    ffn_width: int | None
    weights: str


@functools.lru_cache(maxsize=16)
def _digest(model: Uses, source, stamp: tuple) -> str:
    """Once per folder version and model shape: a sweep's jobs share their folder."""
    index, _ = read_weights(model, source)
    parts = [index.digest] + [inputs.read_array("model.weights", str(p), None)[1]
                              for files in index.files for p in files.values()]
    return stable_hash(parts)
