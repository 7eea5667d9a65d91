"""threshold, plot and theory through the command line: files, image sizes, exit codes."""

import json

import matplotlib.image
import numpy as np
import pytest
import xarray as xr
import yaml

from helpers import invoke

T = np.arange(0.0, 12.01, 0.5)
BETA = np.linspace(0.0, 8.0, 9)



@pytest.fixture
def results(tmp_path):
    """A results file shaped like a (t, beta, d) sweep: clustering time 5 + beta^2 / 8."""
    rng = np.random.default_rng(0)
    t_c = 5.0 + BETA[:, None, None] ** 2 / 8 + rng.normal(0, 0.2, (9, 2, 3))
    cf = 0.5 * (1 + np.tanh((T - t_c[..., None]) / 0.4))
    coord = {"long_name": "axis", "units": "1"}
    ds = xr.Dataset(
        {"clustered_fraction": (("beta", "d", "seed", "time"), cf,
                                {"long_name": "fraction of clustered pairs", "units": "1"}),
         "t_cluster": (("beta", "d", "seed"), t_c, {"long_name": "clustering time",
                                                     "units": "1"}),
         "max_clusters": (("beta", "d", "seed"), 2 * t_c, {"long_name": "most clusters",
                                                          "units": "1"})},
        coords={"beta": ("beta", BETA, coord), "d": ("d", [8, 128], coord),
                "seed": ("seed", [0, 1, 2], coord), "time": ("time", T, coord)},
        attrs={"title": "sweep results: synthetic"})
    path = tmp_path / "synthetic.nc"
    ds.to_netcdf(path)
    return path


def image_size(path):
    return matplotlib.image.imread(path).shape[:2]


def test_threshold_writes_the_spec_dataset(results, tmp_path):
    out = tmp_path / "th.nc"
    r = invoke("threshold", results, "--var", "clustered_fraction", "--along", "time",
               "--bootstrap", 200, "-o", out)
    assert r.exit_code == 0, r.output
    assert "threshold" in r.output and str(out) in r.output
    th = xr.open_dataset(out)
    assert set(th.data_vars) == {"threshold", "threshold_low", "threshold_high"}
    assert th.threshold.dims == ("beta", "d")
    for key, value in {"var": "clustered_fraction", "along": "time", "level": 0.5,
                       "time": "all"}.items():
        assert th.attrs[key] == value
    seen = np.isfinite(th.threshold.values)
    assert seen.sum() == 16  # beta = 8 clusters at t = 13, after the last saved time
    assert np.all(th.threshold_low.values[seen] <= th.threshold.values[seen])
    assert np.all(th.threshold.values[seen] <= th.threshold_high.values[seen])
    np.testing.assert_allclose(th.threshold.sel(d=8, beta=0.0), 5.0, atol=0.3)


def test_threshold_of_a_variable_without_time(results):
    r = invoke("threshold", results, "--var", "max_clusters", "--along", "beta", "--level", 18)
    assert r.exit_code == 0, r.output
    assert "time: none" in r.output
    never = invoke("threshold", results, "--var", "t_cluster", "--along", "beta", "--level", 9)
    assert never.exit_code == 2 and "NaN means never" in never.output


def test_heatmap_with_threshold_and_theory(results, tmp_path):
    th, theory = tmp_path / "th.nc", tmp_path / "eq.nc"
    invoke("threshold", results, "--var", "clustered_fraction", "--along", "time", "-o", th)
    r = invoke("theory", "equiangular", "--n", 32, "--eps", 1e-3, "--beta", 0, 8, 17,
               "--t-max", 12, "-o", theory)
    assert r.exit_code == 0, r.output
    png = tmp_path / "fig" / "phase.png"
    r = invoke("plot", results, "--var", "clustered_fraction", "--x", "beta", "--y", "time",
               "--threshold", th, "--theory", theory, "-o", png)
    assert r.exit_code == 0, r.output
    assert png.stat().st_size > 10_000
    height, width = image_size(png)
    assert height > 300 and width > 2 * height  # two panels (d = 8, 128) and a colour bar


