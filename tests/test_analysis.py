"""Thresholds, bootstrap intervals and reductions over time, on data with known answers."""

import numpy as np
import pytest
import xarray as xr

from sweep.analysis import results, thresholds
from sweep.errors import ConfigError


def steps(centres, beta, width=0.5, rising=False):
    """One tanh step per seed in beta: [beta, seed], crossing 1/2 at each centre."""
    s = np.tanh((beta[:, None] - np.asarray(centres)[None, :]) / width)
    return 0.5 * (1 + s) if rising else 0.5 * (1 - s)


def dataset(values, beta, dims=("beta", "seed"), log=False, **coords):
    attrs = {"units": "1", "spacing": "log"} if log else {"units": "1"}
    c = {"beta": ("beta", beta, attrs), "seed": np.arange(values.shape[-1]), **coords}
    return xr.Dataset({"cf": (dims, values)}, coords=c)


BETA = np.linspace(0.0, 10.0, 41)


def test_tanh_steps_recover_the_crossing_and_the_interval_covers_it():
    rng = np.random.default_rng(7)
    centres = 4.0 + rng.normal(0, 0.3, 16)
    th = thresholds.threshold(dataset(steps(centres, BETA), BETA), "cf", bootstrap=2000)
    # the crossing of the mean of symmetric steps is close to the mean centre
    assert float(th.threshold) == pytest.approx(centres.mean(), abs=0.02)
    assert float(th.threshold_low) < centres.mean() < float(th.threshold_high)
    assert float(th.threshold_high) - float(th.threshold_low) < 0.6


def test_interval_covers_the_true_crossing_about_95_percent_of_the_time():
    rng = np.random.default_rng(3)
    hits = 0
    for _ in range(60):
        centres = 5.0 + rng.normal(0, 0.4, 10)
        th = thresholds.threshold(dataset(steps(centres, BETA), BETA), "cf", bootstrap=400,
                                seed=int(rng.integers(1 << 30)))
        hits += float(th.threshold_low) <= 5.0 <= float(th.threshold_high)
    assert 48 <= hits <= 60  # binomial(60, ~0.93) lies in this range with near certainty


@pytest.mark.parametrize("rising", [False, True])
def test_both_directions_of_crossing(rising):
    th = thresholds.threshold(dataset(steps([6.3] * 3, BETA, rising=rising), BETA), "cf",
                            level=0.5, bootstrap=50)
    assert float(th.threshold) == pytest.approx(6.3, abs=0.01)
    only = "down" if rising else "up"  # the other direction never happens
    none = thresholds.threshold(dataset(steps([6.3] * 3, BETA, rising=rising), BETA), "cf",
                              direction=only, bootstrap=50)
    assert np.isnan(float(none.threshold))


def test_first_crossing_of_a_bump_and_exact_linear_interpolation():
    y = np.array([0.0, 0.2, 0.8, 1.0, 0.2, 0.0])
    x = np.arange(6.0)
    assert thresholds.crossing(x, y, 0.5) == pytest.approx(1.5)
    assert thresholds.crossing(x, y, 0.5, "down") == pytest.approx(3.625)
    assert thresholds.crossing(x, np.full(6, 0.5), 0.5) == 0.0  # starts on the level


def test_log_axis_interpolates_in_log_space():
    x = np.logspace(0, 3, 4)           # 1, 10, 100, 1000
    y = np.log10(x)[:, None] / 3.0      # linear in log10 x: crosses 0.5 at 10^1.5
    th = thresholds.threshold(dataset(y, x, log=True), "cf", bootstrap=0)
    assert float(th.threshold) == pytest.approx(10**1.5, rel=1e-12)
    lin = thresholds.threshold(dataset(y, x, log=False), "cf", bootstrap=0)
    assert float(lin.threshold) == pytest.approx(55.0)  # halfway between 10 and 100


def test_no_crossing_is_nan_everywhere():
    th = thresholds.threshold(dataset(np.full((41, 4), 0.2), BETA), "cf", bootstrap=100)
    for name in ("threshold", "threshold_low", "threshold_high"):
        assert np.isnan(float(th[name]))


def test_one_seed_gives_zero_width():
    th = thresholds.threshold(dataset(steps([3.3], BETA), BETA), "cf", bootstrap=500)
    assert float(th.threshold_low) == float(th.threshold) == float(th.threshold_high)
    assert float(th.threshold) == pytest.approx(3.3, abs=0.01)


def test_few_seeds_give_the_exact_bootstrap_whatever_the_resampling_seed():
    ds = dataset(steps(np.linspace(3, 5, 6), BETA), BETA)
    a = thresholds.threshold(ds, "cf", seed=1)
    b = thresholds.threshold(ds, "cf", seed=2)
    assert a.attrs["bootstrap"] == "exact" and a.attrs["bootstrap_resamples"] == 462  # C(11, 6)
    xr.testing.assert_identical(a.drop_attrs(), b.drop_attrs())
    counts, weights, _ = thresholds.resamples(6, 1, 1, 0)  # every multiset, its probability
    assert weights.sum() == pytest.approx(1.0) and (counts.sum(axis=1) == 6).all()
    # Monte Carlo draws approach the exact ends
    mc = thresholds.threshold(ds.assign_coords(seed=ds.seed), "cf", bootstrap=20000)
    assert float(mc.threshold_low) == pytest.approx(float(a.threshold_low), abs=0.02)


