"""Figures: phase diagrams (heatmaps with thresholds and theory) and line plots (trained
versus random attention matrices: sweep.analysis.comparison).

The only module that imports matplotlib, and only when a figure is drawn (Agg backend, no
display needed). The file format follows the extension: .png, .pdf, .svg. Every figure can
also write the numbers it shows (a JSON sidecar): the curves, bands and counts per point,
the threshold points and their deviation from the theory.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from sweep.analysis import labels, overlays, results
from sweep.analysis.overlays import number, numbers, write_numbers
from sweep.analysis.scales import edges, force_log, place, scale
from sweep.errors import ConfigError

MAX_FACETS = 6
MAX_LINES = 7
NAN_STYLE = dict(facecolor="0.92", edgecolor="0.6", hatch="//")


def _pyplot():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def plot(ds, var: str, path, x: str = "beta", y: str | None = None, time=None,
         selection=None, threshold=None, theory=None, series: str | None = None,
         numbers_path=None, refined=None, log: tuple[str, ...] = ()) -> Path:
    """Draw a heatmap of var over (x, y), or with y=None lines of var against x; save it,
    and with numbers_path the JSON of the numbers it shows.

    A dimension left over after the axes, `selection` and the seed statistic becomes one
    panel per value (at most MAX_FACETS). threshold: a `sweep threshold` dataset of these
    results, drawn with its interval; theory: a `sweep theory` dataset (equiangular
    t_boundary or rho, or kappa-c noise_c) for the data's n and attention model; refined:
    a `sweep refine` dataset, its samples and thresholds drawn over the heatmap. log: the
    axes ("x", "y") drawn on a log scale whatever their spacing (d = 2, 3, 8, 32), and
    "value": a line plot's values on a log scale.
    """
    path = _checked(path, ds, threshold, theory, refined)
    ds = _logged(ds, {"x": x, "y": y}, tuple(a for a in log if a != "value"))
    axes = [x] if y is None else [x, y]
    _distinct(results.variable(ds, var), x, y)
    fr = results.frame(ds, var, axes, time, selection)
    if y is None:
        series = series or _leftover(fr.centre, axes, first=True)
        axes += [series] if series else []
    facet = _facet(fr.centre, axes)
    when = time if "time" not in (x, y) else "all"
    shown = {"figure": path.name, "var": var, "statistic": fr.statistic, "seeds": fr.seeds,
             "title": labels.title(ds, var, fr, when, selection), "runs": _status(ds),
             "panels": []}
    plt = _pyplot()
    panels = list(fr.centre[facet].values) if facet else [None]
    fig, grid = plt.subplots(1, len(panels), figsize=(4.2 * len(panels) + 1.6, 4.3),
                             squeeze=False, layout="constrained")
    norm = _norm(fr.centre)  # one colour scale for every panel
    for ax, value in zip(grid[0], panels):
        part = _part(fr, facet, value)
        record = {"panel": labels.value_text(facet, value) if facet else None}
        if y is None:
            record["lines"] = _lines(ax, part, ds, x, series, theory, when)
            if "value" in log:
                ax.set_yscale("log")
        else:
            mesh = _heatmap(ax, part, x, y, norm)
            record.update(_nan_cells(ax, part.centre,
                                     labels.nan_reason(ds, var, when, fr.statistic)))
            record.update(_overlay(ax, part.centre, x, y, facet, value, threshold, theory,
                                   refined))
        record.update(_constant(ax, part.centre, record["panel"]))
        shown["panels"].append(record)
    if y is not None:
        _colour_bar(fig, mesh, grid[0], norm, labels.var_label(ds, var, when))
    _save(fig, grid[0], shown, path, numbers_path)
    return path


def _logged(ds, named: dict, log: tuple[str, ...]):
    """ds with the axes named by `log` ("x", "y") put on a log scale (force_log)."""
    for which in log:
        ds = force_log(ds, named[which], f"--log-{which}")
    return ds


def _distinct(da, x: str, y: str | None) -> None:
    if y is not None and results.axis_dim(da, x) == results.axis_dim(da, y):
        raise ConfigError(f"--y {y}: runs along the same dimension as --x {x}; a heatmap "
                          "needs two different axes")


def _checked(path, ds, threshold, theory, refined=None) -> Path:
    """The figure's path, once the overlays are known to fit the data."""
    path = Path(path)
    if path.suffix.lower() not in (".png", ".pdf", ".svg"):
        raise ConfigError(f"{path}: the figure must end in .png, .pdf or .svg")
    if threshold is not None:
        overlays.check_threshold(threshold, ds)
    if refined is not None:
        overlays.check_refined(refined)
    if theory is not None:
        overlays.check_theory(theory, ds)
    return path