def test_boundary_as_a_curve_over_time_on_the_heatmap(results, tmp_path):
    th = tmp_path / "curve.nc"
    r = invoke("threshold", results, "--var", "clustered_fraction", "--along", "beta",
               "--time", "all", "-o", th)
    assert r.exit_code == 0, r.output
    assert set(xr.open_dataset(th).threshold.dims) == {"time", "d"}
    png = tmp_path / "curve.png"
    r = invoke("plot", results, "--var", "clustered_fraction", "--x", "beta", "--y", "time",
               "--threshold", th, "-o", png)
    assert r.exit_code == 0, r.output
    assert png.stat().st_size > 10_000


def test_noise_threshold_overlay(tmp_path):
    noise = np.linspace(0.05, 1.0, 12)
    r = 1.0 / (1.0 + np.exp((noise[None, :] - 0.4) / 0.05))
    ds = xr.Dataset({"order_parameter": (("beta", "noise", "seed"),
                                         np.repeat(r[:, :, None] * np.ones((9, 1, 1)), 2, 2))},
                    coords={"beta": BETA, "noise": noise, "seed": [0, 1]})
    res, kappa = tmp_path / "noise.nc", tmp_path / "kappa.nc"
    ds.to_netcdf(res)
    assert invoke("theory", "kappa-c", "--d", 3, *sum((["--beta", b] for b in BETA), []),
                  "-o", kappa).exit_code == 0
    png = tmp_path / "noise.png"
    r = invoke("plot", res, "--var", "order_parameter", "--x", "beta", "--y", "noise",
               "--theory", kappa, "-o", png)
    assert r.exit_code == 0, r.output
    assert png.stat().st_size > 5_000
    wrong = invoke("plot", res, "--var", "order_parameter", "--x", "beta", "--y", "noise",
                   "--theory", tmp_path / "noise.nc", "-o", tmp_path / "w.png")
    assert wrong.exit_code == 2 and "theory file" in wrong.output


def test_line_plot_and_formats_by_extension(results, tmp_path):
    for name, magic in [("lines.png", b"\x89PNG"), ("lines.pdf", b"%PDF"),
                        ("lines.svg", b"<?xml")]:
        path = tmp_path / name
        r = invoke("plot", results, "--var", "clustered_fraction", "--x", "time",
                   "--sel", "d=128", "-o", path)
        assert r.exit_code == 0, r.output
        assert path.read_bytes().startswith(magic)
    height, width = image_size(tmp_path / "lines.png")
    assert 300 < height < width


def test_heatmap_of_a_reduction_over_a_real_run(tmp_path):
    cfg = {"name": "tiny", "model": {"n": 6, "d": 3},
           "integrate": {"dt": 0.1, "t_max": 3.0, "save_every": 0.5},
           "grid": {"beta": [0.0, 2.0, 4.0], "d": [3, 4], "seed": {"range": [0, 2]}}}
    path = tmp_path / "tiny.yaml"
    path.write_text(yaml.safe_dump(cfg))
    res = tmp_path / "tiny.nc"
    assert invoke("run", path, "--out", res, "--workers", 1).exit_code == 0
    png = tmp_path / "tiny.png"
    r = invoke("plot", res, "--var", "n_clusters", "--time", "plateau", "--x", "beta",
               "--y", "d", "-o", png)
    assert r.exit_code == 0, r.output
    assert png.stat().st_size > 5_000


def test_theory_commands_print_and_write(tmp_path):
    out = tmp_path / "k.nc"
    r = invoke("theory", "kappa-c", "--d", 2, "--d", 3, "--beta", 0, "--beta", 1, "-o", out)
    assert r.exit_code == 0, r.output
    assert "2.7182818" in r.output  # kappa_c(1, 3) = e
    k = xr.open_dataset(out)
    assert k.kappa_c.sel(d=3, beta=0).item() == 3.0
    r = invoke("theory", "equiangular", "--n", 2, "--model", "unnormalized", "--eps", 0.1)
    assert r.exit_code == 0 and "t*" in r.output


