"""sweep refine: rounds planned from the values alone, run as ordinary jobs of the config, the
same points and bits whatever the workers, shards or resume history; bad input in one line."""

import numpy as np
import pytest

from helpers import invoke
from sweep import api
from sweep.analysis.refinement import Line, Rules, bracket, first_round, requests, tolerance
from sweep.config import schema as config
from sweep.config.grid import shard
from sweep.errors import ConfigError
from sweep.execution import runner
from sweep.storage.store import Store

# 2 dimensions x 3 betas x 4 seeds to start: at t = 4 the clustered fraction of n = 6 tokens
# falls through 0.3 as beta grows (below beta = 1 for d = 2, near 2 for d = 3)
CFG = {"name": "refine", "model": {"attention": "softmax", "d": 3, "n": 6},
       "integrate": {"method": "euler", "dt": 0.1, "t_max": 4.0, "save_every": 0.5},
       "grid": {"beta": [0.0, 4.0, 8.0], "d": [2, 3], "seed": {"range": [0, 4]}}}
ASK = {"var": "clustered_fraction", "level": 0.3, "along": "beta", "tol": 0.5}


def settle(truth, rules, xs, rounds=50):
    """Run the planning against a known curve (value = truth(x, seed)) until settled."""
    line, history = Line({}), []
    plan = first_round(xs, rules)
    for _ in range(rounds):
        if not plan:
            return line, history
        for x, seeds in plan:
            held = line.values.get(x, np.empty(0))
            line.values[x] = np.concatenate([held, [truth(x, s) for s in seeds]])
        history.append(plan)
        plan = requests(line, rules)
    raise AssertionError("did not settle")


def test_rounds_narrow_the_bracket_to_the_tolerance_with_every_seed_at_its_ends():
    rules = Rules(0.5, tolerance(0.25), tuple(range(8)), 2)
    line, history = settle(lambda x, s: float(x >= 3.3 + 0.01 * s), rules, [0.0, 5.0, 10.0])
    a, b = bracket(line, rules)
    assert a <= 3.3 < b and b - a <= 0.25
    assert len(line.values[a]) == len(line.values[b]) == 8
    assert len(history) >= 5
    # far from the crossing a point keeps the seeds it started with
    assert len(line.values[0.0]) == len(line.values[10.0]) == 2
    assert sum(len(s) for plan in history for _, s in plan) < 8 * 41  # a grid at 0.25


def test_integer_and_log_axes_and_no_crossing():
    ints = Rules(0.5, tolerance(0.1), (0, 1), 2, integer=True)
    line, _ = settle(lambda x, s: float(x >= 37), ints, [2, 128])
    assert bracket(line, ints) == (36, 37) and all(isinstance(x, int) for x in line.values)
    logs = Rules(0.5, tolerance("5%"), (0, 1), 2, log=True)
    line, history = settle(lambda x, s: float(x >= 0.03), logs, [1e-3, 1.0])
    a, b = bracket(line, logs)
    assert a < 0.03 <= b and b - a <= 0.05 * (a + b) / 2
    assert history[1] == [(pytest.approx(10 ** -1.5), (0, 1))]  # the geometric midpoint
    never, history = settle(lambda x, s: 0.0, ints, [0, 4])
    assert bracket(never, ints) is None and len(history) == 1


def test_tolerance_forms():
    assert tolerance("2%").relative and tolerance("2%").value == pytest.approx(0.02)
    assert not tolerance(0.1).relative and tolerance(0.1).met(1.0, 1.1)
    for bad in ("0", "-1", "wide", "nan%"):
        with pytest.raises(ConfigError, match="--tol"):
            tolerance(bad)


def refined(tmp_path, name, before=(), **options):
    """The refinement after `before`: (job picker, workers) runs of round 0's jobs, then a
    refine with `options`; returns (dataset loaded, Refinement)."""
    cfg = config.from_dict({**CFG, "output": {"path": str(tmp_path / f"{name}.nc")}})
    for pick, workers in before:
        first = api.refining._round_jobs(cfg, api.refining.question(
            cfg, ASK["var"], 0.3, "beta", 0.5, None, None, None, "any"),
            {c: first_round([0.0, 4.0, 8.0], _rules(cfg)) for c in [(0,), (1,)]})
        runner.run(pick(first), Store(cfg), workers=workers)
    done = api.refine_rounds(cfg, **ASK, **options)
    return done.dataset.load(), done


def _rules(cfg):
    return api.refining.question(cfg, ASK["var"], 0.3, "beta", 0.5, None, None, None,
                                 "any").rules


