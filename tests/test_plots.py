"""threshold, plot and theory through the command line: files, image sizes, exit codes."""

import sys

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
    r = invoke("threshold", results, "--var", "t_cluster", "--along", "beta", "--level", 9)
    assert r.exit_code == 0, r.output
    assert "time: none" in r.output


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
    (["theory", "equiangular", "--model", "hardmax"], "hardmax"),
    (["theory", "equiangular", "--eps", 2], "eps"),
])
def test_bad_names_and_files_exit_2(results, tmp_path, args, word):
    r = invoke(*[str(a).format(res=results, tmp=tmp_path) for a in args])
    assert r.exit_code == 2
    assert word in r.output
    assert "Traceback" not in r.output
    assert not (tmp_path / "a.png").exists()


def test_without_matplotlib_plot_says_which_extra(results, tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    r = invoke("plot", results, "--var", "clustered_fraction", "--x", "time", "--sel", "d=8",
               "-o", tmp_path / "x.png")
    assert r.exit_code == 2 and "sweep[plot]" in r.output


@pytest.mark.parametrize("label,kind", [
    ("identity", ("identity", 0)),
    ("../results/minilm/layer3_qk_gaussian.npy", ("gaussian", 3)),
    ("../results/minilm/layer6_qk.npy", ("trained", 6)),
])
def test_matrix_kind_reads_the_qk_coordinate(label, kind):
    from sweep.analysis import plots

    assert plots.matrix_kind(label) == kind


@pytest.mark.parametrize("betas", [[1.0], [1.0, 100.0], None])  # None: beta not swept
def test_trained_vs_random_draws_one_row_per_beta(tmp_path, betas):
    from sweep.analysis import plots

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
    done = plots.trained_vs_random(sim, probe, tmp_path / "fig" / "t.png")
    assert done == tmp_path / "fig" / "t.png"
    assert image_size(done) == (400 * len(betas or [1.0]), 1400)  # 14 x 4 in. a row, dpi 100