@pytest.mark.parametrize("args,word", [
    (["threshold", "{res}", "--var", "nope"], "nope"),
    (["threshold", "{res}", "--var", "clustered_fraction", "--along", "kappa"], "kappa"),
    (["threshold", "{tmp}/missing.nc", "--var", "x"], "missing.nc"),
    (["plot", "{res}", "--var", "nope", "-o", "{tmp}/a.png"], "nope"),
    (["plot", "{res}", "--var", "clustered_fraction", "--y", "kappa", "-o", "{tmp}/a.png"],
     "kappa"),
    (["plot", "{res}", "--var", "clustered_fraction", "-o", "{tmp}/a.gif"], "a.gif"),
    (["plot", "{tmp}/missing.nc", "--var", "x"], "missing.nc"),
    (["plot", "{res}", "--var", "clustered_fraction", "--x", "time", "--sel", "d=65",
      "-o", "{tmp}/a.png"], "nearest: 8, 128"),
    (["plot", "{res}", "--var", "clustered_fraction", "--x", "time", "--sel", "d=8",
      "--threshold", "{res}", "-o", "{tmp}/a.png"], "not a threshold file"),
    (["plot", "{res}", "--var", "clustered_fraction", "--x", "beta", "--y", "time",
      "--theory", "{res}", "-o", "{tmp}/a.png"], "not a theory file"),
    (["theory", "equiangular", "--model", "hardmax"], "hardmax"),
    (["theory", "equiangular", "--eps", 2], "eps"),
])
def test_bad_names_and_files_exit_2(results, tmp_path, args, word):
    r = invoke(*[str(a).format(res=results, tmp=tmp_path) for a in args])
    assert r.exit_code == 2
    assert word in r.output
    assert "Traceback" not in r.output
    assert not (tmp_path / "a.png").exists()


@pytest.mark.parametrize("label,kind", [
    ("identity", ("identity", 0)),
    ("../results/minilm/layer3_qk_gaussian.npy", ("gaussian", 3)),
    ("../results/minilm/layer6_qk.npy", ("trained", 6)),
])
def test_matrix_kind_reads_the_qk_coordinate(label, kind):
    from sweep.analysis import comparison

    assert comparison.matrix_kind(label) == kind


@pytest.mark.parametrize("betas", [[1.0], [1.0, 100.0], None])  # None: beta not swept
def test_trained_vs_random_draws_one_row_per_beta(tmp_path, betas):
    from sweep.analysis import comparison

    labels = ["identity", "m/layer1_qk_gaussian.npy", "m/layer1_qk.npy"]
    cos = np.linspace(0.0, 1.0, 5) * np.ones((len(labels), len(betas or [1.0]), 2, 1))
    dims = ("qk", "beta", "seed", "time")
    sim = xr.Dataset({"mean_cosine": (dims, cos), "clustered_fraction": (dims, cos**2)},
                     coords={"qk": labels, "beta": betas or [1.0], "seed": [0, 1],
                             "time": np.arange(5.)})
    if betas is None:
        sim = sim.isel(beta=0, drop=True)
    layer = np.arange(7)
    probe = xr.Dataset({v: ("layer", layer / 7) for v in ("mean_cosine", "pc1_share",
                                                          "coarse_clustered_fraction")}
                       | {"token_norm": ("layer", layer + 10.0)}, coords={"layer": layer},
                       attrs={"model": "m", "n_tokens": 9, "cosine_threshold": 0.9})
    done = comparison.trained_vs_random(sim, probe, tmp_path / "fig" / "t.png")
    assert done == tmp_path / "fig" / "t.png"
    assert image_size(done) == (400 * len(betas or [1.0]), 1400)  # 14 x 4 in. a row, dpi 100


# ---------------------------------------------------------------- honest figures