def _save(fig, axes, shown: dict, path: Path, numbers_path) -> None:
    _legend(fig, axes)
    # about 13 characters of 10-point text per inch: the title wraps inside the figure
    fig.suptitle(_wrap(shown["title"], int(13 * fig.get_figwidth())), fontsize=10)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)
    _pyplot().close(fig)
    if numbers_path is not None:
        write_numbers(shown, numbers_path)


def _status(ds) -> dict:
    """How many runs of the results ended how (ok, non_finite, failed, missing)."""
    if "status" not in ds:
        return {}
    from sweep.kernels.codes import STATUS_MEANINGS

    codes = ds.status.values.ravel()
    return {STATUS_MEANINGS.get(int(c), str(c)): int((codes == c).sum())
            for c in np.unique(codes)}


def _part(fr, facet, value):
    if not facet:
        return fr
    pick = {facet: value}
    return results.Frame(fr.centre.sel(pick), fr.low.sel(pick), fr.high.sel(pick),
                         fr.count.sel(pick), fr.seeds, fr.statistic)


def _leftover(mean, axes, first: bool = False):
    dims = [results.axis_dim(mean, a) for a in axes if a is not None]
    left = [d for d in mean.dims if d not in dims and mean.sizes[d] > 1]
    return (left[0] if left else None) if first else left


def _facet(mean, axes) -> str | None:
    left = _leftover(mean, axes)
    if len(left) > 1:
        raise ConfigError(f"var {mean.name}: axes {', '.join(left)} remain; pick values with "
                          f"--sel {left[0]}=VALUE")
    if left and mean.sizes[left[0]] > MAX_FACETS:
        raise ConfigError(f"axis {left[0]!r}: {mean.sizes[left[0]]} values would be too many "
                          f"panels; pick some with --sel {left[0]}=VALUE")
    return left[0] if left else None


def _wrap(text: str, width: int = 48) -> str:
    import textwrap

    return "\n".join(textwrap.wrap(text, width))


