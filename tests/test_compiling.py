"""Cold kernel variants compiled side by side (execution/compiling.py): what goes to another
process, how its cache is copied in without replacing a file, and a child that fails."""

import pytest

from sweep.config.grid import expand
from sweep.config.schema import from_dict
from sweep.execution import compiling, simulate
from sweep.execution.kernel import (
    BLOCKED,
    GRAMOBS_COMPILE_SECONDS,
    LANES,
    ROWS,
    KernelPlan,
    cold_compile_seconds,
    compile_split,
)
from sweep.numerics import cache

TWO = ["lanes-float64", "rows-float64"]


def write(path, data: bytes):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)


def test_adopt_copies_what_the_cache_lacks_and_replaces_nothing(tmp_path):
    src, dst = tmp_path / "child", tmp_path / "cache"
    write(src / "kernels_1" / "rows.f-3.py311.nbi", b"index f")
    write(src / "kernels_1" / "rows.f-3.py311.1.nbc", b"data f 1")
    write(src / "kernels_1" / "rows.f-3.py311.2.nbc", b"data f 2")
    write(src / "kernels_1" / "rows.f-30.py311.1.nbc", b"another function's")  # not f's
    write(src / "observables_2" / "g.g-9.py311.nbi", b"index g, the child's")
    write(src / "observables_2" / "g.g-9.py311.1.nbc", b"data g, the child's")
    write(dst / "observables_2" / "g.g-9.py311.nbi", b"index g")
    copied = compiling.adopt(src, dst)
    assert copied == [dst / "kernels_1" / "rows.f-3.py311.nbi"]
    got = {str(p.relative_to(dst)): p.read_bytes() for p in dst.rglob("*") if p.is_file()}
    assert got == {"kernels_1/rows.f-3.py311.nbi": b"index f",
                   "kernels_1/rows.f-3.py311.1.nbc": b"data f 1",
                   "kernels_1/rows.f-3.py311.2.nbc": b"data f 2",
                   "observables_2/g.g-9.py311.nbi": b"index g"}  # the cache's own, kept


def test_the_costliest_cold_variant_compiles_here_and_the_next_apart():
    assert compile_split(TWO, 1) == (TWO, [])
    assert compile_split(TWO, 2) == (["lanes-float64"], ["rows-float64"])
    three = ["blocked-float64", "lanes-float64", "rows-float64"]
    assert compile_split(three, 2) == (["blocked-float64", "lanes-float64"], ["rows-float64"])
    assert compile_split(three, 8) == (["lanes-float64"], ["blocked-float64", "rows-float64"])
    side = max(LANES.compile_seconds, ROWS.compile_seconds) + GRAMOBS_COMPILE_SECONDS
    assert cold_compile_seconds(TWO, 2) == side < cold_compile_seconds(TWO, 1)
    assert cold_compile_seconds(["lanes-float64"], 4) == cold_compile_seconds(["lanes-float64"])
    assert BLOCKED.compile_seconds < ROWS.compile_seconds < LANES.compile_seconds


@pytest.mark.parametrize("processes", [1, 2])
def test_warm_up_sends_the_split_variants_apart_then_loads_them(monkeypatch, processes):
    jobs = expand(from_dict({"name": "two", "model": {"n": 8}, "grid": {"d": [3, 8]}}))
    calls, said = [], []

    class Elsewhere:
        def __init__(self, plans):
            calls.append(("apart", [p.variant for p in plans]))

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            calls.append(("joined",))

    monkeypatch.setattr(cache, "holds", lambda name: False)
    monkeypatch.setattr(cache, "mark", lambda name: calls.append(("mark", name)))
    monkeypatch.setattr(compiling, "elsewhere", Elsewhere)
    for strategy in (LANES, ROWS):
        monkeypatch.setitem(simulate.PATHS, strategy, simulate.Path(
            lambda plan: calls.append(("warm", plan.variant))))
    cold = compiling.warm_up(jobs, lambda names, seconds: said.append((names, seconds)),
                            processes)
    assert cold == TWO and said == [(TWO, cold_compile_seconds(TWO, processes))]
    if processes == 1:
        assert calls == [("apart", []), ("warm", TWO[0]), ("mark", TWO[0]),
                         ("warm", TWO[1]), ("mark", TWO[1]), ("joined",)]
    else:  # rows compiles in a child while lanes compiles here, then loads from the cache
        assert calls == [("apart", [TWO[1]]), ("warm", TWO[0]), ("mark", TWO[0]), ("joined",),
                         ("warm", TWO[1]), ("mark", TWO[1])]


def test_a_child_that_fails_leaves_the_cache_and_the_run_as_they_were(tmp_path, monkeypatch):
    """A variant that cannot compile (float16 is no dtype of the kernels'): the child exits
    non-zero, nothing is copied, its folder is removed, and the caller goes on (it compiles
    what is missing itself, where an error would show)."""
    monkeypatch.setenv("NUMBA_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(compiling.tempfile, "tempdir", str(tmp_path))
    with compiling.elsewhere([KernelPlan(ROWS, "float16")]):
        assert len(list(tmp_path.glob("sweep-compile-*"))) == 1
    assert not (tmp_path / "cache").exists() and not list(tmp_path.glob("sweep-compile-*"))


def test_a_body_that_raises_stops_the_children(tmp_path, monkeypatch):
    monkeypatch.setattr(compiling.tempfile, "tempdir", str(tmp_path))
    started = []
    real = compiling.subprocess.Popen
    monkeypatch.setattr(compiling.subprocess, "Popen",
                        lambda *a, **k: started.append(real(*a, **k)) or started[-1])
    with pytest.raises(KeyboardInterrupt), compiling.elsewhere([KernelPlan(ROWS, "float64")]):
        raise KeyboardInterrupt
    assert started[0].returncode is not None and started[0].returncode != 0
    assert not list(tmp_path.glob("sweep-compile-*"))
