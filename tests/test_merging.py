"""The merge writes its file block by block as it reads the parts, and that file is the one
the whole dataset, assembled in memory and written by xarray, gives: the same dimensions,
variables, chunks, filters, attributes and bits, over shipped configs and every kind of
output (layer models, positions none/final/trajectory, observables subsets, swept n/d, a
union time grid from swept t_max). Blocks of one job each give the same file as one block:
the merge never needs every job at once."""

import math
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import netCDF4
import numpy as np
import pytest
import xarray as xr
from test_configs import FOLDER, reduced

from helpers import invoke
from sweep.config import schema as configs
from sweep.config.grid import axes, expand
from sweep.errors import StoreError
from sweep.execution import runner
from sweep.kernels.codes import LAYER_SERIES, SCALARS, SERIES, STATUS_MISSING
from sweep.storage.coords import coordinates, status_flags
from sweep.storage.merging import MissingJobs, blocks, max_clusters, merge, t_cluster
from sweep.storage.netcdf import provenance, write_dataset
from sweep.storage.store import Store, columns, save_times

COMMAND = "sweep merge c.yaml"  # one history line for both files compared


def in_memory(store, jobs, allow_missing=False):
    """The merged dataset as it was assembled before the merge streamed: every job's series,
    scalars and positions in whole arrays, one xarray.Dataset (written by write_dataset)."""
    config, grid = store.config, axes(store.config)
    dims, shape = tuple(a.name for a in grid), tuple(len(a) for a in grid)
    if jobs[0].model.layers is not None:
        record, t = "layer", np.arange(max(j.model.layers for j in jobs) + 1)
    else:  # the union of every job's save grid
        record, t = "time", np.unique(np.concatenate([save_times(j) for j in jobs]))
    names = columns(jobs[0], config.output.columns)
    series = np.full((len(jobs), t.size, len(names)), np.nan)
    scalars = {name: np.full(len(jobs), np.nan) for name in SCALARS}
    scalars["status"] = np.full(len(jobs), STATUS_MISSING, dtype=np.int8)
    positions = None
    if config.output.positions != "none" and not {"n", "d"} & set(dims):
        n, d = jobs[0].model.n, jobs[0].model.d
        traj = config.output.positions == "trajectory"
        positions = np.full((len(jobs),) + ((t.size, n, d) if traj else (n, d)), np.nan)
    for k, (job, part, error) in enumerate(store.read_each(jobs)):
        assert not error
        if part is None:
            assert allow_missing
            continue
        scalars["status"][k], scalars["wall_seconds"][k] = part.status, part.wall_seconds
        if part.observables is not None:
            series[k, np.searchsorted(t, save_times(job))] = part.observables
        if positions is not None and part.positions is not None:
            positions[k, : part.positions.shape[0]] = part.positions
    for name, source, summary in (("t_cluster", "clustered_fraction", lambda v: t_cluster(t, v)),
                                  ("max_clusters", "n_clusters", max_clusters)):
        if source in names:
            scalars[name] = summary(series[:, :, names.index(source)])
        else:
            del scalars[name]
    attrs = {**SERIES, **LAYER_SERIES, **SCALARS}
    data = {name: (dims + (record,), series[:, :, c].reshape(shape + (t.size,)),
                   {"long_name": attrs[name][0], "units": attrs[name][1]})
            for c, name in enumerate(names)}
    for name, values in scalars.items():
        data[name] = (dims, values.reshape(shape),
                      {"long_name": attrs[name][0], "units": attrs[name][1]})
    data["status"][2].update(status_flags())
    if positions is not None:
        on = dims + ((record,) if positions.ndim == 4 else ()) + ("token", "component")
        what = "hidden states h" if record == "layer" else "token positions on the sphere"
        data["positions"] = (on, positions.reshape(shape + positions.shape[1:]),
                             {"long_name": what, "units": "1"})
    ds = xr.Dataset(data, coords=coordinates(grid, (record, t)))
    return ds.assign_attrs(provenance(config, COMMAND))


