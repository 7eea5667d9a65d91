"""The rules a job must pass that involve several keys (its sections' own values are checked
by sweep.config.schema as they are read): start shapes the dimension allows, the model zoo's
combinations, and time steps that divide the save interval and the run."""

from __future__ import annotations

from sweep.config.schema import RANDOM_MATRICES, Init, Integrate, Model
from sweep.errors import ConfigError
from sweep.kernels.codes import parse_mask


def check_job(model: Model, init: Init, integ: Integrate, where: str = "") -> None:
    """Rules that involve several keys; `where` says which grid point is meant."""
    at = f" ({where})" if where else ""
    if init.kind == "orthonormal" and model.n > model.d or (
            init.kind == "equiangular" and init.overlap == 0 and model.n > model.d):
        what = "orthonormal" if init.kind == "orthonormal" else "equiangular with overlap 0"
        raise ConfigError(f"init.kind: {what} needs n <= d, got n={model.n}, "
                          f"d={model.d}{at}")
    if init.kind == "equiangular" and init.overlap > 0 and model.n + 1 > model.d:
        raise ConfigError(f"init.overlap: an equiangular start with overlap > 0 needs "
                          f"n + 1 <= d, got n={model.n}, d={model.d}{at}")
    check_zoo(model, init, integ, at)
    _whole(integ.save_every, integ.dt, f"integrate.dt: {integ.dt} makes {{:g}} steps per "
           "save, more than 2^53", "integrate.save_every: must be a whole multiple of dt "
           f"({integ.save_every} / {integ.dt} = {{:g}})", at)
    _whole(integ.t_max, integ.save_every, f"integrate.t_max: {integ.t_max} makes {{:g}} "
           "saves, more than 2^53", "integrate.t_max: must be a whole multiple of save_every "
           f"({integ.t_max} / {integ.save_every} = {{:g}})", at)


def check_zoo(model: Model, init: Init, integ: Integrate, at: str) -> None:
    """Rules of the model zoo that involve several keys (file shapes: sweep.config.inputs)."""
    if model.head_beta is not None and len(model.head_beta) != model.heads:
        raise ConfigError(f"model.head_beta: {len(model.head_beta)} value(s) for "
                          f"heads={model.heads}{at}")
    _, param = parse_mask(model.mask)
    name = model.mask.partition(":")[0]
    top = {"window": model.n - 1, "leaders": model.n - 1}.get(name, model.n)
    if param > top:
        raise ConfigError(f"model.mask: {model.mask} is larger than n={model.n} allows "
                          f"(at most {name}:{top}){at}")
    if model.noise > 0 and integ.method in ("rk4", "heun"):
        raise ConfigError(f"integrate.method: noise is integrated by Euler-Maruyama, "
                          f"set method: euler or layer (got {integ.method}){at}")
    if init.kind == "clusters" and init.clusters > model.n:
        raise ConfigError(f"init.clusters: {init.clusters} clusters for n={model.n} "
                          f"tokens{at}")
    if init.kind == "file" and not init.path:
        raise ConfigError(f"init.path: required with kind: file{at}")
    if model.redraw_every is not None:
        check_redraw(model, integ, at)
    if model.space == "euclidean" or init.kind == "gaussian":
        check_space(model, init, integ, at)


def check_redraw(model: Model, integ: Integrate, at: str) -> None:
    """model.redraw_every: a flow with a random qk or v, redrawn at whole saves."""
    if model.kind.stacked or not ({model.qk, model.v} & set(RANDOM_MATRICES)):
        raise ConfigError(f"model.redraw_every: needs a flow (no model.layers) with qk or v "
                          f"{' or '.join(RANDOM_MATRICES)} (got qk {model.qk}, v {model.v}){at}")
    per = model.redraw_every / integ.save_every
    if abs(per - round(per)) > 1e-9 * per or round(per) < 1:
        raise ConfigError(f"model.redraw_every: must be a whole multiple of "
                          f"integrate.save_every ({model.redraw_every} / {integ.save_every} "
                          f"= {per:g}){at}")


# what euclidean space (docs/models.md) refuses: the key, what it must be, and the test
_EUCLIDEAN_ONLY = (
    ("model.layers", "null (a flow: layer stacks normalise)", lambda m, i: m.kind.stacked),
    ("model.attention", "softmax", lambda m, i: m.attention != "softmax"),
    ("model.noise", "0 (Brownian motion on the sphere)", lambda m, i: m.noise > 0),
    ("model.mask", "not leaders (fixed on the sphere)", lambda m, i: m.mask.startswith("lea")),
    ("model.ffn", "none", lambda m, i: m.ffn != "none"),
    ("model.redraw_every", "null", lambda m, i: m.redraw_every is not None),
    ("integrate.method", "euler, rk4 or heun (layer normalises)", lambda m, i: i.method == "layer"),
)
EUCLIDEAN_T_MAX = 300.0  # with V = I the attention's beta exp(2 t) stays finite below t = 354


def check_space(model: Model, init: Init, integ: Integrate, at: str) -> None:
    """model.space: euclidean runs the unnormalised flow of arXiv 2305.05465 in R^d;
    init.kind: gaussian starts off the sphere, so only there."""
    if model.space != "euclidean":
        raise ConfigError(f"init.kind: gaussian starts off the sphere, set model.space: "
                          f"euclidean (on the sphere it is uniform){at}")
    for key, needed, refused in _EUCLIDEAN_ONLY:
        if refused(model, integ):
            value = getattr(model if key.startswith("model") else integ, key.partition(".")[2])
            raise ConfigError(f"{key}: model.space: euclidean needs {needed}, got {value}{at}")
    if model.v == "identity" and integ.t_max > EUCLIDEAN_T_MAX:
        raise ConfigError(f"integrate.t_max: model.space: euclidean with v identity needs "
                          f"t_max <= {EUCLIDEAN_T_MAX:g} (beta exp(2 t) overflows past "
                          f"t = 354), got {integ.t_max}{at}")


def _whole(span: float, step: float, too_many: str, not_whole: str, at: str) -> None:
    """span / step must be a whole number >= 1 below 2^53; ConfigError with the message
    (its {:g}: the ratio) that says which rule failed."""
    ratio = span / step
    if not ratio < 2**53:
        raise ConfigError(too_many.format(ratio) + at)
    if abs(ratio - round(ratio)) > 1e-9 * ratio or round(ratio) < 1:
        raise ConfigError(not_whole.format(ratio) + at)
