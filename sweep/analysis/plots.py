"""Figures: phase diagrams (heatmaps with thresholds and theory), line plots, and trained
versus random attention matrices.

The only module that imports matplotlib, and only when a figure is drawn (Agg backend, no
display needed). The file format follows the extension: .png, .pdf, .svg.
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np

from sweep.analysis import results
from sweep.core.config import ConfigError

MAX_FACETS = 6
MAX_LINES = 7
LABELS = {"beta": "inverse temperature β", "time": "time t", "d": "dimension d",
          "n": "tokens n", "noise": "noise D", "kappa": "coupling κ", "dt": "step dt",
          "overlap": "initial cosine", "jitter": "jitter"}


def _pyplot():
    try:
        import matplotlib
    except ImportError:
        raise ConfigError("sweep plot needs matplotlib: pip install 'sweep[plot]'") from None

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def plot(ds, var: str, path, x: str = "beta", y: str | None = None, time=None,
         selection=None, threshold=None, theory=None, series: str | None = None) -> Path:
    """Draw a heatmap of var over (x, y), or with y=None lines of var against x; save it.

    A dimension left over after the axes, `selection` and the seed mean becomes one panel
    per value (at most MAX_FACETS). threshold: a `sweep threshold` dataset drawn with its
    interval; theory: a `sweep theory` dataset (equiangular t_boundary or kappa-c noise_c).
    """
    path = Path(path)
    if path.suffix.lower() not in (".png", ".pdf", ".svg"):
        raise ConfigError(f"{path}: the figure must end in .png, .pdf or .svg")
    axes = [x] if y is None else [x, y]
    da = results.variable(ds, var)
    if y is not None and results.axis_dim(da, x) == results.axis_dim(da, y):
        raise ConfigError(f"--y {y}: runs along the same dimension as --x {x}; a heatmap "
                          "needs two different axes")
    mean, sem, seeds = results.frame(ds, var, axes, time, selection)
    if y is None:
        series = series or _leftover(mean, axes, first=True)
        axes += [series] if series else []
    facet = _facet(mean, axes)
    plt = _pyplot()
    panels = mean[facet].values if facet else [None]
    fig, grid = plt.subplots(1, len(panels), figsize=(4.2 * len(panels) + 1.4, 3.9),
                             squeeze=False, layout="constrained")
    limits = (float(mean.min()), float(mean.max()))  # one colour scale for every panel
    for ax, value in zip(grid[0], panels):
        m, e = (mean.sel({facet: value}), sem.sel({facet: value})) if facet else (mean, sem)
        if y is None:
            _lines(ax, m, e, x, series, theory)
        else:
            mesh = _heatmap(ax, m, x, y, limits)
            _overlay(ax, mean, x, y, facet, value, threshold, theory)
        if facet:
            ax.set_title(f"{facet} = {_fmt(value)}")
    if y is not None:
        bar = fig.colorbar(mesh, ax=grid[0].tolist(), shrink=0.95)
        bar.set_label(_wrap(f"{var}: {mean.attrs.get('long_name', var)}"), fontsize=8)
    fig.suptitle(title(ds, var, seeds, time if "time" not in (x, y) else "all", selection))
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


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


def title(ds, var: str, seeds: int, time, selection=None) -> str:
    """'<config name>: <var> (mean of S seeds, t = ..., d = ...)' from the results' attributes."""
    name = str(ds.attrs.get("title", "")).removeprefix("sweep results: ") or "results"
    when = "" if time == "all" else f", t = {_fmt(ds.time.values[-1])}" \
        if time in (None, "final") and "time" in ds[var].dims else \
        f", {time} over time" if time in results.REDUCTIONS else \
        f", t = {time}" if time is not None else ""
    fixed = "".join(f", {k} = {_fmt(v)}" for k, v in (selection or {}).items())
    return f"{name}: {var} (mean of {seeds} seed{'s' * (seeds > 1)}{when}{fixed})"


def _fmt(value) -> str:
    return f"{float(value):g}"


