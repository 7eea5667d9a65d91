"""Which keys a layer model reads (docs/layers.md), and the rules that involve several of
them: each key valid where it applies, refused in one line naming it where it does not.
sweep.config.grid checks every job with `check_layers` before rules.check_job; the contents
of a weights folder are sweep.config.weights's.
"""

from __future__ import annotations

from sweep.config.schema import Init, Integrate, Model, parse_components
from sweep.errors import ConfigError

# model keys only a layer model reads, and integrate keys it has no use for (a layer model's
# depth is model.layers and its step model.alpha; it has no clock to integrate)
LAYER_ONLY = ("alpha", "skip", "norm", "norm_fn", "head_combine", "layer_beta", "ffn_width",
              "weights", "components")
FLOW_ONLY = ("method", "dt", "t_max", "save_every")


def _changed(section, keys: tuple) -> list[str]:
    default = type(section)()
    return [k for k in keys if getattr(section, k) != getattr(default, k)]


def check_layers(model: Model, init: Init, integ: Integrate, at: str) -> None:
    """The rules of layer models (docs/layers.md): each key valid where it applies, refused
    in one line where it does not."""
    if not model.kind.stacked:
        for key in _changed(model, LAYER_ONLY):
            raise ConfigError(f"model.{key}: only layer models read it (set model.layers){at}")
        for key in ("qk", "v"):
            if isinstance(getattr(model, key), tuple):
                raise ConfigError(f"model.{key}: a list gives one matrix per layer (set "
                                  f"model.layers){at}")
        if model.ffn in ("linear", "mlp"):
            raise ConfigError(f"model.ffn: {model.ffn} is a layer model's FFN sublayer (set "
                              f"model.layers); a flow's v_i += W x_i is ffn: gaussian or "
                              f"path/to.npy{at}")
        return
    for key in _changed(integ, FLOW_ONLY):
        raise ConfigError(f"integrate.{key}: a layer model has no clock (model.layers counts "
                          f"its steps, model.alpha scales them); drop integrate.{key}{at}")
    if integ.dtype != "float64" and model.norm != "sphere":
        raise ConfigError(f"integrate.dtype: norm: {model.norm} layers compute in float64 "
                          f"(float32 is for norm: sphere, the flows' step){at}")
    _check_layer_lists(model, at)
    if model.norm == "sphere":
        _check_sphere(model, at)
    else:
        _check_numpy_layers(model, init, at)
    _check_components(model, at)


def _check_layer_lists(model: Model, at: str) -> None:
    if model.layer_beta is not None and model.head_beta is not None:
        raise ConfigError(f"model.layer_beta: give layer_beta or head_beta, not both{at}")
    if model.layer_beta is not None and "beta" in _changed(model, ("beta",)):
        raise ConfigError(f"model.beta: never used here, each layer takes its beta from "
                          f"model.layer_beta; drop model.beta{at}")
    lists = {"layer_beta": model.layer_beta, "qk": model.qk, "v": model.v}
    for key, value in lists.items():
        if isinstance(value, tuple) and len(value) != model.layers:
            raise ConfigError(f"model.{key}: {len(value)} value(s) for layers="
                              f"{model.layers}{at}")
    if model.ffn_width is not None and model.ffn != "mlp":
        raise ConfigError(f"model.ffn_width: only ffn: mlp has a hidden width (ffn: "
                          f"{model.ffn}){at}")


def _check_sphere(model: Model, at: str) -> None:
    """norm: sphere is the kernels' step x <- normalize(x + alpha v), as a flow takes it."""
    why = {"skip": model.skip != 1.0, "head_combine": model.head_combine != "mean",
           "weights": model.weights is not None}
    for key, refused in why.items():
        if refused:
            raise ConfigError(f"model.{key}: norm: sphere is the kernels' step x <- "
                              f"normalize(x + alpha v) (skip 1, heads averaged, no weights "
                              f"folder); {key} needs norm: post, pre or peri{at}")


def _check_numpy_layers(model: Model, init: Init, at: str) -> None:
    """norm: post | pre | peri: softmax attention over every token, computed in NumPy."""
    zoo = {"attention": model.attention != "softmax", "mask": model.mask != "dense",
           "noise": model.noise > 0}
    for key, refused in zoo.items():
        if refused:
            raise ConfigError(f"model.{key}: norm: {model.norm} layers are softmax attention "
                              f"over all tokens without noise; {key} needs norm: sphere{at}")
    if model.ffn not in ("none", "linear", "mlp"):
        raise ConfigError(f"model.ffn: {model.ffn} is the in-step term v_i += W x_i of flows "
                          f"and norm: sphere; norm: {model.norm} takes none, linear or mlp{at}")
    if model.weights is not None and (model.qk, model.v) != ("identity", "identity"):
        key = "qk" if model.qk != "identity" else "v"
        raise ConfigError(f"model.{key}: the weights folder supplies every layer's matrices; "
                          f"drop model.{key} (model.components switches parts off){at}")
    if init.kind == "file" and init.jitter > 0:
        raise ConfigError(f"init.jitter: norm: {model.norm} takes the file's rows as they "
                          f"are (hidden states), so they are not jittered{at}")


def _check_components(model: Model, at: str) -> None:
    off = parse_components(model.components)
    no_op = {"no_ffn": model.ffn == "none", "identity_ffn": model.ffn == "none",
             "no_ln_gain": model.weights is None or model.norm_fn != "layernorm"}
    for name in sorted(off):
        if no_op.get(name):
            raise ConfigError(f"model.components: {name} changes nothing here (ffn: "
                              f"{model.ffn}, norm: {model.norm}, norm_fn: {model.norm_fn}){at}")