def refined_by_shards(tmp_path, name, count):
    """Every shard in turn, as separate processes would, until the refinement is written."""
    cfg = config.from_dict({**CFG, "output": {"path": str(tmp_path / f"{name}.nc")}})
    for _ in range(20):
        for i in range(count):
            done = api.refine_rounds(cfg, **ASK, shard=(i, count), workers=1 + i % 2)
            if done.dataset is not None:
                return done.dataset.load(), done
    raise AssertionError("shards never finished")


def assert_same(a, b, case=""):
    assert a.sizes == b.sizes, case
    for name in [*a.data_vars, *a.coords]:
        np.testing.assert_array_equal(a[name].values, b[name].values, err_msg=f"{case} {name}")


def test_same_points_and_bits_whatever_workers_shards_or_resume(tmp_path):
    one, done = refined(tmp_path, "one", workers=1)
    assert done.rounds >= 3 and done.jobs == one.sizes["sample"] == done.computed
    assert int(one.settled.sum()) >= 1
    found = one.threshold.values[np.isfinite(one.threshold.values)]
    assert found.size and ((found > 0) & (found < 8)).all()
    width = (one.bracket_high - one.bracket_low).values
    assert (width[one.settled.values == 1] <= 1.0).all()
    cases = {"two": refined(tmp_path, "two", workers=2),
             "resumed": refined(tmp_path, "resumed", before=[(lambda j: j[:7], 1)], workers=2),
             "sharded": refined(tmp_path, "sharded", before=[(lambda j: shard(j, 1, 3), 2)],
                                workers=1),
             "shards": refined_by_shards(tmp_path, "shards", 3)}
    for name, (ds, _) in cases.items():
        assert_same(ds, one, name)
    assert cases["resumed"][1].computed == done.jobs - 7
    again = api.refine_rounds(config.from_dict(
        {**CFG, "output": {"path": str(tmp_path / "one.nc")}}), **ASK)
    assert again.computed == 0 and again.jobs == done.jobs  # nothing computed twice
    assert_same(again.dataset.load(), one)


def test_samples_are_jobs_of_the_full_grid_and_give_its_threshold(tmp_path):
    """Bisection from 0, 4, 8 to 0.5 samples points of the grid at spacing 0.5: each sample
    is that grid's job (same id, read not rerun), and the threshold is the grid's."""
    cfg = config.from_dict({**CFG, "output": {"path": str(tmp_path / "full.nc")}})
    ds = api.refine(cfg, **ASK)
    full_cfg = config.from_dict({**CFG, "grid": {**CFG["grid"], "beta": {
        "linspace": [0.0, 8.0, 17]}}, "output": {"path": str(tmp_path / "full.nc")}})
    outcome = api.execute(full_cfg)
    jobs = ds.sizes["sample"]
    assert (outcome.report.skipped, outcome.report.completed) == (jobs, 17 * 2 * 4 - jobs)
    full = api.open_results(outcome.path)
    for k in range(jobs):
        point = {"beta": float(ds.beta_sample[k]), "d": int(ds.d_sample[k]),
                 "seed": int(ds.seed[k])}
        expect = full.clustered_fraction.sel(**point).isel(time=-1)
        assert float(ds.clustered_fraction[k]) == float(expect)
    th = api.threshold(full, "clustered_fraction", along="beta", level=ASK["level"])
    assert ds.settled.all()
    np.testing.assert_array_equal(ds.threshold.values, th.threshold.values)


@pytest.mark.parametrize("args,message", [
    (["--var", "nope"], "--var 'nope': not a variable"),
    (["--var", "clustered_fraction", "--level", "2"], "--level 2: clustered_fraction lies in"),
    (["--var", "clustered_fraction", "--along", "n"], "--along 'n': not an axis of the grid"),
    (["--var", "clustered_fraction", "--along", "time"], "--along time: not an axis"),
    (["--var", "clustered_fraction", "--tol", "-1"], "--tol '-1'"),
    (["--var", "clustered_fraction", "--seeds-per-point", "9"], "--seeds-per-point 9"),
    (["--var", "t_cluster", "--time", "max"], "--time max: refine needs one number"),
])
def test_bad_input_is_one_line_and_exit_2(tmp_path, args, message):
    path = tmp_path / "c.yaml"
    path.write_text(config.from_dict({**CFG, "output": {"path": str(tmp_path / "r.nc")}})
                    .to_yaml())
    result = invoke("refine", path, *args)
    assert result.exit_code == 2, result.output
    assert message in result.output and len(result.output.strip().splitlines()) == 1
    assert not (tmp_path / "r.parts").exists()