def label(name: str, coord) -> str:
    units = str(coord.attrs.get("units", "1")) if coord is not None else "1"
    text = LABELS.get(name, coord.attrs.get("long_name", name) if coord is not None else name)
    return f"{text} (dimensionless)" if units in ("1", "") else f"{text} [{units}]"


# ---------------------------------------------------------------- axes and scales

def scale(values: np.ndarray, attrs: dict) -> str:
    """'log' (declared logspace, or a geometric list), 'linear' (evenly spaced) or 'category'."""
    v = np.asarray(values, dtype=float)
    if attrs.get("spacing") == "log":
        return "log"
    if v.size < 3:
        return "linear"
    steps = np.diff(v)
    if np.allclose(steps, steps[0], rtol=1e-6):
        return "linear"
    if (v > 0).all() and np.allclose(np.diff(np.log(v)), np.log(v[1] / v[0]), rtol=1e-6):
        return "log"
    return "category"


def _edges(v: np.ndarray, kind: str) -> np.ndarray:
    """Cell edges around the grid values (geometric midpoints on a log axis)."""
    if kind == "category":
        return np.arange(v.size + 1) - 0.5
    w = np.log(v) if kind == "log" else v.astype(float)
    if w.size == 1:
        mids = np.array([w[0] - 0.5, w[0] + 0.5])
    else:
        inner = 0.5 * (w[1:] + w[:-1])
        mids = np.concatenate([[2 * w[0] - inner[0]], inner, [2 * w[-1] - inner[-1]]])
    return np.exp(mids) if kind == "log" else mids


def _position(values, grid: np.ndarray, kind: str):
    """Where values fall on an axis drawn as `kind` (categories are indices)."""
    if kind != "category":
        return values
    return np.interp(values, grid, np.arange(grid.size), left=np.nan, right=np.nan)


def _axis(ax, which: str, name: str, coord) -> str:
    v = coord.values.astype(float)
    kind = scale(v, coord.attrs)
    getattr(ax, f"set_{which}label")(label(name, coord))
    if kind == "log":
        getattr(ax, f"set_{which}scale")("log")
        if v.size <= 12:  # label the grid values themselves, not powers of ten
            getattr(ax, f"set_{which}ticks")(v, [_fmt(t) for t in v])
            getattr(ax, f"set_{which}ticks")([], minor=True)
    elif kind == "category":
        getattr(ax, f"set_{which}ticks")(np.arange(v.size), [_fmt(t) for t in v])
    return kind


# ---------------------------------------------------------------- drawing

def _heatmap(ax, da, x: str, y: str, limits):
    xd, yd = results.axis_dim(da, x), results.axis_dim(da, y)
    da = da.sortby(da[x]).sortby(da[y]).transpose(yd, xd)
    xk, yk = _axis(ax, "x", x, da[x]), _axis(ax, "y", y, da[y])
    xe, ye = _edges(da[x].values, xk), _edges(da[y].values, yk)
    mesh = ax.pcolormesh(xe, ye, da.values, cmap="viridis", shading="flat", vmin=limits[0],
                         vmax=limits[1])
    ax.set_xlim(xe[0], xe[-1])
    ax.set_ylim(ye[0], ye[-1])
    return mesh


def _wrap(text: str, width: int = 48) -> str:
    import textwrap

    return "\n".join(textwrap.wrap(text, width))