def test_many_seeds_draw_resamples_and_report_their_monte_carlo_error():
    ds = dataset(steps(np.linspace(3, 5, 12), BETA), BETA)
    a = thresholds.threshold(ds, "cf", bootstrap=300, seed=1)
    b = thresholds.threshold(ds, "cf", bootstrap=300, seed=1)
    c = thresholds.threshold(ds, "cf", bootstrap=300, seed=2)
    xr.testing.assert_identical(a.drop_attrs(), b.drop_attrs())
    assert a.attrs["bootstrap"] == "monte carlo"
    assert float(a.threshold_low) != float(c.threshold_low)
    # another resampling seed moves each end by about its reported Monte Carlo error
    error = float(a.threshold_low_mc_error)
    assert 0 < error and abs(float(a.threshold_low) - float(c.threshold_low)) < 4 * error


def test_other_axes_time_all_and_along_time():
    t = np.linspace(0, 10, 21)
    centres = 2.0 + 0.5 * BETA  # clustering time grows with beta
    y = 0.5 * (1 + np.tanh((t[None, :, None] - centres[:, None, None]) / 0.3))
    y = np.broadcast_to(y, (41, 21, 3)).copy()
    ds = xr.Dataset({"cf": (("beta", "time", "seed"), y)},
                    coords={"beta": BETA, "time": t, "seed": [0, 1, 2]})
    along_time = thresholds.threshold(ds, "cf", along="time", bootstrap=20)
    assert along_time.threshold.dims == ("beta",)
    inside = centres < 9.5
    np.testing.assert_allclose(along_time.threshold.values[inside], centres[inside], atol=0.05)
    assert along_time.attrs["time"] == "all"
    curve = thresholds.threshold(ds, "cf", along="beta", time="all", bootstrap=20)
    assert curve.threshold.dims == ("time",)
    # beta_c(t) inverts t_c(beta) = 2 + beta / 2
    ok = (t > 2.5) & (t < 6.5)
    np.testing.assert_allclose(curve.threshold.values[ok], 2 * (t[ok] - 2), atol=0.1)
    final = thresholds.threshold(ds, "cf", along="beta", time=5.0, bootstrap=0)
    assert float(final.threshold) == pytest.approx(6.0, abs=0.1)
    assert final.attrs["time"] == "5.0"


def test_missing_runs_are_skipped_in_the_seed_mean():
    y = steps([4.0, 4.0, 4.0], BETA)
    y[:, 2] = np.nan
    th = thresholds.threshold(dataset(y, BETA), "cf", bootstrap=100)
    assert float(th.threshold) == pytest.approx(4.0, abs=1e-9)


def test_along_a_zip_coordinate():
    y = steps([4.0, 4.0], BETA)
    ds = dataset(y, BETA).assign_coords(dt=("beta", BETA / 100))
    th = thresholds.threshold(ds, "cf", along="dt", bootstrap=0)
    assert float(th.threshold) == pytest.approx(0.04, abs=1e-4)


def test_plateau_reduction_reads_the_metastable_count():
    assert results.plateau(np.array([32, 32, 29, 10, 6, 6, 3, 3, 3, 3, 2])) == 3
    assert results.plateau(np.array([32, 32, 7] + [1] * 10)) == 1
    assert np.isnan(results.plateau(np.full(8, 32.0)))
    groups = np.array([0, 0, 3, 3, 2, 2, 2, 1, 1, 1, 1, 1])
    assert results.plateau_span(groups) == slice(7, 12)            # one cluster, held longest
    assert results.plateau_span(groups, low=2) == slice(4, 7)      # the multi-cluster state
    assert results.plateau_span(np.array([0, 0, 1, 1]), low=2) is None
    assert results.plateau_span(np.zeros(5), low=2) is None        # never moved
    t = np.arange(5.0)
    ds = xr.Dataset({"n_clusters": (("seed", "time"), [[8, 8, 3, 3, 1], [8, 5, 5, 5, 2]])},
                    coords={"time": t, "seed": [0, 1]})
    np.testing.assert_array_equal(results.at_time(ds.n_clusters, "plateau"), [3, 5])
    np.testing.assert_array_equal(results.at_time(ds.n_clusters, "min"), [1, 2])
    np.testing.assert_array_equal(results.at_time(ds.n_clusters, "final"), [1, 2])


@pytest.mark.parametrize("kwargs,word", [
    ({"var": "nope"}, "nope"),
    ({"var": "cf", "along": "d"}, "'d'"),
    ({"var": "cf", "along": "seed"}, "seed"),
    ({"var": "cf", "time": 3.0}, "no time dimension"),
    ({"var": "cf", "direction": "sideways"}, "sideways"),
])
def test_bad_names_are_config_errors(kwargs, word):
    with pytest.raises(ConfigError, match=word):
        thresholds.threshold(dataset(steps([4.0], BETA), BETA), **kwargs)


def test_missing_file_is_a_config_error(tmp_path):
    with pytest.raises(ConfigError, match="no such results file"):
        results.open_results(tmp_path / "none.nc")