def assert_same_file(a: Path, b: Path):
    """Two netCDF4 files hold the same dataset: dimensions, variables (in order), their
    types, chunks, filters, attributes and values (NaN where NaN), global attributes."""
    with netCDF4.Dataset(a) as x, netCDF4.Dataset(b) as y:
        x.set_auto_maskandscale(False)
        y.set_auto_maskandscale(False)
        assert [(d, len(x.dimensions[d])) for d in x.dimensions] == \
            [(d, len(y.dimensions[d])) for d in y.dimensions]
        assert list(x.variables) == list(y.variables)
        assert x.ncattrs() == y.ncattrs()
        for key in set(x.ncattrs()) - {"history"}:
            assert x.getncattr(key) == y.getncattr(key), key
        for name, u in x.variables.items():
            v = y.variables[name]
            assert (u.dimensions, str(u.datatype), u.filters(), u.chunking(), u.ncattrs()) == \
                (v.dimensions, str(v.datatype), v.filters(), v.chunking(), v.ncattrs()), name
            for key in u.ncattrs():
                assert_bits(u.getncattr(key), v.getncattr(key), f"{name}.{key}")
            assert_bits(u[...], v[...], name)


def assert_bits(a, b, what):
    a, b = np.asarray(a), np.asarray(b)
    assert a.dtype == b.dtype and a.shape == b.shape, what
    if a.dtype.kind == "f":  # bit for bit, NaN included
        a, b = a.view(np.uint64 if a.itemsize == 8 else np.uint32), \
            b.view(np.uint64 if b.itemsize == 8 else np.uint32)
    np.testing.assert_array_equal(a, b, err_msg=what)


def merged_three_ways(store, jobs, tmp_path, allow_missing=False):
    """The streamed merge in blocks of one job, in one block, and the in-memory dataset
    written by xarray: the three files."""
    made = {}
    for name, budget in (("blocks", 1), ("whole", 2**40)):
        made[name] = merge(store, jobs, allow_missing, COMMAND, tmp_path / f"{name}.nc",
                           block_bytes=budget)
    made["memory"] = write_dataset(in_memory(store, jobs, allow_missing), tmp_path / "memory.nc")
    return made


