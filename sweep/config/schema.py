"""YAML -> frozen, validated config objects.

Every check raises `ConfigError` whose message is one line starting with the offending key
path (`model.beta: ...`). Sections are dataclasses whose fields carry their own rule in
`metadata`, so adding a model parameter is adding one field.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
from dataclasses import asdict, dataclass, field, fields, replace
from pathlib import Path
from typing import Any

import yaml

from sweep.config.kinds import ModelKind, kind_of
from sweep.config.yamltext import apply_overrides, clip, read_yaml, show, suggest
from sweep.errors import ConfigError
from sweep.kernels.codes import ATTENTION_CODES, METHOD_CODES, OBSERVABLES, parse_mask


def make_rule(kind: type, *, choices=None, low=None, high=None, low_open=False, high_open=False,
          nullable=False, check=None):
    """check: optional callable value -> clean value, raising ValueError(message)."""
    return {"kind": kind, "choices": choices, "low": low, "high": high,
            "low_open": low_open, "high_open": high_open, "nullable": nullable,
            "check": check}


SPECS = (str, list)  # a kind: one spec, or a list of specs (one per layer)

def _field(default, kind: type, **rule):
    return field(default=default, metadata=make_rule(kind, **rule))


# the matrix specs drawn at random per job (and per layer, per redraw): sweep.execution.matrices
RANDOM_MATRICES = ("gaussian", "orthogonal", "goe")


def _matrix(*names: str):
    """A matrix spec: one of `names` or a path to a .npy file (shape checked per job)."""
    def check(value: str) -> str:
        if value in names or value.endswith(".npy"):
            return value
        raise ValueError(f"{show(value)} is not one of {' | '.join(names)} | path/to.npy")
    return check


def _betas(value: list) -> tuple:
    """head_beta: a non-empty list of finite numbers >= 0, kept as a (hashable) tuple."""
    if not value or not all(isinstance(b, (int, float)) and not isinstance(b, bool)
                            and math.isfinite(b) and b >= 0 for b in value):
        raise ValueError(f"expected a non-empty list of numbers >= 0, got {show(value)}")
    return tuple(float(b) for b in value)


def _mask(value: str) -> str:
    parse_mask(value)
    return value


def _per_layer(check):
    """A spec `check` accepts, or a non-empty list of them, one per layer (kept as a tuple)."""
    def checked(value):
        if isinstance(value, str):
            return check(value)
        if not value or not all(isinstance(v, str) for v in value):
            raise ValueError(f"expected a spec or a non-empty list of specs, got {value!r}")
        return tuple(check(v) for v in value)
    return checked


# effective beta = beta x factor(d, n): `model.beta_scale`
BETA_FACTORS = {"none": lambda d, n: 1.0, "d": lambda d, n: float(d),
                "sqrt_d": lambda d, n: math.sqrt(d), "log_n": lambda d, n: math.log(n)}

# `model.components`: what a layer model switches off, one name or several joined by "+"
COMPONENTS = {
    "full": "every component as configured",
    "no_ffn": "no FFN sublayer (nor its normalisation)",
    "identity_ffn": "the FFN map replaced by the identity (its residual and normalisation kept)",
    "v_identity": "V_h = I for every head, heads averaged, no value bias",
    "no_ln_gain": "LayerNorm gains set to 1 (biases kept)",
}


def parse_components(value: str) -> frozenset:
    """'full' or names of COMPONENTS joined by '+' -> the set switched off (empty for full)."""
    names = value.split("+")
    unknown = [c for c in names if c not in COMPONENTS]
    if unknown or ("full" in names and len(names) > 1):
        raise ValueError(f"{value!r}: expected full or names joined by + from "
                         f"{' | '.join(c for c in COMPONENTS if c != 'full')}")
    return frozenset(names) - {"full"}


def _components(value: str) -> str:
    parse_components(value)
    return value


@dataclass(frozen=True)
class Model:
    attention: str = _field("softmax", str, choices=tuple(ATTENTION_CODES))
    beta: float = _field(1.0, float, low=0.0)
    d: int = _field(3, int, low=2)
    n: int = _field(32, int, low=1)
    heads: int = _field(1, int, low=1)
    head_beta: tuple | None = _field(None, list, nullable=True, check=_betas)
    qk: str | tuple = _field("identity", SPECS, check=_per_layer(
        _matrix("identity", *RANDOM_MATRICES)))
    v: str | tuple = _field("identity", SPECS, check=_per_layer(
        _matrix("identity", *RANDOM_MATRICES, "qk")))
    mask: str = _field("dense", str, check=_mask)
    noise: float = _field(0.0, float, low=0.0)
    ffn: str = _field("none", str, check=_matrix("none", "gaussian", "linear", "mlp"))
    beta_scale: str = _field("none", str, choices=tuple(BETA_FACTORS))
    # layer models (docs/layers.md); layers: null is a flow
    layers: int | None = _field(None, int, low=1, nullable=True)
    alpha: float = _field(1.0, float, low=0.0)
    skip: float = _field(1.0, float, low=0.0)
    norm: str = _field("sphere", str, choices=("sphere", "post", "pre", "peri"))
    norm_fn: str = _field("layernorm", str, choices=("layernorm", "unit"))
    head_combine: str = _field("mean", str, choices=("mean", "sum"))
    layer_beta: tuple | None = _field(None, list, nullable=True, check=_betas)
    ffn_width: int | None = _field(None, int, low=1, nullable=True)
    weights: str | None = _field(None, str, nullable=True)
    components: str = _field("full", str, check=_components)
    # random qk / v drawn afresh every redraw_every (sweep.execution.redraw); space: models.md
    redraw_every: float | None = _field(None, float, low=0.0, low_open=True, nullable=True)
    space: str = _field("sphere", str, choices=("sphere", "euclidean"))

    @property
    def kind(self) -> ModelKind:
        """A dynamics or a layer stack (sweep.config.kinds): what differs between them."""
        return kind_of(self.layers)

    @property
    def beta_factor(self) -> float:
        """effective beta / beta (`beta_scale`), for beta, head_beta and layer_beta alike."""
        return BETA_FACTORS[self.beta_scale](self.d, self.n)


@dataclass(frozen=True)
class Init:
    kind: str = _field("uniform", str, choices=("uniform", "orthonormal", "equiangular",
                                                "clusters", "circle", "file", "gaussian"))
    overlap: float = _field(0.0, float, low=0.0, high=1.0, high_open=True)
    clusters: int = _field(4, int, low=1)
    spread: float = _field(0.1, float, low=0.0)
    jitter: float = _field(0.0, float, low=0.0)
    path: str | None = _field(None, str, nullable=True)


@dataclass(frozen=True)
class Integrate:
    method: str = _field("euler", str, choices=tuple(METHOD_CODES))
    dt: float = _field(0.1, float, low=0.0, low_open=True)
    t_max: float = _field(30.0, float, low=0.0, low_open=True)
    save_every: float = _field(0.5, float, low=0.0, low_open=True)
    cluster_eps: float = _field(1.0e-3, float, low=0.0, high=2.0, low_open=True)
    dtype: str = _field("float64", str, choices=("float64", "float32"))

    @property
    def save_stride(self) -> int:
        """Steps between saves (save_every / dt, checked whole at load time)."""
        return round(self.save_every / self.dt)

    @property
    def n_saves(self) -> int:
        return round(self.t_max / self.save_every) + 1

    @property
    def n_steps(self) -> int:
        return (self.n_saves - 1) * self.save_stride


def _observables(value: str | list) -> str | tuple:
    """output.observables: "all", or a non-empty list of distinct variable names (SERIES),
    kept as a tuple in the schema's order."""
    if value == "all":
        return value
    if isinstance(value, str) or not value:
        raise ValueError(f"expected all or a non-empty list of variable names, got "
                         f"{show(value)}")
    for name in value:
        if name not in OBSERVABLES:
            raise ValueError(f"{show(name)} is not one of {' | '.join(OBSERVABLES)}")
    if len(set(value)) != len(value):
        raise ValueError(f"names must be distinct, got {show(value)}")
    return tuple(name for name in OBSERVABLES if name in value)


