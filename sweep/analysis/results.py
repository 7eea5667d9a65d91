"""Reading results: open a file, pick a variable and its axes, one time or a reduction over
time per run, the seed mean, and the slices a plot shows. xarray in, xarray out."""

from __future__ import annotations

import contextlib
import warnings
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from sweep.config.yamltext import NETCDF_MAGIC, read_yaml
from sweep.errors import ConfigError

REDUCTIONS = ("max", "min", "mean", "plateau")


def open_results(path: str | Path, load: bool = True):
    """xarray.open_dataset, with a missing or unreadable file as a ConfigError naming it.

    load=False leaves the variables on disk; the caller then closes the dataset."""
    import xarray as xr

    path = Path(path)
    if not path.is_file():
        raise ConfigError(f"{path}: no such results file")
    try:
        ds = xr.open_dataset(path)
        if not load:
            return ds
        with ds:
            return ds.load()
    except (OSError, ValueError) as err:
        raise ConfigError(f"{path}: {_not_results(path, err)}") from None


def _not_results(path: Path, err: Exception) -> str:
    """Why a file is no results file: a YAML config (say what to run), or unreadable."""
    try:
        with path.open("rb") as f:
            head = f.read(2**16)
    except OSError:
        head = b""
    if not head.startswith(NETCDF_MAGIC):
        try:
            raw = read_yaml(path) if head.decode("utf-8", "strict") else None
        except (ConfigError, UnicodeDecodeError):
            raw = None
        if isinstance(raw, dict) and "name" in raw:
            return (f"a YAML config, not a results file; `sweep run {path}` makes its results"
                    f" (`sweep plan {path}` shows what it would run)")
    return f"not a readable netCDF file ({err})"


def variable(ds, var: str):
    """ds[var], or a ConfigError listing the variables there are."""
    if var not in ds.data_vars:
        raise ConfigError(f"var {var!r}: not a variable of the results "
                          f"(have: {', '.join(map(str, ds.data_vars))})")
    return ds[var]


def axis_dim(da, axis: str) -> str:
    """The dimension that `axis` runs along: a dimension, or a coordinate of a zip group."""
    if axis in da.dims:
        return axis
    if axis in da.coords and da[axis].ndim == 1 and da[axis].dims[0] in da.dims:
        return da[axis].dims[0]
    raise ConfigError(f"axis {axis!r}: not an axis of {da.name} "
                      f"(axes: {', '.join(map(str, da.dims))})")


# ---------------------------------------------------------------- time and seeds

def at_time(da, time: str | float | None):
    """One time of a series (per run, before any seed average).

    time: None or "final" (the last saved time), a number (the nearest saved time), "all"
    (keep the time dimension), or a reduction over time per run: "max", "min", "mean", or
    "plateau" (the longest-held value after the series first leaves its starting value:
    for n_clusters, the metastable cluster count; NaN if it never moves). Variables without
    a time dimension (t_cluster, max_clusters) are reductions already and pass through.
    """
    if "time" not in da.dims:
        if time not in (None, "final", "all"):
            raise ConfigError(f"time {time!r}: {da.name} has no time dimension")
        return da
    if time in (None, "final"):
        return da.isel(time=-1)
    if time == "all":
        return da
    if time in REDUCTIONS:
        return _reduce(da, str(time))
    value = _number(time)
    t = da["time"].values
    if not t.min() - 1e-9 <= value <= t.max() + 1e-9:
        raise ConfigError(f"time {value:g}: outside the saved times [{t.min():g}, {t.max():g}]")
    return da.sel(time=value, method="nearest")


def _number(time) -> float:
    try:
        return float(time)
    except (TypeError, ValueError):
        raise ConfigError(f"time {time!r}: expected a number, final, all or one of "
                          f"{', '.join(REDUCTIONS)}") from None


def _reduce(da, how: str):
    import xarray as xr

    if how == "plateau":
        out = xr.apply_ufunc(plateau, da, input_core_dims=[["time"]], vectorize=True)
    else:
        out = getattr(da, how)("time", skipna=True)
    out.attrs = {**da.attrs, "long_name": f"{how} over time of {da.attrs.get('long_name', '')}"}
    return out.rename(da.name)


def plateau(y: np.ndarray) -> float:
    """The value held for the most consecutive saves after y first differs from y[0]."""
    span = plateau_span(y)
    return np.nan if span is None else float(y[span.start])


def plateau_span(y: np.ndarray, low: float = -np.inf) -> slice | None:
    """The saves [start, stop) of the longest run of one value >= low after y first differs
    from y[0] (the first such run on a tie); None if y never moves or no value qualifies.
    For n_groups with low = 2: the metastable multi-cluster state, where other series (the
    inter-cluster attention) can be read."""
    moved = np.flatnonzero(y[1:] != y[0])
    if moved.size == 0:
        return None
    first = moved[0] + 1
    rest = y[first:]
    starts = np.flatnonzero(np.concatenate([[True], rest[1:] != rest[:-1]]))
    lengths = np.diff(np.append(starts, rest.size))
    lengths[~(rest[starts] >= low)] = 0
    if not lengths.any():
        return None
    k = np.argmax(lengths)
    return slice(first + starts[k], first + starts[k] + lengths[k])