def numbers_of(*args, tmp_path):
    """Run sweep plot with --numbers; the sidecar it wrote."""
    side = tmp_path / "n.json"
    r = invoke("plot", *args, "-o", tmp_path / "f.png", "--numbers", side)
    assert r.exit_code == 0, r.output
    return json.loads(side.read_text())


def text_axis_results(tmp_path):
    """A heads-like sweep over a text axis (head_beta labels) and beta."""
    labels = ["6,6,6,6", "4,4,8,8", "1,1,11,11"]
    t_c = np.array([4.0, 6.0, 9.0])[:, None, None] + np.arange(3)[None, :, None] * 0.1
    t_c = t_c + np.zeros((3, 3, 4))
    cf = 0.5 * (1 + np.tanh((T - t_c[..., None]) / 0.4))
    ds = xr.Dataset({"clustered_fraction": (("head_beta", "beta", "seed", "time"), cf),
                     "t_cluster": (("head_beta", "beta", "seed"), t_c)},
                    coords={"head_beta": labels, "beta": [1.0, 2.0, 4.0], "seed": range(4),
                            "time": T})
    path = tmp_path / "heads.nc"
    ds.to_netcdf(path)
    return path


def test_text_axes_in_tables_selections_and_plots(tmp_path):
    res = text_axis_results(tmp_path)
    r = invoke("threshold", res, "--var", "clustered_fraction", "--along", "time")
    assert r.exit_code == 0, r.output
    assert "1,1,11,11" in r.output and "Traceback" not in r.output
    along = invoke("threshold", res, "--var", "clustered_fraction", "--along", "head_beta")
    assert along.exit_code == 2 and "text axis" in along.output
    assert len(along.output.strip().splitlines()) == 1
    shown = numbers_of(res, "--var", "t_cluster", "--x", "head_beta", tmp_path=tmp_path)
    first = shown["panels"][0]["lines"][0]
    assert first["head_beta"] == ["6,6,6,6", "4,4,8,8", "1,1,11,11"]
    assert first["y"] == [4.0, 6.0, 9.0]  # the lower median of 4 equal seeds
    picked = numbers_of(res, "--var", "clustered_fraction", "--x", "time", "--sel",
                        "head_beta=1.0,1,11,11.0", "--sel", "beta=2", tmp_path=tmp_path)
    assert "β_h = 1,1,11,11" in picked["title"] and "β = 2" in picked["title"]
    heat = numbers_of(res, "--var", "clustered_fraction", "--x", "time", "--y", "head_beta",
                      "--sel", "beta=1", tmp_path=tmp_path)
    assert heat["panels"][0]["range"] == [0.0, 1.0]


def test_never_clustered_seeds_count_as_never_not_dropped(tmp_path):
    t_c = np.array([[5.0, 6.0, np.nan, np.nan], [5.0, 6.0, 7.0, np.nan]])  # [beta, seed]
    ds = xr.Dataset({"t_cluster": (("beta", "seed"), t_c),
                     "status": (("beta", "seed"), np.zeros((2, 4), dtype=np.int8))},
                    coords={"beta": [1.0, 2.0], "seed": range(4), "time": [0.0, 10.0]})
    res = tmp_path / "t.nc"
    ds.to_netcdf(res)
    shown = numbers_of(res, "--var", "t_cluster", "--x", "beta", tmp_path=tmp_path)
    line = shown["panels"][0]["lines"][0]
    # the time by which half the seeds clustered: 6 in both; a mean that dropped the
    # never-clustered seeds would claim 5.5 and 6
    assert line["y"] == [6.0, 6.0] and line["count"] == [2, 3]
    assert line["high"] == [10.0, 7.0]  # an upper quartile "never" is drawn up to t_max
    assert "never = ∞" in shown["title"] and "5 of 8 runs clustered" in line["label"]