@dataclass(frozen=True)
class Output:
    path: str = _field("", str)
    positions: str = _field("none", str, choices=("none", "final", "trajectory"))
    observables: str | tuple = _field("all", SPECS, check=_observables)
    hist_bins: int = _field(0, int, low=0)

    @property
    def columns(self) -> tuple[str, ...]:
        """The series a save records, in the schema's order."""
        return OBSERVABLES if self.observables == "all" else self.observables


SECTIONS = {"model": Model, "init": Init, "integrate": Integrate}
# keys added after results were first written (beta_scale, the layer models'): a job's id
# leaves each out while it holds its default, so results on disk keep their ids
LATER_KEYS = {Model: ("beta_scale", "layers", "alpha", "skip", "norm", "norm_fn",
                      "head_combine", "layer_beta", "ffn_width", "weights", "components",
                      "redraw_every", "space")}


def id_fields(section) -> dict[str, Any]:
    """The fields of a section object that a job id is taken of (sweep.config.grid)."""
    fields_, default = asdict(section), type(section)()
    for key in LATER_KEYS.get(type(section), ()):
        if fields_[key] == getattr(default, key):
            del fields_[key]
    return fields_


@dataclass(frozen=True)
class Config:
    name: str
    model: Model
    init: Init
    integrate: Integrate
    output: Output
    grid: dict[str, Any]  # raw axis declarations, expanded and checked by sweep.config.grid
    source: Path | None = None  # the YAML file, for resolving relative input paths
    overrides: tuple[str, ...] = ()  # the KEY=VALUE applied to it (a job array repeats them)
    # section keys the user chose ("model.beta"): set by --set, or given a value other than
    # the default in the file; sweep.config.grid refuses those no grid point uses
    given: frozenset = frozenset()

    def to_dict(self) -> dict[str, Any]:
        out = {k: v for k, v in plain(asdict(self.output)).items() if k != "hist_bins" or v}
        return {"name": self.name, "model": plain(asdict(self.model)), "init": asdict(self.init),
                "integrate": asdict(self.integrate), "grid": self.grid, "output": out}

    def to_yaml(self) -> str:
        return yaml.safe_dump(self.to_dict(), sort_keys=False)

    @property
    def hash(self) -> str:
        """Hash of everything that decides the results (not where they are written)."""
        d = self.to_dict()  # observables, hist_bins only where set: earlier runs' hashes stay
        d["output"] = {k: v for k, v in d["output"].items() if k != "path" and v != "all"}
        return stable_hash(d)


