"""benchmarks/save_cost.py runs against the kernels as they are: the blocked paths at each save
level (the rows path compiles a loop of its own, left to the benchmark)."""

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
import save_cost  # noqa: E402


@pytest.mark.parametrize("case, level, dtype", [("symmetric:40:5:clustered:close", "close",
                                                 "float32"),
                                                ("blocked:40:5:scattered", "all", "float64")])
def test_save_cost_times_a_blocked_save_and_a_velocity(case, level, dtype):
    r = save_cost.save_cost(case, repeats=2, threads=2, dtype=dtype)
    assert (r["path"], r["n"], r["level"], r["threads"], r["dtype"]) == (
        case.split(":")[0], 40, level, 2, dtype)
    assert 0 < r["least_us"] <= r["median_us"] and 0 < r["velocity_least_us"]


def test_save_cost_refuses_a_level_the_rows_save_does_not_time():
    with pytest.raises(SystemExit, match="rows:8:3:scattered:close: the rows save"):
        save_cost.save_cost("rows:8:3:scattered:close", repeats=1, threads=1)