def seed_mean(da):
    """The mean over the seed axis (NaN runs, e.g. missing jobs, are skipped)."""
    return da.mean("seed", skipna=True, keep_attrs=True) if "seed" in da.dims else da


@contextlib.contextmanager
def quiet():
    """All-NaN slices (missing runs, resamples) are expected: their mean is NaN, silently."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        yield


# ---------------------------------------------------------------- what a variable is

# times of a first event, NaN where it never happened by t_max: a seed mean would drop those
# seeds, so they are summarised by a median with "never" as +inf (see frame)
EVENT_TIMES = ("t_cluster",)


def is_text(coord) -> bool:
    """A text axis (attention, qk, mask, head_beta labels, dtype, ...): categories."""
    return np.asarray(coord.values).dtype.kind in "OUS"


def refuse_flags(da) -> None:
    """Flag variables (status) are categories: their mean is no statistic."""
    if "flag_values" in da.attrs or da.name == "status":
        raise ConfigError(f"var {da.name!r}: codes ({da.attrs.get('flag_meanings', 'status')})"
                          " are categories, not numbers to average; `sweep show` counts them")


def refuse_events(da) -> None:
    """A seed mean of a time that may never happen drops the seeds where it did not."""
    if da.name in EVENT_TIMES:
        raise ConfigError(f"var {da.name!r}: NaN means never, so a seed mean would drop those "
                          "seeds; threshold clustered_fraction instead (--var clustered_fraction"
                          " --along time gives the clustering time of each point)")


def parameter(ds, key: str, default=None):
    """A setting of the run: its coordinate (a DataArray when swept, or fixed by --sel),
    else its value in the recorded config (model, init or integrate section)."""
    if key in ds.coords:
        return ds[key]
    import yaml

    text = ds.attrs.get("sweep_config", "")
    try:  # a crafted file may hold anything there: a number, an array, megabytes of text
        recorded = yaml.safe_load(text) if isinstance(text, str) and len(text) < 2**20 else {}
    except (yaml.YAMLError, RecursionError):
        recorded = {}
    recorded = recorded if isinstance(recorded, dict) else {}
    for section in ("model", "init", "integrate"):
        if isinstance(recorded.get(section), dict) and key in recorded[section]:
            return recorded[section][key]
    return default


def value_range(da, ds) -> tuple:
    """(low, high) the variable can take: numbers or DataArrays over n (None: unbounded)."""
    from sweep.kernels.codes import RANGES

    n = parameter(ds, "n")
    resolve = {"n": n, "log n": None if n is None else np.log(n)}
    return tuple(resolve.get(v, v) if isinstance(v, str) else v
                 for v in RANGES.get(str(da.name), (None, None)))


# ---------------------------------------------------------------- slices for plots

def parse_selection(items) -> dict[str, str]:
    """["d=128", "head_beta=1,1,11,11"] -> {"d": "128", "head_beta": "1,1,11,11"}."""
    out = {}
    for item in items or ():
        key, sep, value = str(item).partition("=")
        if not sep or not key.strip() or not value.strip():
            raise ConfigError(f"--sel {item}: expected AXIS=VALUE, e.g. d=128")
        out[key.strip()] = value.strip()
    return out


def position(coord, value, what: str = "--sel") -> int:
    """The index of a grid value: exactly this number (to rounding), or this label (head_beta
    labels also by their numbers: 1,1,11,11 = 1.0,1.0,11.0,11.0); a ConfigError naming the
    nearest values when the grid has no such point."""
    grid = np.asarray(coord.values)
    name = coord.name
    if is_text(coord):
        hit = [k for k, g in enumerate(grid) if _same_label(str(g), str(value))]
        if hit:
            return hit[0]
        raise ConfigError(f"{what} {name}={value}: not a value of {name} (values: "
                          f"{', '.join(map(str, grid[:12]))})")
    try:
        x = float(value)
    except (TypeError, ValueError):
        raise ConfigError(f"{what} {name}={value}: {name} is numeric, expected a number") from None
    close = np.isclose(grid.astype(float), x, rtol=1e-9, atol=1e-12)
    if close.any():
        return int(np.flatnonzero(close)[0])
    near = grid[np.argsort(np.abs(grid.astype(float) - x), kind="stable")[:2]]
    raise ConfigError(f"{what} {name}={value}: not a value of {name} (nearest: "
                      f"{', '.join(f'{v:g}' for v in sorted(near.astype(float)))})")


def _same_label(label: str, text: str) -> bool:
    if label == text:
        return True
    try:
        return [float(v) for v in label.split(",")] == [float(v) for v in text.split(",")]
    except ValueError:
        return False


def select(da, selection: dict):
    """Fix each named axis at one of its grid values (a point of the sweep, never a new one)."""
    for axis, value in selection.items():
        dim = axis_dim(da, axis)
        if dim in ("seed", "time"):
            raise ConfigError(f"--sel {axis}: use --time for time; seeds are averaged")
        da = da.isel({dim: position(da[axis], value)})
    return da


@dataclass
class Frame:
    """What a plot shows of a variable, per point: a centre over seeds, a band, and counts.

    statistic "mean": the seed mean, its band mean +- 1.96 standard errors clipped to the
    variable's range, count the seeds with a value. "median" (times that may never happen):
    the median with never = +inf, its band the quartiles, count the seeds where it happened.
    """

    centre: object
    low: object
    high: object
    count: object
    seeds: int
    statistic: str


def frame(ds, var: str, axes: list[str], time=None, selection=None) -> Frame:
    """The Frame of var over `axes` plus any dims left over (facets). A time axis among
    `axes` keeps the series, otherwise `time` picks one time or reduction per run."""
    da = select(variable(ds, var), selection or {})
    refuse_flags(da)
    dims = [axis_dim(da, a) for a in axes]
    if "seed" in dims:
        raise ConfigError("axis 'seed': seeds are averaged, plot another axis")
    if "time" not in dims:
        da = at_time(da, time)
    elif time not in (None, "all"):
        raise ConfigError(f"time {time!r}: time is an axis of this plot, drop --time")
    if var == "threshold" and "along" in ds.attrs and "seed" not in da.dims:
        return _threshold_frame(ds, da, time, selection)
    if "seed" not in da.dims:
        da = da.expand_dims(seed=[0])
    seeds = da.sizes["seed"]
    if da.name in EVENT_TIMES:
        ran = select(ds["status"], selection or {}) >= 0 if "status" in ds else True
        t_max = float(ds.time.max()) if "time" in ds.coords else np.inf
        return _median_frame(da, ran, seeds, t_max)
    count = da.notnull().sum("seed")
    mean = seed_mean(da)
    with quiet():
        sem = (da.std("seed", ddof=1) / np.sqrt(count)).fillna(0.0) if seeds > 1 else mean * 0
    low, high = value_range(da, ds)
    band = [(mean - 1.96 * sem), (mean + 1.96 * sem)]
    band = [b.clip(min=low, max=high) if low is not None or high is not None else b
            for b in band]
    return Frame(mean, *band, count, seeds, "mean")


def _threshold_frame(ds, da, time, selection) -> Frame:
    """A `sweep threshold` file's threshold: already a seed mean, its band the bootstrap
    interval the file holds, over the number of seeds it was taken from."""
    def picked(name):
        other = select(ds[name], selection or {})
        return other if "time" in da.dims or "time" not in other.dims else at_time(other, time)

    return Frame(da, picked("threshold_low"), picked("threshold_high"), da.notnull(),
                 int(ds.attrs.get("seeds", 1)), "threshold")


def _median_frame(da, ran, seeds: int, t_max: float) -> Frame:
    """The lower median: the time by which half the seeds had the event (+inf: by t_max,
    fewer did). Missing runs (status -1) are left out, not counted as never. The band is the
    quartiles, "never" drawn up to t_max (it lies beyond)."""
    never = da.fillna(np.inf).where(ran)
    with quiet():
        q = never.quantile([0.25, 0.5, 0.75], dim="seed", method="lower")
    q = q.drop_vars("quantile")
    centre = q.isel(quantile=1).assign_attrs(da.attrs).rename(da.name)
    low, high = (q.isel(quantile=k).clip(max=t_max) for k in (0, 2))
    return Frame(centre, low, high, da.notnull().sum("seed"), seeds, "median")


def cell(value) -> str:
    """A coordinate value as a table shows it: numbers by %g, text as it is."""
    if isinstance(value, (float, np.floating)):
        return f"{value:g}"
    return str(value)


def threshold_rows(th) -> list[tuple[str, ...]]:
    """The points of a threshold dataset that cross, as text: (coordinates..., threshold,
    "[low, high]"), in the order of its dimensions."""
    dims = list(th.threshold.dims)
    stacked = th.stack(point=dims) if dims else th.expand_dims(point=[0])
    rows = []
    for k in range(stacked.sizes["point"]):
        p = stacked.isel(point=k)
        if np.isnan(float(p.threshold)):
            continue
        rows.append((*(cell(p[d].item()) for d in dims), f"{float(p.threshold):.4g}",
                     f"[{float(p.threshold_low):.4g}, {float(p.threshold_high):.4g}]"))
    return rows