def _fit(text: str, width: int) -> str:
    """An axis label on one line when it fits in `width` characters, else on two of about
    equal length (never three: a label is a name, not a sentence)."""
    if len(text) <= width:
        return text
    return _wrap(text, max(len(text) // 2 + 8, width // 2))


# ---------------------------------------------------------------- axes and scales

def _axis(ax, which: str, name: str, coord) -> str:
    kind = scale(coord)
    getattr(ax, f"set_{which}label")(labels.axis_label(name, coord))
    ticks = getattr(ax, f"set_{which}ticks")
    if kind == "log":
        getattr(ax, f"set_{which}scale")("log")
        v = np.asarray(coord.values, dtype=float)
        if v.size <= 12:  # label the grid values themselves, not powers of ten
            ticks(v, [f"{t:g}" for t in v])
            ticks([], minor=True)
    elif kind == "category":
        names = [labels.short(results.cell(t)) for t in coord.values]
        ticks(np.arange(len(names)), names, rotation=30 if max(map(len, names)) > 6 else 0)
    return kind


def _sorted(da, *axes):
    for a in axes:
        if not results.is_text(da[a]):
            da = da.sortby(da[a])
    return da


def _norm(centre):
    """One colour scale for every panel: log for counts spanning a decade or more."""
    from matplotlib.colors import LogNorm, Normalize

    v = np.asarray(centre.values, dtype=float)
    v = v[np.isfinite(v)]
    if not v.size:
        return Normalize(0, 1)
    low, high = float(v.min()), float(v.max())
    if centre.name in ("n_clusters", "max_clusters") and low >= 1 and high / low >= 8:
        return LogNorm(low, high)
    return Normalize(low, high if high > low else low + 1)


# ---------------------------------------------------------------- drawing

def _heatmap(ax, fr, x: str, y: str, norm):
    da = fr.centre
    xd, yd = results.axis_dim(da, x), results.axis_dim(da, y)
    da = _sorted(da, x, y).transpose(yd, xd)
    xk, yk = _axis(ax, "x", x, da[x]), _axis(ax, "y", y, da[y])
    xe, ye = edges(da[x].values, xk), edges(da[y].values, yk)
    values = np.where(np.isinf(da.values), np.nan, da.values)  # "never" cells are explained
    mesh = ax.pcolormesh(xe, ye, values, cmap="viridis", shading="flat", norm=norm)
    ax.set_xlim(xe[0], xe[-1])
    ax.set_ylim(ye[0], ye[-1])
    return mesh


def _lines(ax, fr, ds, x: str, series: str | None, theory, when) -> list[dict]:
    mean = fr.centre
    xd = results.axis_dim(mean, x)
    others = [d for d in mean.dims if d != xd]
    by = results.axis_dim(mean, series) if series else (others[0] if others else None)
    kind = _axis(ax, "x", x, mean[x])
    values = _picked(ax, mean, series, by)
    xs = np.arange(mean.sizes[xd]) if kind == "category" else mean[x].values.astype(float)
    style = dict(marker="o", ms=4, lw=1.0) if kind == "category" else dict(lw=1.5)
    drawn = []
    for value, look in zip(values, _looks(values)):
        pick = {by: value} if by else {}
        m, lo, hi, n = (a.sel(pick) for a in (fr.centre, fr.low, fr.high, fr.count))
        text = labels.value_text(by, value) if by else None
        if fr.statistic == "median":
            text = f"{text or 'median'} ({int(n.sum())} of {fr.seeds * n.size} runs clustered)"
        finite = np.where(np.isinf(m.values), np.nan, m.values)
        ax.plot(xs, finite, label=text, **{**style, **look})
        ax.fill_between(xs, _finite(lo.values), _finite(hi.values), color=look["color"],
                        alpha=0.2, lw=0)
        line = {"label": text, x: numbers(mean[x].values), "y": numbers(m.values),
                "low": numbers(lo.values), "high": numbers(hi.values), "count": numbers(n)}
        if theory is not None:
            line["theory"] = overlays.draw_rho(ax, theory, by, value, x)
        drawn.append(line)
    ax.set_ylabel(_fit(labels.var_label(ds, mean.name, when), 44), fontsize=9)
    return drawn


def _picked(ax, mean, series: str | None, by: str | None) -> list:
    """The values of `by` drawn as lines: all, or MAX_LINES spread over them, which a
    SweepWarning (one console line) and a legend entry say."""
    import warnings

    from sweep.errors import SweepWarning

    values = list(mean[by].values) if by else [None]
    if not by or len(values) <= MAX_LINES:
        return values
    pick = np.unique(np.linspace(0, len(values) - 1, MAX_LINES).round().astype(int))
    shown = [labels.short(results.cell(values[k])) for k in pick]
    what = f"{len(pick)} of the {len(values)} values of {series or by} drawn"
    warnings.warn(f"--lines {series or by}: {what}: {', '.join(shown)} (pick others with "
                  f"--sel {series or by}=VALUE)", SweepWarning, stacklevel=4)
    ax._sweep_note = f"{what} (evenly spread)"  # the legend's title
    return [values[k] for k in pick]


KIND_STYLES = {"identity": dict(color="black", lw=2.5), "trained": dict(ls="-"),
               "gaussian": dict(ls="--", lw=1.0)}


def _looks(values: list) -> list[dict]:
    """A colour per line; matrix files of different kinds (trained, Gaussian, identity: the
    files of `sweep extract --controls`) a line style per kind and a colour per layer."""
    texts = [str(results.cell(v)) for v in values]
    kinds = [labels.matrix_kind(t) for t in texts]
    if len({k for k, _ in kinds}) < 2 or not any(t.endswith(".npy") for t in texts):
        colours = _pyplot().cm.viridis(np.linspace(0, 0.9, len(values)))
        return [dict(color=c) for c in colours]
    layers = sorted({layer for _, layer in kinds})
    colours = _pyplot().cm.viridis(np.linspace(0, 0.9, max(len(layers), 1)))
    return [{"color": colours[layers.index(layer)], **KIND_STYLES[kind]}
            for kind, layer in kinds]


def _finite(values: np.ndarray) -> np.ndarray:
    """A band's ends where the statistic is infinite ("never") stop at the axis edge."""
    return np.where(np.isinf(values), np.nan, values)


def _constant(ax, centre, panel) -> dict:
    """Say so when a panel's values are all the same number."""
    v = np.asarray(centre.values, dtype=float)
    v = v[np.isfinite(v)]
    if v.size == 0:
        ax.text(0.5, 0.5, "no value anywhere", transform=ax.transAxes, ha="center")
        ax.set_title(panel or "", fontsize=9)
        return {"constant": None}
    if v.min() != v.max():
        if panel:
            ax.set_title(panel, fontsize=9)
        return {"constant": False, "range": [number(v.min()), number(v.max())]}
    ax.set_title(f"{panel + ': ' if panel else ''}constant, {v[0]:g} everywhere", fontsize=9)
    return {"constant": True, "range": [number(v[0]), number(v[0])]}


def _nan_cells(ax, centre, reason: str) -> dict:
    """Empty (NaN or never) cells show the hatched axes background, named in the legend;
    returns them (the coordinates of each) and why they are empty."""
    from matplotlib.patches import Patch

    stacked = centre.stack(cell=list(centre.dims))
    empty = stacked[~np.isfinite(stacked.values.astype(float))]
    ax.patch.set(**NAN_STYLE)
    if empty.size:
        ax._sweep_nan = Patch(**NAN_STYLE, label=reason)
    cells = [{d: number(empty[d].values[k]) for d in centre.dims} for k in range(empty.size)]
    return {"empty_cells": cells, "empty_because": reason if cells else None}


def _colour_bar(fig, mesh, axes, norm, text: str) -> None:
    bar = fig.colorbar(mesh, ax=axes.tolist(), shrink=0.95)
    if type(norm).__name__ == "LogNorm":  # counts: whole numbers, powers of 2
        ticks = [2**k for k in range(12) if norm.vmin <= 2**k <= norm.vmax]
        bar.set_ticks(ticks, labels=[str(t) for t in ticks])
        bar.minorticks_off()
    bar.set_label(_fit(text, 60), fontsize=8)


def _legend(fig, axes) -> None:
    """One legend below the panels, off the data: every label once."""
    handles, seen = [], set()
    for ax in axes:
        found = list(zip(*ax.get_legend_handles_labels()))
        if getattr(ax, "_sweep_nan", None) is not None:
            found.append((ax._sweep_nan, ax._sweep_nan.get_label()))
        for handle, text in found:
            if text and not text.startswith("_") and text not in seen:
                seen.add(text)
                handles.append((handle, text))
    notes = sorted({getattr(ax, "_sweep_note", "") for ax in axes} - {""})
    if handles:
        width = 55 if len(axes) == 1 else 90  # a legend as wide as the panels
        handles, texts = zip(*handles)
        texts = [_wrap(t, width) for t in texts]
        widest = max(len(line) for t in texts for line in t.splitlines())
        ncol = min(len(texts), max(1, 100 * len(axes) // (widest + 8)))
        fig.legend(handles, texts, loc="outside lower center", fontsize=7, frameon=False,
                   ncol=ncol, title="; ".join(notes) or None, title_fontsize=7)


# ---------------------------------------------------------------- overlays

def _overlay(ax, mean, x, y, facet, value, threshold, theory, refined=None) -> dict:
    if threshold is None and theory is None and refined is None:
        return {}
    ax.autoscale(False)  # overlays are clipped to the measured grid, not stretching it
    where = {a: place(mean[a]) for a in (x, y)}

    def at(axis, values):
        return where[axis](values)

    record = {}
    if threshold is not None:
        th = overlays.panel_slice(threshold, facet, value, "threshold")
        record["threshold"] = overlays.draw_threshold(ax, th, x, y, at)
    if theory is not None:
        record["theory"] = overlays.draw_theory(ax, theory, x, y, facet, value, at)
    if refined is not None:
        record["refined"] = overlays.draw_refined(ax, refined, x, y, facet, value, at)
    if "threshold" in record and "theory" in record:
        along = threshold.attrs["along"]
        record["deviation"] = overlays.deviations(record["threshold"], record["theory"], along)
    return record