def plain(section: dict) -> dict:
    """Tuples (head_beta) as lists, so the dict dumps as plain YAML."""
    return {k: list(v) if isinstance(v, tuple) else v for k, v in section.items()}


def stable_json(obj: Any) -> str:
    """The canonical JSON text of obj that ids and hashes are taken of: keys sorted at every
    level, no spaces, anything else as str(). Text of a mapping is composable: '{' + the
    '"key":' + stable_json(value) pairs in sorted key order + '}' is its stable_json."""
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), default=str)


def digest(text: str, length: int = 16) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:length]


def stable_hash(obj: Any, length: int = 16) -> str:
    return digest(stable_json(obj), length)


# ---------------------------------------------------------------- values and sections

def check_value(key: str, value: Any, rule: dict) -> Any:
    """Coerce and check one scalar against its rule; return the clean value."""
    kind = rule["kind"]
    if value is None and rule["nullable"]:
        return None
    if kind is float and isinstance(value, int) and not isinstance(value, bool):
        value = float(value) if abs(value) < 2**1023 else math.inf
    if kind in (list, SPECS) and isinstance(value, tuple):  # already clean
        value = list(value)
    if not isinstance(value, kind) or isinstance(value, bool):
        raise ConfigError(f"{key}: expected {_TYPE_NAMES[kind]}, got {show(value)}")
    if kind is float and not math.isfinite(value):
        raise ConfigError(f"{key}: must be finite, got {show(value)}")
    if kind is int and not -(2**63) <= value < 2**63:
        raise ConfigError(f"{key}: must fit in a 64-bit integer, got {show(value)}")
    if rule["choices"] is not None and value not in rule["choices"]:
        allowed = " | ".join(rule["choices"])
        hint = suggest(value, rule["choices"]).strip() if isinstance(value, str) else ""
        raise ConfigError(f"{key}: {show(value)} is not one of {allowed}{'; ' * bool(hint)}{hint}")
    low, high = rule["low"], rule["high"]
    if low is not None and (value <= low if rule["low_open"] else value < low):
        raise ConfigError(f"{key}: must be {'>' if rule['low_open'] else '>='} {low}, "
                          f"got {show(value)}")
    if high is not None and (value >= high if rule["high_open"] else value > high):
        raise ConfigError(f"{key}: must be {'<' if rule['high_open'] else '<='} {high}, "
                          f"got {show(value)}")
    if rule["check"] is not None:
        try:
            value = rule["check"](value)
        except ValueError as err:
            raise ConfigError(f"{key}: {err}") from None
    return value


