"""Curves drawn over a measurement: a `sweep threshold` boundary with its interval, and the
theory of `sweep theory` (the equiangular ODE boundary and rho(t), the noise threshold).

Each overlay is checked against the data before it is drawn: a file of the wrong kind, from
other results, or for another n, attention model or d is refused (a ConfigError naming it),
never drawn unlabelled. What is drawn is also returned as plain numbers for the figure's
sidecar (write_numbers). The axes are passed in; matplotlib is imported by
sweep.analysis.plots only.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from sweep.analysis import labels, results
from sweep.errors import ConfigError


def number(value):
    """A number for a JSON sidecar: 6 significant digits (what a figure or prose can show),
    None for NaN, "inf" for infinity; text as it is."""
    if isinstance(value, (str, np.str_)):
        return str(value)
    value = float(value)
    if np.isnan(value):
        return None
    if np.isinf(value):
        return "inf" if value > 0 else "-inf"
    return float(f"{value:.6g}")


def numbers(values) -> list:
    return [number(v) for v in np.asarray(values).ravel()]


def write_numbers(shown: dict, path) -> Path:
    """The sidecar: JSON with one line per point or curve, so that a diff reads as a table."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(_json(shown) + "\n")
    return path


def _json(value, indent: str = "") -> str:
    inner = indent + " "
    if isinstance(value, dict) and any(isinstance(v, (dict, list)) for v in value.values()):
        items = [f"{inner}{json.dumps(k)}: {_json(v, inner)}" for k, v in value.items()]
        return "{\n" + ",\n".join(items) + f"\n{indent}}}"
    if isinstance(value, list) and any(isinstance(v, (dict, list)) for v in value):
        return "[\n" + ",\n".join(inner + _json(v, inner) for v in value) + f"\n{indent}]"
    return json.dumps(value, ensure_ascii=False)


# ---------------------------------------------------------------- checks

def check_threshold(th, ds, path: str = "threshold file") -> None:
    """th must be a `sweep threshold` dataset computed from these results."""
    if "threshold" not in th.data_vars or "along" not in th.attrs:
        raise ConfigError(f"{path}: not a threshold file (no variable threshold; "
                          "`sweep threshold ... -o FILE` writes one)")
    mine, theirs = ds.attrs.get("sweep_config_hash"), th.attrs.get("sweep_config_hash")
    if mine and theirs and mine != theirs:
        raise ConfigError(f"{path}: computed from other results (config hash {theirs}, these "
                          f"results {mine})")


def check_theory(theory, ds, path: str = "theory file") -> None:
    """theory must be a `sweep theory` dataset for the n and attention model of the data."""
    kind = theory.attrs.get("theory")
    if kind is None:
        raise ConfigError(f"{path}: not a theory file (`sweep theory ... -o FILE` writes one)")
    if kind != "equiangular":
        return
    n = results.parameter(ds, "n")
    values = np.unique(np.asarray(getattr(n, "values", n), dtype=float)) if n is not None else []
    if len(values) and (len(values) > 1 or values[0] != float(theory.attrs["n"])):
        shown = ", ".join(f"{v:g}" for v in values)
        raise ConfigError(f"{path}: the equiangular ODE of n = {theory.attrs['n']}, the data "
                          f"have n = {shown}; make one per n (sweep theory equiangular --n "
                          f"{values[0]:g}) and --sel n=...")
    model = results.parameter(ds, "attention")
    model = None if model is None else np.unique(np.asarray(getattr(model, "values", model)))
    if model is not None and (len(model) > 1 or str(model[0]) != theory.attrs.get("model")):
        raise ConfigError(f"{path}: the ODE of {theory.attrs.get('model')} attention, the data "
                          f"have attention = {', '.join(map(str, model))}")


def panel_slice(ds, facet, value, what: str):
    """The part of an overlay dataset that belongs to the panel facet = value (exactly)."""
    if facet and facet in ds.dims:
        ds = ds.isel({facet: results.position(ds[facet], value, f"{what} file:")})
    extra = [d for d in ds.dims if ds.sizes[d] > 1]
    if len(extra) > 1:
        raise ConfigError(f"{what} file: axes {', '.join(extra)} do not fit this plot")
    return ds