def test_python_api_names():
    import sweep

    assert sweep.refine is api.refine and "refine" in dir(sweep)


def test_plot_draws_the_samples_and_thresholds_over_the_grid(tmp_path):
    """sweep plot --refined: every sampled point and each line's threshold over the full
    grid's heatmap, recorded in the sidecar; a file that is no refinement is refused."""
    import json

    full_cfg = config.from_dict({**CFG, "grid": {**CFG["grid"], "beta": {
        "linspace": [0.0, 8.0, 17]}}, "output": {"path": str(tmp_path / "full.nc")}})
    grid = api.execute(full_cfg).path
    cfg = config.from_dict({**CFG, "output": {"path": str(tmp_path / "full.nc")}})
    done = api.refine_rounds(cfg, **ASK)
    assert done.computed == 0 and set(done.phases) <= set(api.refining.PHASES)
    assert 0 < done.overhead < done.outside_runner < 1
    figure, numbers = tmp_path / "r.png", tmp_path / "r.json"
    result = invoke("plot", grid, "--var", "clustered_fraction", "--x", "beta", "--y", "d",
                    "--refined", done.path, "-o", figure, "--numbers", numbers)
    assert result.exit_code == 0, result.output
    shown = json.loads(numbers.read_text())["panels"][0]["refined"]
    ds = done.dataset
    assert shown["jobs"] == ds.sizes["sample"] and shown["rounds"] == done.rounds
    assert [r["points"] for r in shown["lines"]] == ds.points.values.tolist()
    np.testing.assert_allclose([r["threshold"] for r in shown["lines"]], ds.threshold.values,
                               rtol=1e-5)
    assert figure.stat().st_size > 0
    bad = invoke("plot", grid, "--var", "clustered_fraction", "--x", "beta", "--y", "d",
                 "--refined", grid, "-o", figure)
    assert bad.exit_code == 2 and "not a refinement" in bad.output


def test_a_point_without_the_drawn_seeds_keeps_its_mean_in_the_bootstrap():
    """refine's lines hold few seeds away from the bracket: a resample that draws none of a
    point's seeds keeps that point's mean (sparse), where threshold's would lose the point;
    with every seed everywhere the two are the same numbers."""
    from sweep.analysis.thresholds import located

    nan = np.nan
    values = np.array([[0.0, 0.0, nan, nan], [0.2, 0.8, 0.3, 0.9], [1.0, 1.0, nan, nan]])
    x = np.array([0.0, 1.0, 2.0])
    (best, low, high), *_ = located(values, x, 0.5, "any", False, 2000, 0, 0.95, sparse=True)
    assert 0 < best < 1 and np.isfinite(high) and low <= best <= high
    loose = located(values, x, 0.5, "any", False, 2000, 0, 0.95)[0]
    assert loose[0] == best and (np.isnan(loose[2]) or loose[2] >= high)
    full = np.random.default_rng(1).random((5, 6))
    xs = np.arange(5.0)
    for a, b in zip(located(full, xs, 0.5, "any", False, 2000, 0, 0.95, sparse=True)[0],
                    located(full, xs, 0.5, "any", False, 2000, 0, 0.95)[0]):
        np.testing.assert_array_equal(a, b)


def test_a_round_read_from_memory_is_the_part_on_disk(tmp_path):
    """Store.keep_written: read_each serves the arrays this store just wrote, the same bits
    as a fresh store reading the files; a part rewritten since is read from its file."""
    cfg = config.from_dict({**CFG, "output": {"path": str(tmp_path / "m.nc")}})
    jobs = api.refining._round_jobs(cfg, api.refining.question(
        cfg, ASK["var"], 0.3, "beta", 0.5, None, None, None, "any"),
        {c: first_round([0.0, 4.0, 8.0], _rules(cfg)) for c in [(0,), (1,)]})
    kept = Store(cfg)
    kept.keep_written()
    runner.run(jobs, kept, workers=2)
    assert kept._kept and all(kept._held(n, kept.index().known[n]) is not None
                              for n in kept._kept)
    fresh = Store(cfg)
    for (_, a, _), (_, b, _) in zip(kept.read_each(jobs), fresh.read_each(jobs)):
        np.testing.assert_array_equal(a.observables, b.observables)
        assert a.status == b.status
    name = next(iter(kept._kept))
    header = kept.index().known[name]
    moved = type(header)(header.ids, header.status, header.errors, header.size,
                         header.mtime + 1)
    assert kept._held(name, moved) is None  # not the file it wrote: read from disk
