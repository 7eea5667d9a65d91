"""The words of a figure: axis and variable labels with their symbols (beta, t, d, n) and
units, the actual cluster_eps, titles that say which statistic is drawn over how many seeds,
and why a cell is empty. Read from the results' own attributes; no matplotlib here."""

from __future__ import annotations

import math
import re
from pathlib import Path

import numpy as np

from sweep.analysis import results
from sweep.storage.coords import number_text

SYMBOLS = {"beta": "β", "time": "t", "d": "d", "n": "n", "noise": "D", "dt": "Δt",
           "heads": "h", "head_beta": "β_h", "overlap": "ρ₀", "cluster_eps": "ε",
           "kappa": "κ", "layer": "layer", "lambda": "λ", "mu": "μ",
           "checkpoint": "steps"}
WORDS = {"beta": "inverse temperature", "time": "time", "d": "dimension", "n": "tokens",
         "noise": "noise", "dt": "step", "heads": "heads", "head_beta": "head temperatures",
         "overlap": "initial cosine", "cluster_eps": "cluster threshold", "kappa": "coupling",
         "lambda": "L2 weight", "mu": "regulariser weight", "checkpoint": "training"}
VARIABLES = {
    "clustered_fraction": "fraction of pairs with cos > 1 − {eps}",
    "n_clusters": "clusters (components of cos > 1 − {eps})",
    "max_clusters": "most clusters over t > 0 (cos > 1 − {eps})",
    "largest_cluster": "largest cluster / n (cos > 1 − {eps})",
    "order_parameter": "order parameter r = |mean of x_i|",
    "mean_cosine": "mean pairwise cosine",
    "min_cosine": "smallest pairwise cosine",
    "energy": "interaction energy E_β",
    "attention_entropy": "attention entropy (nats)",
    "t_cluster": "clustering time t (half of the pairs merged)",
    # training results (sweep train): short labels, the long names stay in the file
    "loss": "training objective (task loss + λ Σ|W_l|²)",
    "eval_loss": "task loss of the output",
    "ffn_weight": "FFN weight W_l",
    "escape_depth": "escape depth (layer)",
    "peak_fall": "fall from the running peak",
}
REDUCED = {"plateau": "plateau of {}", "max": "maximum over t of {}", "min": "minimum over t of {}",
           "mean": "mean over t of {}"}
_SUPERSCRIPT = str.maketrans("-0123456789", "⁻⁰¹²³⁴⁵⁶⁷⁸⁹")


def symbol(axis: str) -> str:
    return SYMBOLS.get(axis, axis)


def short(text) -> str:
    """A label as a legend or tick shows it: a matrix file by its name without folders."""
    text = str(text)
    return Path(text).stem if text.endswith(".npy") else text


def matrix_kind(label: str) -> tuple[str, int]:
    """('identity' | 'gaussian' | 'trained', layer) of a `qk` coordinate (files written by
    `sweep extract --controls`: layerL_qk.npy, layerL_qk_gaussian.npy)."""
    found = re.search(r"layer(\d+)_qk(_gaussian)?\.npy", label)
    if not found:
        return "identity", 0
    return ("gaussian" if found.group(2) else "trained"), int(found.group(1))


def value_text(axis: str, value) -> str:
    """'β = 4.5', 'd = 32', 'qk = layer1_qk'."""
    return f"{symbol(axis)} = {short(results.cell(value))}"


def axis_label(name: str, coord) -> str:
    """'inverse temperature β', 'time t', or the coordinate's long name; units unless 1."""
    attrs = coord.attrs if coord is not None else {}
    if name in WORDS:
        text = f"{WORDS[name]} {symbol(name)}"
    else:
        text = str(attrs.get("long_name", name))
    return text + _units(attrs)


def _units(attrs) -> str:
    units = str(attrs.get("units", "1"))
    return "" if units in ("1", "") else f" [{units}]"


def power_text(value: float) -> str:
    """10⁻³ for 1e-3; other numbers as their shortest exact text."""
    exponent = math.log10(value) if value > 0 else math.nan
    if math.isfinite(exponent) and exponent == round(exponent):
        return f"10{str(int(round(exponent))).translate(_SUPERSCRIPT)}"
    return number_text(value)


def eps_text(ds) -> str:
    """The run's cluster_eps as a number, or ε where it is an axis."""
    eps = results.parameter(ds, "cluster_eps", 1e-3)
    if hasattr(eps, "values"):
        values = np.unique(np.asarray(eps.values, dtype=float))
        return power_text(float(values[0])) if values.size == 1 else "ε"
    return power_text(float(eps))


def var_label(ds, var: str, time=None) -> str:
    """The variable in words, with the run's eps, its reduction over time and its units."""
    da = ds[var]
    text = VARIABLES.get(var, str(da.attrs.get("long_name", var))).format(eps=eps_text(ds))
    if time in REDUCED and "time" in da.dims:
        text = REDUCED[time].format(text)
    return text + _units(da.attrs)


def statistic_text(frame) -> str:
    """Which number each point is, over how many seeds."""
    s = frame.seeds
    seeds = f"{s} seed{'s' * (s != 1)}"
    if frame.statistic == "threshold":
        return f"mean of {seeds}, 95% bootstrap band"
    if frame.statistic == "median":
        return f"time by which half of {seeds} clustered (lower median, never = ∞)"
    fewest = int(frame.count.min()) if frame.count.size else s
    fewer = " (a seed without a value is skipped)" if fewest < s else ""
    return f"mean of {seeds}{fewer}"


def title(ds, var: str, frame, time, selection=None) -> str:
    """'<config>: <statistic>, t = 30, d = 8' from the results' attributes."""
    name = str(ds.attrs.get("title", "")).replace("sweep results: ", "") or "results"
    da = ds[var]
    if time in (None, "final") and "time" in da.dims:
        when = f", t = {results.cell(float(ds.time.values[-1]))}"
    elif time not in (None, "final", "all") and time not in REDUCED:
        when = f", t = {time}"
    else:
        when = ""
    grid = frame.centre.coords  # a selected axis keeps its grid value as a scalar coordinate
    fixed = "".join(f", {value_text(k, grid[k].item() if k in grid else v)}"
                    for k, v in (selection or {}).items())
    n = results.parameter(ds, "n")
    model = f" (n = {n})" if isinstance(n, int) else ""
    return f"{name}{model}: {statistic_text(frame)}{when}{fixed}"


def nan_reason(ds, var: str, time, statistic: str) -> str:
    """Why a cell of the figure has no value."""
    t_max = results.cell(float(ds.time.values[-1])) if "time" in ds.coords else "t_max"
    if statistic == "median":
        return f"never: fewer than half of the seeds clustered by t = {t_max}"
    if time == "plateau":
        return f"no plateau: the count never left its start by t = {t_max}"
    if var == "overlap_gap":
        return "fewer than 2 groups"
    return "no value (missing runs or undefined)"
