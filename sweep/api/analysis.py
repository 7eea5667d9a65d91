"""Results, thresholds, monotonicity, plateaus, figures and theory curves: the library behind
`sweep show`, `threshold`, `monotone`, `plateaus`, `plot` and `theory` (sweep/cli/analysis.py,
sweep/cli/plateaus.py)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

from sweep.errors import ConfigError

if TYPE_CHECKING:
    import xarray


def open_results(path: str | Path, load: bool = True) -> xarray.Dataset:
    """A results (or threshold, theory, probe) file; ConfigError if missing or unreadable.
    load=False leaves the variables on disk: close the dataset after use (`with`)."""
    from sweep.analysis import results

    return results.open_results(path, load=load)


def threshold(ds: xarray.Dataset | str | Path, var: str, along: str = "beta",
              level: float = 0.5, time: str | float | None = None, bootstrap: int = 2000,
              seed: int = 0, direction: str = "any",
              out: str | Path | None = None) -> xarray.Dataset:
    """Where the seed-mean `var` first crosses `level` along an axis, with a bootstrap
    interval, per point of the other axes (`sweep threshold`; out: also write it).
    ds: results or their file; time: a saved time, "final" (None), "all", or a reduction over
    time per run: "max", "min", "mean", "plateau"."""
    from sweep.analysis import thresholds

    if out is not None and isinstance(ds, (str, Path)) and _same_file(Path(out), Path(ds)):
        raise ConfigError(f"-o {out}: is the results file being read; write the threshold "
                          "to another file")
    th = thresholds.threshold(_dataset(ds), var, along, level, time, bootstrap, seed,
                              direction)
    if out is not None:
        from sweep.storage.netcdf import write_dataset

        write_dataset(th, out)
    return th


def monotone(ds: xarray.Dataset | str | Path, var: str, along: str = "time",
             out: str | Path | None = None) -> xarray.Dataset:
    """Per grid point, where `var` falls along `along` (time, or layer in a probe dataset)
    beyond rounding: `falls`, `intervals`, `worst_fall`, `first_fall` (`sweep monotone`; out:
    also write it). Docs: docs/analysis.md."""
    from sweep.analysis import monotonicity

    result = monotonicity.monotone(_dataset(ds), var, along)
    if out is not None:
        from sweep.storage.netcdf import write_dataset

        write_dataset(result, out)
    return result


def plateaus(ds: xarray.Dataset | str | Path, var: str, along: str = "time",
             tol: float = 1e-3, min_duration: float = 0.0,
             out: str | Path | None = None) -> xarray.Dataset:
    """Per grid point, the plateaus of `var` along `along` (the energy staircase of merging
    clusters): `count`, and per plateau `level`, `start`, `end`, `duration`, with the
    `saddle_time` between consecutive ones (`sweep plateaus`; out: also write it). tol: the
    relative rate of change per unit of `along` below which the series is flat. Docs:
    docs/analysis.md."""
    from sweep.analysis import plateaus as found

    return _written(found.plateaus(_dataset(ds), var, along, tol, min_duration), out)


def _written(result: xarray.Dataset, out: str | Path | None) -> xarray.Dataset:
    """result, also written to `out` unless it is None."""
    if out is not None:
        from sweep.storage.netcdf import write_dataset

        write_dataset(result, out)
    return result


def plot(ds: xarray.Dataset | str | Path, var: str, path: str | Path | None = None, *,
         x: str = "beta", y: str | None = None, time: str | float | None = None,
         sel: dict[str, float | str] | None = None, lines: str | None = None, threshold=None,
         theory=None, numbers: str | Path | None = None, refined=None, log_x: bool = False,
         log_y: bool = False) -> Path:
    """A phase diagram of `var` over (x, y), with a threshold and a theory curve drawn on it,
    or lines of `var` against x (y None); saved to `path` (.png, .pdf, .svg; default
    figures/<results file>-<var>.png) and returned (`sweep plot`). sel: fix axes at one of
    their grid values (exactly; ConfigError naming the nearest otherwise); threshold, theory:
    datasets or their files; refined: a `sweep refine` dataset or file, its samples and
    thresholds drawn over the heatmap; numbers: also write the numbers the figure shows
    (JSON); log_x, log_y: that axis on a log scale whatever its spacing (d = 2, 3, 8, 32),
    log_y of a line plot its values."""
    from sweep.analysis import plots

    if path is None:
        if not isinstance(ds, (str, Path)):
            raise ConfigError("plot: name the figure file (path=...) for a dataset in memory")
        path = Path("figures") / f"{Path(ds).stem}-{var}.png"
    extra = {k: _dataset(v) for k, v in (("threshold", threshold), ("theory", theory),
                                         ("refined", refined)) if v is not None}
    try:
        return plots.plot(_dataset(ds), var, path, x=x, y=y, time=time, selection=sel or {},
                          series=lines, numbers_path=numbers,
                          log=("x",) * log_x + (("y",) if y else ("value",)) * log_y, **extra)
    except OSError as err:  # an unwritable place for the figure
        from sweep.errors import StoreError

        raise StoreError(f"{path}: cannot write the figure ({err.strerror or err})") from None


def _dataset(ds):
    return open_results(ds) if isinstance(ds, (str, Path)) else ds


def _same_file(a: Path, b: Path) -> bool:
    try:
        return a.resolve() == b.resolve() or a.exists() and os.path.samefile(a, b)
    except OSError:
        return False


THEORIES = ("equiangular", "kappa-c", "beta-star", "modes", "long-context")


def theory(name: str, *args, out: str | Path | None = None, **params) -> xarray.Dataset:
    """What the papers predict, as a dataset to overlay (`sweep theory NAME`; out: also write
    it): equiangular (the equiangular-ODE (t, beta) boundary), kappa-c (the noise threshold),
    beta-star (where the noisy transition turns discontinuous), modes (the fastest-growing
    mode of the uniform state), long-context (one layer at beta = gamma log n). The arguments
    are those of the function of sweep.analysis.theory it names (docs/theory.md)."""
    from sweep.analysis import theory as theories

    makers = {"equiangular": theories.equiangular, "kappa-c": theories.kappa_c_dataset,
              "beta-star": theories.beta_star_dataset, "modes": theories.modes,
              "long-context": theories.long_context}
    if name not in makers:
        raise ConfigError(f"theory: {name!r} is not one of {' | '.join(THEORIES)}")
    ds = makers[name](*args, **params)
    if out is not None:
        from sweep.storage.netcdf import write_dataset

        ds.encoding["source"] = str(write_dataset(ds, out))
    return ds