@pytest.mark.parametrize("var", ["clustered_fraction", "inter_attention"])
def test_bands_stay_inside_the_variables_range(tmp_path, var):
    cf = np.array([[0.0, 1.0, 1.0, 1.0], [0.9, 1.0, 1.0, 0.2]])  # [beta, seed]
    if var == "inter_attention":  # mostly near 0, one seed far out: the band would dip below
        cf = 1.0 - cf
    ds = xr.Dataset({var: (("beta", "seed", "time"), cf[..., None])},
                    coords={"beta": [1.0, 2.0], "seed": range(4), "time": [0.0]})
    res = tmp_path / "b.nc"
    ds.to_netcdf(res)
    line = numbers_of(res, "--var", var, "--x", "beta",
                      tmp_path=tmp_path)["panels"][0]["lines"][0]
    low, high = min(line["low"]), max(line["high"])
    assert 0.0 <= low and high <= 1.0 and 1.0 in (high, 1.0 - low)  # clipped, not just inside


def test_status_is_not_averaged(results, tmp_path):
    ds = xr.open_dataset(results).load()
    ds["status"] = (("beta", "d", "seed"), np.zeros((9, 2, 3), dtype=np.int8))
    ds.to_netcdf(tmp_path / "s.nc")
    for cmd in (["plot", tmp_path / "s.nc", "--var", "status", "-o", tmp_path / "s.png"],
                ["threshold", tmp_path / "s.nc", "--var", "status"]):
        r = invoke(*cmd)
        assert r.exit_code == 2 and "categories" in r.output and not (tmp_path / "s.png").exists()


def test_a_theory_file_for_another_n_is_refused(results, tmp_path):
    ds = xr.open_dataset(results).load().assign_attrs(sweep_config="model:\n  n: 32\n")
    ds.to_netcdf(tmp_path / "n32.nc")
    said = {}
    for n in (64, 32):
        eq = tmp_path / f"eq{n}.nc"
        invoke("theory", "equiangular", "--n", n, "--beta", 0, 8, 17, "--t-max", 12, "-o", eq)
        said[n] = invoke("plot", tmp_path / "n32.nc", "--var", "clustered_fraction", "--x",
                         "beta", "--y", "time", "--theory", eq, "-o", tmp_path / f"{n}.png")
    assert said[64].exit_code == 2 and "n = 64" in said[64].output
    assert "n = 32" in said[64].output and not (tmp_path / "64.png").exists()
    assert said[32].exit_code == 0, said[32].output


def test_irregular_and_log_spaced_axes_are_drawn_at_their_values():
    from sweep.analysis.scales import scale

    def coord(values, **attrs):
        return xr.DataArray(values, dims="a", name="a", attrs=attrs)

    assert scale(coord([0.5, 1.0, 2.0, 3.0, 6.0, 10.0])) == "linear"
    assert scale(coord([2, 4, 8, 16, 32])) == "log"
    assert scale(coord([0.1, 1.0, 10.0], spacing="log")) == "log"
    assert scale(coord(["dense", "causal"])) == "category"
    assert scale(coord([3, 32])) == "category"  # two values have no spacing


def test_sidecar_holds_the_threshold_points_and_their_deviation_from_theory(results, tmp_path):
    th, eq = tmp_path / "th.nc", tmp_path / "eq.nc"
    invoke("threshold", results, "--var", "clustered_fraction", "--along", "time", "-o", th)
    invoke("theory", "equiangular", "--n", 32, "--beta", 0, 8, 17, "--t-max", 12, "-o", eq)
    shown = numbers_of(results, "--var", "clustered_fraction", "--x", "beta", "--y", "time",
                       "--threshold", th, "--theory", eq, tmp_path=tmp_path)
    panel = shown["panels"][0]
    assert panel["panel"] == "d = 8" and len(panel["threshold"]) == 9
    first = panel["deviation"][0]
    want = xr.open_dataset(th).threshold.sel(d=8, beta=0.0).item()
    assert first["measured"] == pytest.approx(want, rel=1e-5)
    assert first["deviation"] == pytest.approx((first["measured"] - first["ode"]) / first["ode"],
                                               rel=1e-4)