# ---------------------------------------------------------------- drawing

THRESHOLD_COLOUR = "#e7298a"  # magenta: seen on viridis's dark and light ends and on white


def draw_threshold(ax, th, x, y, at) -> list[dict]:
    """The boundary and its interval (magenta); returns its points. A threshold taken at one
    value of the other axis (along beta at the final time, over a (beta, time) map) is one
    number per panel: a line across the panel with its interval."""
    along = th.attrs.get("along")
    if along not in (x, y):
        raise ConfigError(f"threshold file: along {along!r} is not an axis of this plot "
                          f"({x}, {y})")
    other = y if along == x else x
    if other not in th.coords:
        raise ConfigError(f"threshold file: has no axis {other!r} to draw against")
    var = str(th.attrs.get("var")).replace("_", " ")
    text = (f"{labels.symbol(along)} where the seed-mean {var} reaches "
            f"{th.attrs.get('level'):g} (95% bootstrap interval)")
    values = [np.atleast_1d(th[v].values) for v in ("threshold", "threshold_low",
                                                    "threshold_high")]
    mid, lo, hi = (at(along, v) for v in values)
    if th.threshold.ndim == 0:
        span, line = (ax.axvspan, ax.axvline) if along == x else (ax.axhspan, ax.axhline)
        if np.isfinite(lo[0]) and np.isfinite(hi[0]):
            span(lo[0], hi[0], color=THRESHOLD_COLOUR, alpha=0.25, lw=0)
        line(mid[0], color=THRESHOLD_COLOUR, lw=1.6,
             label=f"{text}, {labels.symbol(other)} = {th[other].item():g}")
    else:
        p = at(other, th[other].values)
        fill, curve = ((ax.fill_betweenx, lambda: ax.plot(mid, p)) if along == x else
                       (ax.fill_between, lambda: ax.plot(p, mid)))
        fill(p, lo, hi, color=THRESHOLD_COLOUR, alpha=0.25, lw=0)
        curve()[0].set(color=THRESHOLD_COLOUR, lw=1.6, label=text)
    return [{other: number(o), "threshold": number(t), "low": number(a), "high": number(b)}
            for o, t, a, b in zip(np.atleast_1d(th[other].values), *values)]


REFINED_COLOUR = "white"  # white discs edged in black: seen on every viridis colour


def check_refined(ref, path: str = "refinement file") -> None:
    """ref must be a `sweep refine` dataset (its samples and thresholds)."""
    if "sample" not in ref.dims or "along" not in ref.attrs or "threshold" not in ref:
        raise ConfigError(f"{path}: not a refinement (no sample dimension; `sweep refine` "
                          "writes one)")


