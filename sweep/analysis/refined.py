"""The dataset of a refinement: every sampled job stacked along one `sample` dimension, and
the located thresholds over the other axes as `threshold` writes them (docs/refine.md)."""

from __future__ import annotations

import numpy as np

from sweep.analysis.refinement import bracket, requests
from sweep.analysis.thresholds import located, long_names
from sweep.storage.coords import int32
from sweep.storage.netcdf import environment

BOOTSTRAP_SEED = 0
CONFIDENCE = 0.95
NAMES = ("threshold", "threshold_low", "threshold_high")


def refined_dataset(config, ask, lines: dict, samples: list, budget_hit: bool,
                    bootstrap: int = 2000):
    """ask: the api's Question; lines: combo -> Line; samples: (combo, x, seed, round) of
    every job run, in the order of the rounds."""
    import xarray as xr

    rules, along = ask.rules, ask.along.name
    dims = [a.name for a in ask.others]
    shape = tuple(len(a) for a in ask.others)
    per_line = {c: _line_threshold(line, ask, bootstrap) for c, line in lines.items()}
    data = {}
    for k, name in enumerate(NAMES):
        values = np.array([per_line[c][0][k] for c in lines]).reshape(shape)
        data[name] = (dims, values, per_line[next(iter(lines))][1][name])
    ends = {c: bracket(line, rules) for c, line in lines.items()}
    for k, name in enumerate(("bracket_low", "bracket_high")):
        values = np.array([np.nan if e is None else e[k] for e in ends.values()])
        data[name] = (dims, values.reshape(shape), {
            "long_name": f"{'lower' if k == 0 else 'upper'} end of the sampled bracket "
                         "that holds the crossing", "units": "1"})
    settled = [e is not None and not requests(lines[c], rules) for c, e in ends.items()]
    data["settled"] = (dims, np.array(settled, np.int8).reshape(shape), {
        "long_name": "1: the bracket met the tolerance with every seed at both ends",
        "units": "1"})
    data["points"] = (dims, np.array([len(line.values) for line in lines.values()],
                                     np.int32).reshape(shape),
                      {"long_name": f"values of {along} sampled", "units": "1"})
    data.update(_samples(ask, lines, samples))
    coords = _coords(ask.others)
    coords.update(_sample_coords(ask, samples))
    attrs = {**environment(f"refinement of {ask.var} along {along}: {config.name}"),
             "var": ask.var, "along": along, "level": rules.level,
             "tolerance": rules.tol.describe(), "direction": rules.direction,
             "time": "final" if ask.time is None else str(ask.time),
             "seeds": len(rules.seeds), "seeds_per_point": rules.per_point,
             "jobs": len(samples), "rounds": 1 + max((s[3] for s in samples), default=-1),
             "budget": -1 if ask.budget is None else ask.budget,
             "stopped_by_budget": int(budget_hit),
             "sweep_config": config.to_yaml(), "sweep_config_hash": config.hash}
    return xr.Dataset(data, coords=coords, attrs=attrs)


def _line_threshold(line, ask, bootstrap: int):
    """((threshold, low, high), the variables' attributes) of one line, from its points
    on the axis and every seed (NaN where a seed was not run there), as `threshold`
    finds them (its NumPy core: no xarray per line)."""
    rules = ask.rules
    xs = line.xs()
    if len(xs) < 2:
        return (np.nan,) * 3, _empty_attrs()
    values = np.full((len(xs), len(rules.seeds)), np.nan)
    for i, x in enumerate(xs):
        values[i, : len(line.values[x])] = line.values[x]
    arrays, method, _ = located(values, np.array(xs, float), rules.level, rules.direction,
                                rules.log, bootstrap, BOOTSTRAP_SEED, CONFIDENCE, sparse=True)
    names = long_names(ask.var, ask.along.name, rules.level, CONFIDENCE, method)
    return (tuple(float(a) for a in arrays[:3]),
            {n: {"long_name": names[n], "units": "1"} for n in NAMES})


def _empty_attrs() -> dict:
    return {n: {"units": "1"} for n in NAMES}


def _samples(ask, lines: dict, samples: list) -> dict:
    """The value and round of every job run, along `sample`."""
    seeds = list(ask.rules.seeds)
    value = np.array([lines[c].values[x][seeds.index(s)] for c, x, s, _ in samples])
    rounds = np.array([r for *_, r in samples], np.int32)
    return {ask.var: (("sample",), value, {"long_name": f"{ask.var} of the job (time: "
                                           f"{'final' if ask.time is None else ask.time})",
                                           "units": "1"}),
            "round": (("sample",), rounds, {"long_name": "round that ran the job",
                                            "units": "1"})}


def _coords(others) -> dict:
    coords = {}
    for axis in others:
        for key, vals in zip(axis.keys, axis.values):
            coords[key] = (axis.name, int32(np.asarray(vals)), {"units": "1"})
    return coords


def _sample_coords(ask, samples: list) -> dict:
    """Where each sample lies: the axis value, the other axes' values (as `<key>_of`
    coordinates along `sample`) and its seed."""
    along = ask.along.name
    coords = {f"{along}_sample": ("sample", np.array([x for _, x, _, _ in samples], float),
                                  {"long_name": f"{along} of the job", "units": "1"}),
              "seed": ("sample", np.array([s for _, _, s, _ in samples], np.int32),
                       {"long_name": "seed of the job", "units": "1"})}
    for k, axis in enumerate(ask.others):
        for key, vals in zip(axis.keys, axis.values):
            coords[f"{key}_sample"] = ("sample", int32(np.asarray(
                [vals[c[k]] for c, *_ in samples])), {"long_name": f"{key} of the job",
                                                       "units": "1"})
    return coords