def test_head_beta_labels_are_exact_and_read_back(tmp_path):
    from sweep.storage.coords import label

    close = [(1.0, 11.0), (1.0, 11.000001), (0.1, 0.30000000000000004), (1e-20, 2.5)]
    texts = [label(b) for b in close]
    assert texts[0] == "1,11" and len(set(texts)) == len(texts)  # %g made 1,11 of the first two
    assert all(tuple(float(v) for v in t.split(",")) == b for t, b in zip(texts, close))
    cfg = tmp_path / "h.yaml"
    cfg.write_text("name: h\nmodel: {n: 4, d: 3, heads: 2}\n"
                   "integrate: {dt: 0.1, t_max: 0.2, save_every: 0.1}\n"
                   "grid: {head_beta: [[1, 11], [1, 11.000001]]}\n")
    out = tmp_path / "h.nc"
    assert invoke("run", cfg, "--out", out, "--workers", 1).exit_code == 0
    assert list(xr.open_dataset(out).head_beta.values) == ["1,11", "1,11.000001"]
    picked = invoke("plot", out, "--var", "mean_cosine", "--x", "time", "--sel",
                    "head_beta=1,11.000001", "-o", tmp_path / "p.png")
    assert picked.exit_code == 0, picked.output


def test_a_threshold_file_plots_with_its_seed_count_and_bootstrap_band(tmp_path):
    """`sweep plot TH.nc --var threshold --x AXIS`: the seeds the threshold was taken from,
    not 1, and the band of the file's bootstrap interval."""
    import xarray as xr

    from sweep.analysis import results

    time = np.array([0.0, 1.0, 2.0])
    th = xr.Dataset({"threshold": ("time", [1.0, 2.0, 3.0]),
                     "threshold_low": ("time", [0.5, 1.5, 2.5]),
                     "threshold_high": ("time", [1.5, 2.5, 3.5])}, coords={"time": time},
                    attrs={"along": "beta", "seeds": 6, "var": "clustered_fraction",
                           "level": 0.5, "title": "threshold of clustered_fraction: sweep "
                                                  "results: demo"})
    fr = results.frame(th, "threshold", ["time"])
    assert fr.seeds == 6 and fr.statistic == "threshold"
    np.testing.assert_array_equal(fr.low.values, [0.5, 1.5, 2.5])
    np.testing.assert_array_equal(fr.high.values, [1.5, 2.5, 3.5])
    from sweep.analysis import labels

    assert labels.title(th, "threshold", fr, "all") == (
        "threshold of clustered_fraction: demo: mean of 6 seeds, 95% bootstrap band")