def _lines(ax, mean, sem, x: str, series: str | None, theory=None) -> None:
    xd = results.axis_dim(mean, x)
    others = [d for d in mean.dims if d != xd]
    by = results.axis_dim(mean, series) if series else (others[0] if others else None)
    kind = _axis(ax, "x", x, mean[x])
    values = mean[by].values if by else [None]
    if by and len(values) > MAX_LINES:
        values = values[np.unique(np.linspace(0, len(values) - 1, MAX_LINES).round().astype(int))]
    colours = _pyplot().cm.viridis(np.linspace(0, 0.9, len(values)))
    xs = _position(mean[x].values.astype(float), mean[x].values.astype(float), kind)
    for colour, value in zip(colours, values):
        m = mean.sel({by: value}) if by else mean
        e = sem.sel({by: value}) if by else sem
        text = f"{by} = {_fmt(value)}" if by else None
        ax.plot(xs, m.values, color=colour, label=text, lw=1.5)
        ax.fill_between(xs, (m - 1.96 * e).values, (m + 1.96 * e).values, color=colour,
                        alpha=0.2, lw=0)
        if theory is not None:
            _rho(ax, theory, x, by, value, colour)
    units = str(mean.attrs.get("units", "1"))
    ax.set_ylabel(f"{mean.name}" + ("" if units in ("1", "") else f" [{units}]"))
    if by:
        ax.legend(fontsize=7, frameon=False)


# ---------------------------------------------------------------- overlays

def _rho(ax, theory, x, by, value, colour) -> None:
    """The equiangular cosine rho_beta(t) beside a measured line (mean_cosine in high d)."""
    if theory.attrs.get("theory") != "equiangular" or x != "time" or by != "beta":
        raise ConfigError("theory file: a line plot overlays the equiangular rho(t), which "
                          "needs --x time and one line per beta")
    rho = theory.rho.sel(beta=float(value), method="nearest")
    first = not any(line.get_label() == "equiangular ODE" for line in ax.get_lines())
    ax.plot(theory.time.values, rho.values, color="black", ls=":", lw=1.2,
            label="equiangular ODE" if first else None)


def _overlay(ax, mean, x, y, facet, value, threshold, theory) -> None:
    if threshold is None and theory is None:
        return
    ax.autoscale(False)  # overlays are clipped to the measured grid, not stretching it
    place = {a: (mean[a].values.astype(float), scale(mean[a].values, mean[a].attrs))
             for a in (x, y)}

    def at(axis, values):
        return _position(np.asarray(values, dtype=float), *place[axis])

    if threshold is not None:
        _threshold(ax, _panel(threshold, facet, value, "threshold"), x, y, at)
    if theory is not None:
        _theory(ax, theory, x, y, facet, value, at)
    ax.legend(fontsize=7, loc="best", framealpha=0.6)


def _panel(ds, facet, value, what: str):
    """The slice of an overlay dataset that belongs to one panel."""
    if facet and facet in ds.dims:
        k = int(np.argmin(np.abs(ds[facet].values.astype(float) - float(value))))
        ds = ds.isel({facet: k})
    extra = [d for d in ds.dims if ds.sizes[d] > 1]
    if len(extra) > 1:
        raise ConfigError(f"{what} file: axes {', '.join(extra)} do not fit this plot")
    return ds


def _threshold(ax, th, x, y, at) -> None:
    along = th.attrs.get("along")
    if along not in (x, y):
        raise ConfigError(f"threshold file: along {along!r} is not an axis of this plot "
                          f"({x}, {y})")
    other = y if along == x else x
    if other not in th.coords:
        raise ConfigError(f"threshold file: has no axis {other!r} to draw against")
    p = at(other, th[other].values)
    mid, lo, hi = (at(along, th[v].values) for v in ("threshold", "threshold_low",
                                                     "threshold_high"))
    text = f"{along} where {th.attrs.get('var')} = {th.attrs.get('level'):g} (95% CI)"
    if along == x:
        ax.fill_betweenx(p, lo, hi, color="white", alpha=0.35, lw=0)
        ax.plot(mid, p, color="white", lw=1.6, label=text)
    else:
        ax.fill_between(p, lo, hi, color="white", alpha=0.35, lw=0)
        ax.plot(p, mid, color="white", lw=1.6, label=text)


