"""benchmarks/reference_code.py, which runs the public code of arXiv 2312.10794 (not in this
repository): the patched copy it runs, the reference's checkpoints, and the comparison of its
statistic with `sweep run`'s, checked here against tests/reference.py."""

import sys
from pathlib import Path

import numpy as np
import pytest

import reference as ref
from helpers import invoke, load

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
import reference_code  # noqa: E402

# The lines of the reference script the copy substitutes, as often as they occur there
SCRIPT = ("M = torch.zeros(b).to('cuda');\n" * 13
          + "M2 = torch.randn(batch, ntokens, dmodel, requires_grad=False);\n"
          + "plot_pickle(fname_prefix + '.pkl');\n")


@pytest.mark.parametrize("t_max, dt, count", [(30.0, 0.1, 200), (12.0, 0.1, 200), (3.0, 0.05, 7)])
def test_checkpoints_are_the_steps_whose_running_clock_reaches_them(t_max, dt, count):
    marks = np.linspace(0.0, t_max, count)
    np.testing.assert_array_equal(reference_code.checkpoint_steps(marks, dt),
                                  ref.checkpoint_steps(t_max, dt, count))


def test_the_copy_substitutes_its_lines_and_leaves_the_checkout_alone(tmp_path):
    checkout, folder = tmp_path / "rotf", tmp_path / "run"
    checkout.mkdir(), folder.mkdir()
    (checkout / "phase-diagrams.py").write_text(SCRIPT)
    text = reference_code.patched_copy(checkout, folder, starts=tmp_path / "x0.npy").read_text()
    assert "'cuda'" not in text and text.count("'cpu'") == 13
    assert "plot_pickle" not in text and "torch.randn" not in text
    assert f"np.load({str(tmp_path / 'x0.npy')!r})" in text
    assert (checkout / "phase-diagrams.py").read_text() == SCRIPT


def test_a_script_that_differs_from_the_reference_is_refused(tmp_path):
    (tmp_path / "phase-diagrams.py").write_text(SCRIPT.replace("plot_pickle", "plot"))
    with pytest.raises(SystemExit, match="occurs 0 times"):
        reference_code.patched_copy(tmp_path, tmp_path)
    with pytest.raises(SystemExit, match="no phase-diagrams.py"):
        reference_code.located(str(tmp_path / "elsewhere"))


def test_the_statistic_compared_is_the_pooled_pair_fraction_at_the_checkpoints(tmp_path):
    """A reference built from sweep's own positions by tests/reference.py agrees to rounding
    with sweep's clustered_fraction at the checkpoints, other seeds do not; curves moved up by
    1/2 are seen."""
    out, other = tmp_path / "reference.nc", tmp_path / "other.nc"
    for seeds, path, positions in (("[0, 6]", out, "trajectory"), ("[6, 12]", other, "none")):
        sets = ["grid.beta={linspace: [1.0, 9.0, 2]}", f"grid.seed={{range: {seeds}}}",
                "integrate.t_max=20.0", f"output.positions={positions}"]
        result = invoke("run", reference_code.CONFIG, *[a for s in sets for a in ("--set", s)],
                        "--out", path, "--workers", 1)
        assert result.exit_code == 0, result.output
    ds = load(out)
    steps = ref.checkpoint_steps(20.0, 0.1, 200)
    positions = ds.positions.transpose("beta", "time", "seed", "token", "component").values
    pooled = ref.pooled_clustering(positions[:, steps])
    fake = {"betas_list": ds.beta.values, "times_list": np.linspace(0.0, 20.0, 200),
            "density_tensor": pooled}
    same = reference_code.agreement(fake, out, other)
    assert same["cells"] == 400 and same["max_abs_diff"] < 1e-15
    assert same["null_mean_abs_diff"] > 0.01 and ((pooled > 0.05) & (pooled < 0.95)).any()
    fake["density_tensor"] = np.clip(pooled + 0.5, 0, 1)
    moved = reference_code.agreement(fake, out, other)
    assert moved["max_abs_diff"] == pytest.approx(0.5) and moved["mean_abs_diff"] > 0.1
    assert moved["null_mean_abs_diff"] == same["null_mean_abs_diff"]