def test_log_x_puts_a_geometric_axis_on_a_log_scale(tmp_path):
    """d = 2, 3, 8, 32 is neither linear nor geometric: linear by default (slivers at small
    d), --log-x draws it on a log scale, for lines and heatmaps, a threshold file included."""
    d = np.array([2, 3, 8, 32])
    th = xr.Dataset({"threshold": ("d", [1.0, 2.0, 4.0, 6.0]),
                     "threshold_low": ("d", [0.5, 1.5, 3.5, 5.5]),
                     "threshold_high": ("d", [1.5, 2.5, 4.5, 6.5])},
                    coords={"d": d, "time": 30.0}, attrs={"along": "beta", "seeds": 6,
                                                          "var": "clustered_fraction",
                                                          "level": 0.5})
    path = tmp_path / "th.nc"
    th.to_netcdf(path)
    seen = {}
    import matplotlib.figure

    original = matplotlib.figure.Figure.savefig

    def spy(fig, *args, **kwargs):
        panels = [ax for ax in fig.axes if ax.get_label() != "<colorbar>"]
        seen["scales"] = [ax.get_xscale() for ax in panels]
        seen["y"] = [ax.get_yscale() for ax in panels]
        seen["ticks"] = [t.get_text() for t in fig.axes[0].get_xticklabels()]
        return original(fig, *args, **kwargs)

    import unittest.mock

    with unittest.mock.patch.object(matplotlib.figure.Figure, "savefig", spy):
        plain = invoke("plot", path, "--var", "threshold", "--x", "d", "-o", tmp_path / "a.png")
        assert plain.exit_code == 0, plain.output
        assert seen["scales"] == ["linear"] and seen["y"] == ["linear"]
        logged = invoke("plot", path, "--var", "threshold", "--x", "d", "--log-x",
                        "-o", tmp_path / "b.png")
        assert logged.exit_code == 0, logged.output
        assert seen["scales"] == ["log"] and seen["ticks"] == ["2", "3", "8", "32"]
        grid = xr.Dataset({"clustered_fraction": (("d", "beta", "time"),
                                                  np.random.default_rng(0).random((4, 3, 2)))},
                          coords={"d": d, "beta": [0.0, 1.0, 2.0], "time": [0.0, 1.0]})
        grid.to_netcdf(tmp_path / "grid.nc")
        heat = invoke("plot", tmp_path / "grid.nc", "--var", "clustered_fraction", "--x",
                      "beta", "--y", "d", "--log-y", "-o", tmp_path / "c.png")
        assert heat.exit_code == 0, heat.output
        assert seen["scales"] == ["linear"] and seen["y"] == ["log"]
        lines = invoke("plot", path, "--var", "threshold", "--x", "d", "--log-y",
                       "-o", tmp_path / "e.png")  # a line plot's values
        assert lines.exit_code == 0, lines.output
        assert seen["scales"] == ["linear"] and seen["y"] == ["log"]
    bad = invoke("plot", tmp_path / "grid.nc", "--var", "clustered_fraction", "--x", "time",
                 "--y", "d", "--log-x", "-o", tmp_path / "d.png")
    assert bad.exit_code == 2 and "--log-x: time has values <= 0" in bad.output


def test_lines_of_many_matrices_say_which_are_drawn_and_style_each_kind(tmp_path):
    """--lines qk over 13 matrix sets (identity, Gaussian and trained per layer): which 7
    are drawn is said on the console and in the legend; trained, Gaussian and identity lines
    differ in style, layers in colour."""
    import unittest.mock

    import matplotlib.figure
    from matplotlib.colors import to_hex

    qk = ["identity", *(f"m/layer{k}_qk_gaussian.npy" for k in range(1, 7)),
          *(f"m/layer{k}_qk.npy" for k in range(1, 7))]
    cos = np.linspace(0.0, 1.0, 5) * np.arange(1, 14)[:, None, None] / 13 * np.ones((13, 2, 1))
    ds = xr.Dataset({"mean_cosine": (("qk", "seed", "time"), cos)},
                    coords={"qk": qk, "seed": [0, 1], "time": np.arange(5.0)})
    ds.to_netcdf(tmp_path / "m.nc")
    seen = {}
    original = matplotlib.figure.Figure.savefig

    def spy(fig, *args, **kwargs):
        lines = [ln for ln in fig.axes[0].get_lines() if len(ln.get_xdata())]
        seen["styles"] = {ln.get_label(): (ln.get_linestyle(), to_hex(ln.get_color()))
                          for ln in lines}
        seen["legend"] = fig.legends[0].get_title().get_text()
        return original(fig, *args, **kwargs)

    with unittest.mock.patch.object(matplotlib.figure.Figure, "savefig", spy):
        r = invoke("plot", tmp_path / "m.nc", "--var", "mean_cosine", "--x", "time",
                   "--lines", "qk", "-o", tmp_path / "m.png")
    assert r.exit_code == 0, r.output
    said = [line for line in r.output.splitlines() if "7 of the 13 values of qk" in line]
    assert len(said) == 1 and "identity, layer2_qk_gaussian" in said[0]
    assert seen["legend"].startswith("7 of the 13 values of qk drawn")
    styles = seen["styles"]
    assert len(styles) == 7 and styles["qk = identity"] == ("-", "#000000")
    assert styles["qk = layer2_qk_gaussian"][0] == "--" and styles["qk = layer2_qk"][0] == "-"
    assert styles["qk = layer2_qk_gaussian"][1] != styles["qk = layer4_qk_gaussian"][1]
