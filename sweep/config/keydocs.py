"""The config keys as docs/config.md lists them: each section's fields with their type, default
and allowed values read from the field records of sweep.config.schema, beside a description
kept here, one per field (tests/test_doc_tables.py checks that every field has one and that
the page holds what `key_tables` writes: `make docs`).

A rule given by a check function (a matrix spec, a mask, a list of betas) cannot be read off
the record; ALLOWED states it for those fields.
"""

from __future__ import annotations

from dataclasses import MISSING, fields

from sweep.config.schema import COMPONENTS, RANDOM_MATRICES, SECTIONS, SPECS, Output
from sweep.kernels.codes import OBSERVABLES

DESCRIPTIONS = {
    "model": {
        "attention": "how scores become weights (docs/models.md)",
        "beta": "inverse temperature of attention",
        "d": "dimension of the tokens' ambient space (the sphere S^{d-1})",
        "n": "number of tokens",
        "heads": "attention heads, averaged (or summed: head_combine)",
        "head_beta": "one beta per head (then beta is not used)",
        "qk": "the score matrix M_h = Q_h^T K_h (a list: one per layer)",
        "v": "the value matrix V_h (a list: one per layer)",
        "mask": "which tokens each token attends to",
        "noise": "strength of the noise added to the dynamics",
        "ffn": "the feed-forward term W (layer models: also their FFN sublayer)",
        "beta_scale": "effective beta = beta x (1, d, sqrt d, log n)",
        "layers": "a layer model of this many blocks (docs/layers.md); null: a flow",
        "alpha": "layer models: residual scale of a block's update",
        "skip": "layer models: weight of the residual stream (0: no skip connection)",
        "norm": "layer models: where the normalisation sits (sphere: the flows' own step)",
        "norm_fn": "layer models: the N of post, pre and peri blocks",
        "head_combine": "how heads are combined",
        "layer_beta": "layer models: one beta per layer",
        "ffn_width": "layer models: hidden width m of ffn: mlp (default 4 d)",
        "weights": "layer models: a weights folder (sweep extract --full), or its index .json",
        "components": "layer models: the parts switched off",
        "redraw_every": "random qk / v drawn afresh every this many time units (a whole "
                        "multiple of save_every; docs/models.md); null: drawn once",
        "space": "where the tokens live: the unit sphere, or R^d unnormalised (softmax flows "
                 "only; docs/models.md, \"Euclidean space\")",
    },
    "init": {
        "kind": "how the start is drawn (docs/models.md)",
        "overlap": "equiangular: the initial pairwise cosine",
        "clusters": "clusters: how many",
        "spread": "clusters: their angular spread",
        "jitter": "Gaussian perturbation added before renormalising (not renormalised in "
                  "euclidean space)",
        "path": "file: a .npy of starts, relative to the config file",
    },
    "integrate": {
        "method": "the integrator (docs/integrators.md)",
        "dt": "the step, used as given, never rescaled",
        "t_max": "the end time, a whole multiple of save_every",
        "save_every": "observables at 0, save_every, ..., t_max; a whole multiple of dt",
        "cluster_eps": "pairs with cosine > 1 - eps count as clustered",
        "dtype": "the state's precision (observables are float64)",
    },
    "output": {
        "path": "the results file, relative to the working directory",
        "positions": "token positions kept (when n and d are not swept)",
        "observables": "the series a save records: a save computes only those",
        "hist_bins": "B > 0: flows record cosine_hist, the pairwise cosines' histogram on B "
                     "equal bins over [-1, 1] at each save (docs/results.md); 0: none",
    },
}
_MATRIX = " | ".join(("identity", *RANDOM_MATRICES))
ALLOWED = {
    ("model", "head_beta"): "a list of numbers >= 0",
    ("model", "layer_beta"): "a list of numbers >= 0, one per layer",
    ("model", "qk"): f"{_MATRIX} | path.npy",
    ("model", "v"): f"{_MATRIX} | qk | path.npy",
    ("model", "mask"): "dense | causal | window:W | topk:K | groups:G | leaders:L",
    ("model", "ffn"): "none | gaussian | linear | mlp | path.npy",
    ("model", "components"): f"full, or any of {', '.join(c for c in COMPONENTS if c != 'full')}"
                             " joined by +",
    ("model", "weights"): "a folder, or its index .json",
    ("init", "path"): "a .npy file",
    ("output", "path"): "a file (not a directory, nor ending in .parts or .jobs)",
    ("output", "observables"): "all, or a list of: " + ", ".join(OBSERVABLES),
}
DEFAULTS = {("output", "path"): "results/<name>.nc"}
_TYPES = {int: "integer", float: "number", str: "string", list: "list",
          SPECS: "string or list"}


def allowed(section: str, name: str, rule: dict) -> str:
    """The values a field takes, from its rule (or ALLOWED where a check function decides)."""
    text = ALLOWED.get((section, name))
    if text is None and rule["choices"] is not None:
        text = " \\| ".join(rule["choices"])
    elif text is None:
        low, high = rule["low"], rule["high"]
        bounds = [f"{'>' if rule['low_open'] else '>='} {low:g}"] if low is not None else []
        bounds += [f"{'<' if rule['high_open'] else '<='} {high:g}"] if high is not None else []
        text = ", ".join(bounds)
    else:
        text = text.replace("|", "\\|")
    return f"{text} (or null)" if rule["nullable"] and text else text or "any"


def _default(section: str, f) -> str:
    value = DEFAULTS.get((section, f.name), f.default if f.default is not MISSING else "")
    return "null" if value is None else f"`{value}`" if value != "" else ""


def key_tables() -> str:
    """Markdown: one table per section, a row per key."""
    out = []
    for section, cls in {**SECTIONS, "output": Output}.items():
        out += [f"### `{section}`", "", "| key | type | default | allowed | description |",
                "|---|---|---|---|---|"]
        for f in fields(cls):
            rule = f.metadata
            out.append(f"| `{f.name}` | {_TYPES[rule['kind']]} | {_default(section, f)} | "
                       f"{allowed(section, f.name, rule)} | {DESCRIPTIONS[section][f.name]} |")
        out.append("")
    return "\n".join(out).rstrip("\n")


PAGE_NAME = "docs/config.md"
BEGIN, END = "<!-- keys -->", "<!-- /keys -->"


def render(page: str) -> str:
    """`page` with the key tables between its BEGIN and END lines."""
    head, _, rest = page.partition(BEGIN + "\n")
    _, _, tail = rest.partition(END)
    return f"{head}{BEGIN}\n{key_tables()}\n{END}{tail}"


if __name__ == "__main__":  # python -m sweep.config.keydocs (`make docs`)
    from pathlib import Path

    path = Path(__file__).resolve().parents[2] / PAGE_NAME
    path.write_text(render(path.read_text()))
    print(f"wrote the key tables into {path}")