def draw_refined(ax, ref, x, y, facet, value, at) -> dict:
    """The points a refinement sampled (discs, larger with more seeds) and its threshold
    with its interval (error bars) over this panel; returns its jobs and rounds, and a
    record per line."""
    along = ref.attrs["along"]
    if along not in (x, y):
        raise ConfigError(f"refinement file: along {along!r} is not an axis of this plot "
                          f"({x}, {y})")
    other = y if along == x else x
    if f"{other}_sample" not in ref.coords:
        raise ConfigError(f"refinement file: has no axis {other!r} to draw against")
    keep = np.ones(ref.sizes["sample"], bool)
    if facet and f"{facet}_sample" in ref.coords:
        keep = np.asarray(ref[f"{facet}_sample"].values == value)
    th = panel_slice(ref[["threshold", "threshold_low", "threshold_high", "points"]],
                     facet, value, "refinement")
    pairs = np.stack([ref[f"{along}_sample"].values[keep],
                      ref[f"{other}_sample"].values[keep].astype(float)], axis=1)
    points, seeds = np.unique(pairs, axis=0, return_counts=True)
    a, o = at(along, points[:, 0]), at(other, points[:, 1])
    ax.scatter(*((a, o) if along == x else (o, a)), s=4 + 3 * seeds, facecolors=REFINED_COLOUR,
               edgecolors="black", linewidths=0.6, zorder=3,
               label=f"refine's samples (area: seeds), {len(pairs)} jobs")
    mid, lo, hi = (np.atleast_1d(th[v].values) for v in ("threshold", "threshold_low",
                                                         "threshold_high"))
    p, m = at(other, np.atleast_1d(th[other].values)), at(along, mid)
    bars = [np.nan_to_num(m - at(along, lo)), np.nan_to_num(at(along, hi) - m)]
    ax.errorbar(*((m, p) if along == x else (p, m)), **{"xerr" if along == x else "yerr":
                bars}, fmt="D", ms=4, color="black", mfc=REFINED_COLOUR, lw=1, zorder=4,
                label="refine's threshold (95% bootstrap interval)")
    lines = [{other: number(q), "points": int(n), "threshold": number(t), "low": number(lw),
              "high": number(h)} for q, n, t, lw, h in zip(
                  np.atleast_1d(th[other].values), np.atleast_1d(th.points.values), mid, lo, hi)]
    return {"jobs": int(keep.sum()), "rounds": int(ref.attrs.get("rounds", 0)),
            "tolerance": str(ref.attrs.get("tolerance")), "lines": lines}


def draw_theory(ax, theory, x, y, facet, value, at) -> dict:
    """The theory boundary (dashed red); returns its points."""
    kind = theory.attrs.get("theory")
    if kind == "equiangular" and {x, y} == {"beta", "time"}:
        curve = {"beta": theory.beta.values, "time": theory.t_boundary.values}
        text = (f"equiangular ODE, n = {theory.attrs['n']}: ρ = 1 − "
                f"{labels.power_text(float(theory.attrs.get('eps', 0)))}")
    elif kind == "kappa-c" and {x, y} == {"beta", "noise"}:
        noise = panel_slice(theory.noise_c, facet if facet == "d" else None, value, "theory")
        curve = {"beta": noise.beta.values, "noise": noise.values.ravel()}
        text = f"noise threshold 1/κ_c, d = {', '.join(f'{v:g}' for v in np.ravel(noise.d))}"
    else:
        raise ConfigError(f"theory file ({kind}): has no curve over ({x}, {y}); equiangular "
                          "fits (beta, time), kappa-c fits (beta, noise)")
    ax.plot(at(x, curve[x]), at(y, curve[y]), color="tab:red", ls="--", lw=1.6, label=text)
    return {axis: numbers(v) for axis, v in curve.items()}


def deviations(points: list[dict], curve: dict, along: str) -> list[dict]:
    """Each threshold point beside the theory at the same grid value: (measured - ODE) / ODE."""
    other = next(k for k in curve if k != along)
    grid, ode = np.asarray(curve[other], float), np.asarray(curve[along], float)
    out = []
    for p in points:
        hit = np.flatnonzero(np.isclose(grid, float(p[other]), rtol=1e-9, atol=1e-12))
        if not hit.size or p["threshold"] is None or not np.isfinite(ode[hit[0]]):
            continue
        t = ode[hit[0]]
        out.append({other: p[other], "measured": p["threshold"], "ode": number(t),
                    "deviation": number((p["threshold"] - t) / t) if t else None})
    return out


def draw_rho(ax, theory, by, value, x) -> list | None:
    """The equiangular cosine rho_beta(t) beside a measured line (mean_cosine in high d)."""
    if theory.attrs.get("theory") != "equiangular" or x != "time" or by != "beta":
        raise ConfigError("theory file: a line plot overlays the equiangular rho(t), which "
                          "needs --x time and one line per beta")
    k = results.position(theory.beta, value, "theory file:")
    rho = theory.rho.isel(beta=k)
    first = not any(line.get_label().startswith("equiangular ODE") for line in ax.get_lines())
    ax.plot(theory.time.values, rho.values, color="black", ls=":", lw=1.2,
            label=f"equiangular ODE ρ(t), n = {theory.attrs['n']}" if first else None)
    return numbers(rho.values)
