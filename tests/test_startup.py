"""What a `sweep` process loads before its first job: the command spares Numba's probe for
BLAS (sweep/__main__.py), which would import scipy.linalg into every run, and nothing else
changes (scipy, and Numba's np.dot outside the command, stay as they were)."""

import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).parents[1]
PROBE = """
import sys
{install}
import numba.np.arraymath as typing
loaded = "scipy.linalg" in sys.modules
import scipy.linalg.cython_blas  # scipy itself still imports
print(typing._HAVE_BLAS, loaded, sys.modules.get("scipy.linalg.cython_blas") is not None)
"""


def python(code: str) -> list[str]:
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True,
                          text=True, check=True)
    return done.stdout.split()


def test_numba_typing_loads_without_scipy_only_under_the_command():
    pytest.importorskip("scipy.linalg")
    hidden = python(PROBE.format(install="import sweep.__main__ as m; "
                                 "sys.meta_path.insert(0, m.NoBlasProbe())"))
    plain = python(PROBE.format(install=""))
    assert hidden == ["False", "False", "True"]  # no BLAS for Numba, scipy importable after
    assert plain == ["True", "True", "True"]


def _imports_of_run(cfg, out) -> set[str]:
    done = subprocess.run([sys.executable, "-X", "importtime", "-m", "sweep", "run", str(cfg),
                           "--out", str(out), "--force"], cwd=ROOT, capture_output=True,
                          text=True, env=os.environ)
    assert done.returncode == 0, done.stderr[-2000:]
    return {line.rpartition("|")[2].strip() for line in done.stderr.splitlines()
            if line.startswith("import time:")}


def test_a_run_imports_no_scipy_linalg_and_a_warm_one_none_of_numbas_compiler(tmp_path):
    cfg = tmp_path / "one.yaml"
    cfg.write_text(yaml.safe_dump({
        "name": "one", "model": {"n": 8, "d": 16},
        "integrate": {"dt": 0.1, "t_max": 0.5, "save_every": 0.1},
        "grid": {"beta": [1.0], "seed": [0]}}))
    first = _imports_of_run(cfg, tmp_path / "first.nc")  # compiles, or loads, the kernels
    assert "numba" in first
    assert "scipy.linalg" not in first  # (its cython_blas may be listed: the attempt, refused)
    warm = _imports_of_run(cfg, tmp_path / "warm.nc")  # loads them from the cache
    assert "numba.core.caching" in warm
    assert "numba.np.arraymath" not in warm and "numba.cpython.listobj" not in warm
    import xarray as xr

    with xr.open_dataset(tmp_path / "first.nc") as a, xr.open_dataset(tmp_path / "warm.nc") as b:
        assert a["clustered_fraction"].equals(b["clustered_fraction"])
        assert float(a["clustered_fraction"].count()) > 0