_TYPE_NAMES = {int: "an integer", float: "a number", str: "a string", list: "a list",
               SPECS: "a string or a list of strings"}


def build_section(cls: type, raw: Any, where: str):
    """Build the frozen dataclass `cls` from a mapping, naming `where.key` on any error."""
    if raw is None:
        raw = {}
    if not isinstance(raw, dict):
        raise ConfigError(f"{where}: expected a mapping, got {show(raw)}")
    known = {f.name: f for f in fields(cls)}
    for key in raw:
        if key not in known:
            raise ConfigError(f"{where}.{clip(key)}: unknown key ({suggest(key, known)}allowed: "
                              f"{', '.join(known)})")
    clean = {k: check_value(f"{where}.{k}", v, known[k].metadata) for k, v in raw.items()}
    return cls(**clean)


def field_rule(section: str, key: str) -> dict:
    return {f.name: f.metadata for f in fields(SECTIONS[section])}[key]


# ---------------------------------------------------------------- loading

TOP_KEYS = ("name", "model", "init", "integrate", "grid", "output")
def load(path: str | Path, overrides: list[str] = ()) -> Config:
    """Read, override and validate a config file (grid values are checked by sweep.config.grid)."""
    path = Path(path)
    raw = apply_overrides(read_yaml(path), list(overrides))
    return from_dict(raw, source=path, overrides=tuple(overrides))


def _given(sections: dict, raw: dict, overrides) -> frozenset:
    """Section keys set on purpose: by --set (`overrides`), or to a value other than the
    default in the file (a default written out documents, it chooses nothing)."""
    given = {item.partition("=")[0].strip() for item in overrides}
    given = {key for key in given if key.partition(".")[0] in SECTIONS}
    for name, section in sections.items():
        default = SECTIONS[name]()
        given |= {f"{name}.{key}" for key in raw.get(name) or {}
                  if getattr(section, key) != getattr(default, key)}
    return frozenset(given)
def output_path(text: str, where: str = "output.path") -> str:
    """A results file path, `~` expanded; ConfigError if it cannot be one: a directory, or a
    name that its own parts or job-script folder (`<stem>.parts`, `<stem>.jobs`) would take,
    found only after every job has run."""
    path = os.path.expanduser(text)
    name = Path(path).name
    if name in ("", ".", "..") or path.endswith(("/", os.sep)) or os.path.isdir(path):
        raise ConfigError(f"{where}: {clip(text)} is a directory; give a results file such "
                          "as results/sweep.nc")
    if Path(path).suffix in (".parts", ".jobs"):
        raise ConfigError(f"{where}: {clip(text)} is the name of the folder sweep keeps "
                          f"beside a results file; give a file such as results/sweep.nc")
    return path


class TrainingConfig(ConfigError):
    """The config has a `training:` section: sweep train's (sweep.training.settings reads it)."""


def from_dict(raw: dict, source: Path | None = None, overrides: tuple[str, ...] = ()) -> Config:
    for key in raw:
        if key == "training":
            raise TrainingConfig("training: a training config (sweep train CONFIG trains and "
                                 "observes it)")
        if key not in TOP_KEYS:
            raise ConfigError(f"{clip(key)}: unknown top-level key ("
                              f"{suggest(key, TOP_KEYS)}allowed: {', '.join(TOP_KEYS)})")
    name = raw.get("name")
    if not isinstance(name, str) or not name.strip():
        raise ConfigError("name: required, a non-empty string naming the outputs")
    if "/" in name or name.startswith(".") or not name.isprintable():
        raise ConfigError(f"name: {show(name)} must be printable, without '/', not starting "
                          "with '.'")
    sections = {s: build_section(cls, raw.get(s), s) for s, cls in SECTIONS.items()}
    output = build_section(Output, raw.get("output"), "output")
    if not output.path.isprintable():
        raise ConfigError(f"output.path: {show(output.path)} contains control characters")
    output = replace(output, path=output_path(output.path or f"results/{name}.nc"))
    grid = raw.get("grid") or {}
    if not isinstance(grid, dict):
        raise ConfigError(f"grid: expected a mapping of axes, got {show(grid)}")
    return Config(name=name, output=output, grid=grid, source=source, overrides=overrides,
                  given=_given(sections, raw, overrides), **sections)