CASES = {  # shipped config, --set overrides beyond the reduction (test_configs.reduced)
    "demo": ("demo.yaml", []),  # d swept: no positions whatever output.positions says
    "demo-trajectory": ("demo.yaml", ["grid.d=null", "model.d=3",
                                      "output.positions=trajectory"]),
    "heads-final": ("heads.yaml", ["output.positions=final"]),  # head_beta text labels
    "masks-observables": ("masks.yaml", ["output.observables=[clustered_fraction,energy]"]),
    "layers-final": ("layers.yaml", ["output.positions=final"]),  # the layer record axis
    "beta-scale": ("beta-scale.yaml", []),  # a zip group: coordinates on one dimension
    "glpr-reference": ("phase-glpr-reference.yaml", []),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_the_streamed_file_is_the_in_memory_dataset_bit_for_bit(case, tmp_path, monkeypatch):
    name, extra = CASES[case]
    path = FOLDER / name
    monkeypatch.chdir(tmp_path)
    sets = reduced(path) + extra
    out = tmp_path / "r.nc"
    ran = invoke("run", path, *sum((["--set", s] for s in sets), []), "--out", out,
                 "--workers", 2)
    assert ran.exit_code == 0, ran.output
    cfg = configs.load(path, [*sets, f"output.path={out}"])
    store, jobs = Store(cfg), expand(cfg)
    made = merged_three_ways(store, jobs, tmp_path)
    assert_same_file(made["blocks"], made["memory"])
    assert_same_file(made["whole"], made["memory"])
    assert_same_file(out, made["memory"])  # the run's own merge


def small_config(tmp_path, **sections):
    raw = {"name": "m", "model": {"n": 5, "d": 3},
           "integrate": {"dt": 0.05, "t_max": 1.0, "save_every": 0.25},
           "grid": {"beta": [0.0, 2.0, 4.0], "seed": {"range": [0, 3]}}, **sections,
           "output": {"path": str(tmp_path / "m.nc"), **sections.get("output", {})}}
    return configs.from_dict(raw)


def test_swept_t_max_trajectories_fill_the_union_time_grid(tmp_path):
    cfg = small_config(tmp_path, grid={"t_max": [0.5, 1.0], "seed": {"range": [0, 3]}},
                       integrate={"dt": 0.05, "save_every": 0.25},
                       output={"positions": "trajectory"})
    store, jobs = Store(cfg), expand(cfg)
    assert not runner.run(jobs, store, workers=1).failed
    made = merged_three_ways(store, jobs, tmp_path)
    assert_same_file(made["blocks"], made["memory"])
    assert_same_file(made["whole"], made["memory"])
    ds = xr.open_dataset(made["blocks"])
    assert ds.sizes["time"] == 5 and ds.positions.sel(t_max=0.5, time=1.0).isnull().all()
    assert ds.positions.sel(t_max=1.0, time=1.0).notnull().all()


def test_missing_jobs_are_nan_where_allowed_and_refused_otherwise(tmp_path):
    cfg = small_config(tmp_path, output={"positions": "final"})
    store, jobs = Store(cfg), expand(cfg)
    assert not runner.run(jobs[:4] + jobs[6:], store, workers=1).failed
    made = merged_three_ways(store, jobs, tmp_path, allow_missing=True)
    assert_same_file(made["blocks"], made["memory"])
    status = xr.open_dataset(made["blocks"]).status.values.ravel()
    assert list(np.flatnonzero(status == STATUS_MISSING)) == [4, 5]
    for budget in (1, 2**40):
        with pytest.raises(MissingJobs, match="2 job.* indices 4, 5"):
            merge(store, jobs, block_bytes=budget)
    assert not store.output.exists() and not list(tmp_path.glob(".m.nc.*"))


def test_a_damaged_part_is_named_and_no_file_is_left(tmp_path):
    cfg = small_config(tmp_path)
    store, jobs = Store(cfg), expand(cfg)
    assert not runner.run(jobs, store, workers=1, batch=3).failed
    held = store.path(jobs[7])
    held.write_bytes(held.read_bytes()[:-100])  # cut short
    for budget in (1, 2**40):
        with pytest.raises(StoreError, match=re.escape(f"{held}: damaged result part")):
            merge(store, jobs, allow_missing=True, block_bytes=budget)
    assert not store.output.exists() and not list(tmp_path.glob(".m.nc.*"))


@pytest.mark.parametrize("shape", [(1,), (7,), (3, 4, 5), (2, 1, 3, 2)])
def test_blocks_are_runs_of_consecutive_jobs_within_the_budget(shape):
    count = math.prod(shape)
    for fit in (1, 2, 3, 5, 12, count, 10 * count):
        regions = list(blocks(shape, 10, 10 * fit))
        order = [np.ravel_multi_index(np.meshgrid(*[np.arange(s.start, s.stop) for s in r],
                                                  indexing="ij"), shape).ravel()
                 for r in regions]
        assert np.array_equal(np.concatenate(order), np.arange(count))  # in job order, once
        assert all(len(o) <= max(fit, 1) for o in order)
        assert all(np.array_equal(o, np.arange(o[0], o[0] + len(o))) for o in order)
        if fit >= count:
            assert len(regions) == 1


FULL_DISK = textwrap.dedent("""
    import resource, signal, sys
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit fails with EFBIG
    resource.setrlimit(resource.RLIMIT_FSIZE, (int(sys.argv[1]), resource.RLIM_INFINITY))
    from sweep import cli
    sys.argv = ["sweep", *sys.argv[2:]]
    cli.main()
""")


def test_a_file_that_cannot_grow_midway_fails_in_one_line_and_leaves_nothing(tmp_path):
    cfg = small_config(tmp_path, model={"n": 16, "d": 3},
                       grid={"beta": [0.0, 2.0, 4.0], "seed": {"range": [0, 16]}},
                       output={"positions": "trajectory"})
    store, jobs = Store(cfg), expand(cfg)
    assert not runner.run(jobs, store, workers=1).failed
    path = tmp_path / "c.yaml"
    path.write_text(cfg.to_yaml())
    whole = merge(store, jobs, out=tmp_path / "whole.nc")
    limit = whole.stat().st_size // 2  # HDF5 fails once the file passes half its size
    done = subprocess.run([sys.executable, "-c", FULL_DISK, str(limit), "merge", path],
                          capture_output=True, text=True, cwd=tmp_path)
    assert done.returncode == 1, done.stderr
    line, = done.stderr.strip().splitlines()
    assert line.startswith(f"error: {store.output}: cannot write results (")
    assert not store.output.exists() and not list(tmp_path.glob(".m.nc.*"))
    assert invoke("merge", path).exit_code == 0  # the parts are whole: a merge completes
    assert_same_file(store.output, whole)