def _theory(ax, theory, x, y, facet, value, at) -> None:
    kind = theory.attrs.get("theory")
    if kind == "equiangular" and {x, y} == {"beta", "time"}:
        curve = {"beta": theory.beta.values, "time": theory.t_boundary.values}
        text = f"equiangular ODE, rho = 1 - {theory.attrs.get('eps', 0):g}"
    elif kind == "kappa-c" and {x, y} == {"beta", "noise"}:
        noise = _panel(theory.noise_c, facet if facet == "d" else None, value, "theory")
        curve = {"beta": noise.beta.values, "noise": noise.values.ravel()}
        text = "noise threshold 1/kappa_c"
    else:
        raise ConfigError(f"theory file ({kind}): has no curve over ({x}, {y}); equiangular "
                          "fits (beta, time), kappa-c fits (beta, noise)")
    ax.plot(at(x, curve[x]), at(y, curve[y]), color="tab:red", ls="--", lw=1.6, label=text)


def trained_vs_random(sim, probe, path) -> Path:
    """Simulations under identity, norm-matched Gaussian and trained attention matrices (one
    row per beta: mean_cosine and clustered_fraction against time, mean over seeds), beside
    the trained model's own layers. Save it at dpi 100.

    sim: `sweep run configs/trained-vs-random.yaml`, whose zip dimension `qk` holds
    "identity", ".../layer<l>_qk_gaussian.npy" and ".../layer<l>_qk.npy" (one line each);
    probe: `sweep probe` of the same model (per-layer observables over `layer`).
    """
    path = Path(path)
    plt = _pyplot()
    mean = results.seed_mean(sim)
    betas = mean.beta.values if "beta" in mean.dims else [None]
    fig, axes = plt.subplots(len(betas), 3, figsize=(14, 4 * len(betas)), squeeze=False,
                             layout="constrained")
    colours = plt.cm.viridis([0.0, 0.2, 0.4, 0.6, 0.75, 0.9])
    for row, beta in zip(axes, betas):
        at = mean.sel(beta=beta) if beta is not None else mean
        where = f" at beta = {beta:g}" if beta is not None else ""
        for ax, var in zip(row[:2], ("mean_cosine", "clustered_fraction")):
            for qk in at.qk.values:
                ax.plot(at.time, at[var].sel(qk=qk), **_matrix_style(str(qk), colours))
            ax.set_xlabel("time t")
            ax.set_ylabel(var)
            ax.set_title(f"simulation{where}: {var}", fontsize=9)
    axes[0, 0].legend(fontsize=7, ncol=2)
    _probe_panels(axes[:, 2], probe)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path


def matrix_kind(label: str) -> tuple[str, int]:
    """('identity' | 'gaussian' | 'trained', layer) of a `qk` coordinate."""
    found = re.search(r"layer(\d+)_qk(_gaussian)?\.npy", label)
    if not found:
        return "identity", 0
    return ("gaussian" if found.group(2) else "trained"), int(found.group(1))


def _matrix_style(label: str, colours) -> dict:
    what, layer = matrix_kind(label)
    if what == "identity":
        return dict(color="black", lw=2.5, label="identity")
    if what == "trained":
        return dict(color=colours[layer - 1], lw=1.8, label=f"trained L{layer}")
    return dict(color=colours[layer - 1], lw=1.0, ls="--", label=f"Gaussian L{layer}")


def _probe_panels(column, probe) -> None:
    """The trained model itself by layer; below it, (mean |h|)^2, the beta its scores imply."""
    for var, style in (("mean_cosine", "o-"), ("coarse_clustered_fraction", "s-"),
                       ("pc1_share", "^-")):
        column[0].plot(probe.layer, probe[var], style, label=var)
    column[0].set_title(f"{probe.attrs.get('model')} itself: {probe.attrs.get('n_tokens')} "
                        f"tokens, coarse: cosine > {probe.attrs.get('cosine_threshold')}",
                        fontsize=9)
    column[0].legend(fontsize=8)
    if len(column) > 1:
        column[1].plot(probe.layer, probe.token_norm**2, "o-", color="grey")
        column[1].set_title("(mean |h|)^2: the beta of its scores on unit tokens", fontsize=9)
    for ax in column:
        ax.set_xlabel("layer (0 = embeddings)")
