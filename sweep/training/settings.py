"""A training config: a layer-model config plus a `training:` section, whose keys may also be
grid axes (`lambda`, `task`, `lr`, ...) beside the model's (`noise`, `seed`, ...).

The model, init and grid of the config are read by sweep.config.schema and sweep.config.grid as
for `sweep run`; the training section and its axes are taken out first and checked here by
the same rules (config.check_value), so a bad value is one line naming its key.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, fields, replace
from pathlib import Path

import yaml

from sweep.config.grid import Axis, Jobs, axis_values, expand
from sweep.config.schema import (
    Config,
    apply_overrides,
    check_value,
    clip,
    from_dict,
    make_rule,
    read_yaml,
    show,
)
from sweep.errors import ConfigError
from sweep.execution import resources
from sweep.training import inputs
from sweep.training.tasks import REGULARIZERS, TASKS

OPTIMIZERS = ("adam", "sgd")
INITS = ("model", "zero", "gaussian", "orthogonal", "antisymmetric")  # optimise.initial
MAX_STEPS = 10**6


@dataclass(frozen=True)
class Training:
    """The `training:` section (docs/training.md). `lam` is the YAML key `lambda`."""

    task: str = "labels"
    lam: float = 0.0
    optimizer: str = "adam"
    lr: float = 0.01
    steps: int = 100
    batch: int = 8
    checkpoints: int = 2
    seed: int = 0
    regularizer: str = "l2"
    mu: float = 0.0
    init: str = "model"
    init_scale: float = 1.0
    labels: str | None = None   # .npy of the token labels of a file start (training.inputs)

    def to_dict(self) -> dict:
        """The section as YAML keys; `labels` only where set (a clusters start has none)."""
        return {_KEY.get(f.name, f.name): getattr(self, f.name) for f in fields(self)
                if f.name != "labels" or self.labels is not None}


def _npy(value: str) -> str:
    if not value.endswith(".npy"):
        raise ValueError(f"{show(value)} is not a path/to/labels.npy")
    return value


_KEY = {"lam": "lambda"}            # attribute -> YAML key
_ATTR = {v: k for k, v in _KEY.items()}
RULES = {
    "task": make_rule(str, choices=TASKS),
    "lambda": make_rule(float, low=0.0),
    "optimizer": make_rule(str, choices=OPTIMIZERS),
    "lr": make_rule(float, low=0.0),
    "steps": make_rule(int, low=1, high=MAX_STEPS),
    "batch": make_rule(int, low=1, high=4096),
    "checkpoints": make_rule(int, low=2, high=MAX_STEPS + 1),
    "seed": make_rule(int, low=0),
    "regularizer": make_rule(str, choices=REGULARIZERS),
    "mu": make_rule(float, low=0.0),
    "init": make_rule(str, choices=INITS),
    "init_scale": make_rule(float, low=0.0),
    "labels": make_rule(str, check=_npy),
}
# sweepable (seed: the grid's replicates)
AXES = ("task", "lambda", "optimizer", "lr", "batch", "regularizer", "mu", "init",
        "init_scale")


@dataclass(frozen=True)
class TrainConfig:
    config: Config               # the layer model, its init and its grid (training axes out)
    training: Training           # the section, before its axes are applied
    axes: tuple[Axis, ...]       # the training axes, in declaration order
    order: tuple[str, ...]       # every dimension of the results, in declaration order

    def points(self):
        """(position, Training) for every point of the training axes, in C order."""
        for position in itertools.product(*(range(len(a)) for a in self.axes)):
            values = {_ATTR.get(a.name, a.name): a.values[0][i]
                      for a, i in zip(self.axes, position)}
            yield position, replace(self.training, **values)

    def to_yaml(self) -> str:
        axes = {a.name: list(a.values[0]) for a in self.axes}
        return yaml.safe_dump({"training": self.training.to_dict(), "axes": axes},
                              sort_keys=False)


def load_training(path: str | Path, overrides: list[str] = ()) -> TrainConfig:
    """Read, override and validate a training config; ConfigError names the key."""
    raw = apply_overrides(read_yaml(path), list(overrides))
    return from_raw(raw, Path(path), tuple(overrides))


def from_raw(raw: dict, source: Path | None = None, overrides: tuple = ()) -> TrainConfig:
    """A training config from its YAML data: the training section and axes taken out, the
    rest read by sweep.config.schema."""
    raw = dict(raw)
    section = raw.pop("training", None)
    if section is None:
        raise ConfigError("training: required by sweep train (task, lambda, optimizer, lr, "
                          "steps, batch, checkpoints, seed, regularizer, mu, init, init_scale, "
                          "labels)")
    training = _section(section)
    grid, train_axes = raw.get("grid"), ()
    if isinstance(grid, dict):  # anything else: sweep.config.schema says what is wrong
        typed = {item.partition("=")[0].strip() for item in overrides}
        train_axes = _axes(grid, section, typed)
        raw["grid"] = {k: v for k, v in grid.items() if _name(k) not in AXES}
    config = from_dict(raw, source, overrides)
    return TrainConfig(config, training, train_axes, _order(grid or {}))


def _order(grid: dict) -> tuple[str, ...]:
    """The dimension names in declaration order (a zip group is named by its first key)."""
    names = []
    for key, spec in grid.items():
        if key == "zip" and isinstance(spec, list):
            names += [str(next(iter(g))).rpartition(".")[2] for g in spec
                      if isinstance(g, dict) and g]
        elif spec is not None:
            names.append(str(key).rpartition(".")[2])
    return tuple(names)


def _name(key) -> str:
    key = str(key)
    return key.partition(".")[2] if key.startswith("training.") else key


def _section(raw) -> Training:
    if not isinstance(raw, dict):
        raise ConfigError(f"training: expected a mapping, got {show(raw)}")
    clean = {}
    for key, value in raw.items():
        if key not in RULES:
            raise ConfigError(f"training.{clip(key)}: unknown key (allowed: "
                              f"{', '.join(RULES)})")
        clean[_ATTR.get(key, key)] = check_value(f"training.{key}", value, RULES[key])
    return Training(**clean)


def _axes(grid: dict, section: dict, typed: set[str]) -> tuple[Axis, ...]:
    """The training axes; a training value an axis sweeps is the axis's default (as in the
    model section), refused only when --set just gave it (`typed`)."""
    out = []
    for key, spec in grid.items():
        name = _name(key)
        if name not in AXES or spec is None:
            if str(key).startswith("training."):
                raise ConfigError(f"grid.{clip(key)}: not a sweepable training key (one of "
                                  f"{', '.join(AXES)})")
            continue
        at = f"grid.{clip(key)}"
        if name in section and f"training.{name}" in typed:
            raise ConfigError(f"training.{name}: {show(section[name])} from --set is never "
                              f"used, {at} sweeps {name}; drop one of them")
        values, log = axis_values(spec, at)
        clean = tuple(check_value(f"{at}[{i}]", v, RULES[name]) for i, v in enumerate(values))
        if len(set(clean)) != len(clean):
            raise ConfigError(f"{at}: values must be distinct, got {show(list(clean))}")
        out.append(Axis((name,), ("training",), (clean,), log))
    return tuple(out)


def jobs(tc: TrainConfig) -> Jobs:
    """The layer-model jobs of the grid (sweep.config.grid), each checked for training."""
    expanded = expand(tc.config)
    for job in expanded:
        check_trainable(job, f" (job {job.index}: {job.describe()})" if job.params else "")
    for _, training in tc.points():
        if training.checkpoints > training.steps + 1:
            raise ConfigError(f"training.checkpoints: {training.checkpoints} checkpoints for "
                              f"{training.steps} steps (at most steps + 1)")
        if training.init == "antisymmetric" and any(j.model.ffn == "mlp" for j in expanded):
            raise ConfigError("training.init: antisymmetric needs the square in-step FFN W_l "
                              "(model.ffn none, gaussian or path.npy), not ffn: mlp")
        energy = training.task in ("energy", "entropy") or training.regularizer == "energy"
        if energy and any(j.model.beta <= 0 for j in expanded):
            raise ConfigError(f"model.beta: training.task {training.task} (regularizer "
                              f"{training.regularizer}) needs beta > 0 (the kernel "
                              f"exp(beta <x_i, x_j>))")
        check_labels(training, expanded)
    batch = max(t.batch for _, t in tc.points())
    check_memory(max((step_bytes(job.model, batch) for job in expanded), default=0))
    return expanded


def check_labels(training: Training, expanded) -> None:
    """training.labels: with a file start, read and checked per job (n may differ), needed by
    the task labels; refused with a clusters start (its labels are i mod k)."""
    for job in expanded:
        if job.init.kind != "file":
            if training.labels is not None:
                raise ConfigError("training.labels: only with init.kind: file (a clusters "
                                  "start labels token i by i mod k)")
        elif training.labels is not None:
            inputs.labels(training.labels, job)
        elif training.task == "labels":
            raise ConfigError("training.labels: the task labels on an init.kind: file start "
                              "needs each token's label (path/to/labels.npy, n integers)")


def step_bytes(m, batch: int) -> int:
    """What one training step holds: per sample and layer the tape (attention weights
    [h, n, n], keys and values [h, n, d], tokens, noise), about twice over in the backward
    pass."""
    per_layer = m.heads * (2 * m.n * m.n + 2 * m.n * m.d) + 6 * m.n * m.d
    return 2 * 8 * batch * m.layers * per_layer


def check_memory(need: int, available: int | None = None) -> None:
    available = resources.available_memory() if available is None else available
    if available is not None and need > available:
        raise ConfigError(f"training.batch: a training step needs about {need / 2**30:.3g} GiB "
                          f"of memory, more than the {available / 2**30:.3g} GiB available; "
                          f"use a smaller batch (or fewer tokens, heads or layers)")


def check_trainable(job, at: str = "") -> None:
    """The model sweep train differentiates: norm: sphere layers of softmax attention over
    all tokens, an in-step FFN W_l x (ffn: none starts it at zero) or an MLP whose output
    matrix alone is trained, a clusters start."""
    m, init = job.model, job.init
    need = {"model.layers": (not m.kind.stacked, "a layer model (set model.layers)"),
            "model.norm": (m.norm != "sphere", "norm: sphere"),
            "model.attention": (m.attention != "softmax", "attention: softmax"),
            "model.mask": (m.mask != "dense", "mask: dense"),
            "model.ffn": (m.ffn == "linear", "the in-step FFN W_l x (ffn none, gaussian or "
                          "path.npy) or fixed features (ffn: mlp, its W_2 trained)"),
            "model.alpha": (m.alpha <= 0, "alpha > 0"),
            "init.kind": (init.kind not in ("clusters", "file"),
                          "init.kind: clusters (the task's mixture) or file (fixed tokens)"),
            "init.jitter": (init.jitter > 0, "init.jitter: 0")}
    for key, (refused, what) in need.items():
        if refused:
            raise ConfigError(f"{key}: sweep train needs {what}{at}")
