"""Cold kernel variants compiled side by side (execution/compiling.py): what goes to another
process, how its cache is copied in without replacing a file, and a child that fails."""

import json
import os
import pickle
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from sweep.config.grid import expand
from sweep.config.schema import from_dict
from sweep.execution import compiling, simulate
from sweep.execution.kernel import (
    ALONE_COMPILE_SECONDS,
    BLOCKED,
    GRAMOBS_COMPILE_SECONDS,
    LANES,
    ROWS,
    KernelPlan,
    cold_compile_seconds,
    compile_split,
)
from sweep.numerics import cache
from sweep.observables import extra

ROOT = Path(__file__).parents[1]
TWO = ["lanes-float64", "rows-float64"]


def write(path, data: bytes):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)


def index(stem: str, *numbers: int) -> bytes:
    """A cache index in Numba's format (a pickled version, then a pickled source stamp and
    {overload key: data file}) naming the data files stem.k.nbc."""
    overloads = {(f"signature {k}", "cpu"): f"{stem}.{k}.nbc" for k in numbers}
    return pickle.dumps("0.0") + pickle.dumps(((0.0, 0), overloads))


SPAN = index("span.s-1.py311", 1)


def test_adopt_copies_what_the_cache_lacks_and_replaces_nothing(tmp_path):
    src, dst = tmp_path / "child", tmp_path / "cache"
    write(src / "kernels_1" / "rows.f-3.py311.nbi", f := index("rows.f-3.py311", 1, 2))
    write(src / "kernels_1" / "rows.f-3.py311.1.nbc", b"data f 1")
    write(src / "kernels_1" / "rows.f-3.py311.2.nbc", b"data f 2")
    write(src / "kernels_1" / "rows.f-30.py311.1.nbc", b"another function's")  # not f's
    write(src / "observables_2" / "g.g-9.py311.nbi", index("g.g-9.py311", 1))
    write(src / "observables_2" / "g.g-9.py311.1.nbc", b"data g, the child's")
    write(dst / "observables_2" / "g.g-9.py311.nbi", b"index g")
    copied = compiling.adopt(src, dst)
    assert copied == [dst / "kernels_1" / "rows.f-3.py311.nbi"]
    got = {str(p.relative_to(dst)): p.read_bytes() for p in dst.rglob("*") if p.is_file()}
    assert got == {"kernels_1/rows.f-3.py311.nbi": f,
                   "kernels_1/rows.f-3.py311.1.nbc": b"data f 1",
                   "kernels_1/rows.f-3.py311.2.nbc": b"data f 2",
                   "observables_2/g.g-9.py311.nbi": b"index g"}  # the cache's own, kept


def test_the_costliest_cold_variant_compiles_here_and_the_next_apart():
    assert compile_split(TWO, 1) == (TWO, [])
    assert compile_split(TWO, 2) == (["lanes-float64"], ["rows-float64"])
    three = ["blocked-float64", "lanes-float64", "rows-float64"]
    assert compile_split(three, 2) == (["blocked-float64", "lanes-float64"], ["rows-float64"])
    assert compile_split(three, 8) == (["lanes-float64"], ["blocked-float64", "rows-float64"])
    # side by side: lanes here less the observables of x alone, rows apart with them
    lanes = LANES.compile_seconds + GRAMOBS_COMPILE_SECONDS
    rows = ROWS.compile_seconds + GRAMOBS_COMPILE_SECONDS
    assert cold_compile_seconds(TWO, 2) == max(lanes - ALONE_COMPILE_SECONDS, rows)
    assert cold_compile_seconds(TWO, 2) < cold_compile_seconds(TWO, 1) == lanes + rows - 11.0
    # one variant: the observables of x alone in a child of their own
    assert cold_compile_seconds(["lanes-float64"], 4) == lanes - ALONE_COMPILE_SECONDS
    assert cold_compile_seconds(["lanes-float64"], 1) == lanes
    assert BLOCKED.compile_seconds < ROWS.compile_seconds < LANES.compile_seconds


@pytest.mark.parametrize("processes", [1, 2])
def test_warm_up_sends_the_split_variants_apart_then_loads_them(monkeypatch, processes):
    jobs = expand(from_dict({"name": "two", "model": {"n": 8}, "grid": {"d": [3, 8]}}))
    calls, said = [], []

    class Elsewhere:
        def __init__(self, plans, alone, saved):
            calls.append(("apart", [p.variant for p in plans], alone, saved))

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            calls.append(("joined",))

    monkeypatch.setattr(cache, "holds", lambda name: False)
    monkeypatch.setattr(cache, "held", lambda: [])
    monkeypatch.setattr(cache, "mark", lambda name: calls.append(("mark", name)))
    monkeypatch.setattr(compiling, "elsewhere", Elsewhere)
    for strategy in (LANES, ROWS):
        monkeypatch.setitem(simulate.PATHS, strategy, simulate.Path(
            lambda plan: calls.append(("warm", plan.variant)), prepare=lambda plan: None))
    cold = compiling.warm_up(jobs, lambda names, seconds: said.append((names, seconds)),
                            processes)
    assert cold == TWO and said == [(TWO, cold_compile_seconds(TWO, processes))]
    if processes == 1:
        assert calls == [("apart", [], [], {"float64"}), ("warm", TWO[0]), ("mark", TWO[0]),
                         ("warm", TWO[1]), ("mark", TWO[1]), ("joined",)]
    else:  # rows' kernel compiles in a child (after the observables of x alone for lanes)
        # while lanes compiles here with the saves' functions of both, then loads
        assert calls == [("apart", [TWO[1]], ["float64"], {"float64"}), ("warm", TWO[0]),
                         ("mark", TWO[0]), ("joined",), ("warm", TWO[1]), ("mark", TWO[1])]


def test_a_child_compiles_a_kernel_alone_where_told_and_a_whole_variant_else(tmp_path,
                                                                             monkeypatch):
    monkeypatch.setenv("NUMBA_CACHE_DIR", str(tmp_path / "child"))
    calls = []
    for strategy in (LANES, ROWS):
        monkeypatch.setitem(simulate.PATHS, strategy, simulate.Path(
            lambda plan: calls.append(("warm", plan.variant)),
            prepare=lambda plan: calls.append(("prepare", plan.variant))))
    compiling._compile(str(tmp_path / "cache"), "0", compiling._unit(KernelPlan(ROWS, "float64"),
                       kernel_only=True), compiling._unit(KernelPlan(LANES, "float32")))
    assert calls == [("prepare", "rows-float64"), ("warm", "lanes-float32")]


@pytest.mark.parametrize("held", [[], ["blocked-float32"], ["rows-float64-rk4"]])
def test_the_observables_of_x_alone_go_apart_unless_a_held_variant_has_them(monkeypatch,
                                                                            held):
    jobs = expand(from_dict({"name": "one", "model": {"n": 8, "d": 3}}))
    alone = []

    class Elsewhere:
        def __init__(self, plans, dtypes, saved):
            alone.append((plans, dtypes))

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            pass

    monkeypatch.setattr(cache, "holds", lambda name: False)
    monkeypatch.setattr(cache, "held", lambda: held)
    monkeypatch.setattr(cache, "mark", lambda name: None)
    monkeypatch.setattr(compiling, "elsewhere", Elsewhere)
    monkeypatch.setitem(simulate.PATHS, LANES, simulate.Path(lambda plan: None))
    compiling.warm_up(jobs, processes=2)
    # lanes-float64 alone, here: its observables of x alone in a child of their own, unless a
    # variant the cache holds is of its dtype
    assert alone == [([], [] if "float64" in str(held) else ["float64"])]


def test_held_lists_the_variants_marked_for_these_sources(tmp_path, monkeypatch):
    monkeypatch.setenv("NUMBA_CACHE_DIR", str(tmp_path))
    cache.mark("lanes-float64")
    cache.mark("rows-float32-rk4")
    (tmp_path / "sweep-compiled" / "blocked-float64.0123456789abcdef").touch()  # other sources
    assert cache.held() == ["lanes-float64", "rows-float32-rk4"]


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


def test_sharing_copies_what_the_others_cached_since_it_began_and_replaces_nothing(tmp_path):
    src, dst = tmp_path / "child", tmp_path / "cache"
    write(src / "kernels_1" / "old.f-1.py311.nbi", index("old.f-1.py311", 1))
    write(src / "kernels_1" / "old.f-1.py311.1.nbc", b"data")
    since = time.time()
    os.utime(src / "kernels_1" / "old.f-1.py311.nbi", (since - 60, since - 60))
    write(src / "kernels_1" / "new.f-2.py311.nbi", f := index("new.f-2.py311", 1))
    write(src / "kernels_1" / "new.f-2.py311.1.nbc", b"data f")
    write(src / "observables_2" / "g.g-9.py311.nbi", index("g.g-9.py311"))
    write(dst / "observables_2" / "g.g-9.py311.nbi", b"index g")
    sharing = compiling.Sharing([src], dst, since)
    sharing.pull()
    got = {str(p.relative_to(dst)): p.read_bytes() for p in dst.rglob("*") if p.is_file()}
    assert got == {"kernels_1/new.f-2.py311.nbi": f,
                   "kernels_1/new.f-2.py311.1.nbc": b"data f",
                   "observables_2/g.g-9.py311.nbi": b"index g"}
    # what a source caches later is copied at the next look
    write(src / "kernels_1" / "later.h-4.py311.1.nbc", b"data h")
    write(src / "kernels_1" / "later.h-4.py311.nbi", h := index("later.h-4.py311", 1))
    sharing.pull()
    assert (dst / "kernels_1" / "later.h-4.py311.nbi").read_bytes() == h
    assert (dst / "kernels_1" / "later.h-4.py311.1.nbc").read_bytes() == b"data h"
    assert not list(dst.rglob("*.part"))


def test_an_index_whose_data_is_not_yet_written_is_copied_once_it_is(tmp_path):
    """Numba writes a new function's index, then its data: an index read in between is not
    copied (it would name a file the cache lacks, which then compiles again), and it is
    copied, with its data, at a later look."""
    src, dst = tmp_path / "child", tmp_path / "cache"
    sharing = compiling.Sharing([src], dst)
    write(src / "kernels_1" / "f.f-2.py311.nbi", f := index("f.f-2.py311", 1, 2))
    write(src / "kernels_1" / "f.f-2.py311.1.nbc", b"data 1")
    sharing.pull(force=True)
    assert not dst.exists()
    assert not compiling.adopt(src, dst)
    write(src / "kernels_1" / "f.f-2.py311.2.nbc", b"data 2")
    sharing.pull(force=True)
    got = {str(p.relative_to(dst)): p.read_bytes() for p in dst.rglob("*") if p.is_file()}
    assert got == {"kernels_1/f.f-2.py311.nbi": f, "kernels_1/f.f-2.py311.1.nbc": b"data 1",
                   "kernels_1/f.f-2.py311.2.nbc": b"data 2"}
    write(src / "kernels_1" / "g.g-3.py311.nbi", b"not an index")  # unreadable: never copied
    sharing.pull(force=True)
    assert not (dst / "kernels_1" / "g.g-3.py311.nbi").exists()


def test_sharing_looks_again_in_a_folder_whose_time_a_write_may_not_have_moved(tmp_path):
    """A file written in the same tick of the file system's clock as the last look leaves
    the folder's modification time as it was: a folder modified within the last second is
    read again, an older one only when its time moves or when forced."""
    src, dst = tmp_path / "child", tmp_path / "cache"
    folder = src / "kernels_1"
    sharing = compiling.Sharing([src], dst)
    for recent, name in ((True, "a"), (False, "b")):
        write(folder / f"{name}.f-1.py311.nbi", index(f"{name}.f-1.py311"))
        stamp = time.time_ns() - (0 if recent else 10 * 10**9)
        os.utime(folder, ns=(stamp, stamp))
        sharing.pull()
        write(folder / f"{name}.g-2.py311.nbi", later := index(f"{name}.g-2.py311"))
        os.utime(folder, ns=(stamp, stamp))
        sharing.pull()
        assert (dst / "kernels_1" / f"{name}.g-2.py311.nbi").exists() == recent
    sharing.pull(force=True)
    assert (dst / "kernels_1" / "b.g-2.py311.nbi").read_bytes() == later


class Child:
    def __init__(self, code=None):
        self.code = code

    def poll(self):
        return self.code


def test_waiting_for_a_childs_observables_ends_at_its_marker_or_its_end(tmp_path):
    src, dst = tmp_path / "child", tmp_path / "cache"
    marker = src / "alone-float64.done"
    sharing = compiling.Sharing([src], dst, promised={"float64": (marker, Child()),
                                                     "float32": (marker, Child(1))})

    def finish():  # the child: its functions cached, then its marker
        time.sleep(0.2)
        write(src / "observables_1" / "span.s-1.py311.1.nbc", b"data")
        write(src / "observables_1" / "span.s-1.py311.nbi", SPAN)
        write(marker, b"")

    child = threading.Thread(target=finish)
    child.start()
    sharing.wait_for("float64")
    child.join()
    assert (dst / "observables_1" / "span.s-1.py311.nbi").read_bytes() == SPAN
    marker.unlink()
    begun = time.monotonic()
    sharing.wait_for("float32")  # a child that ended without its marker: no wait
    sharing.wait_for("float64")  # waited for once already
    sharing.wait_for("float16")  # promised by none
    assert time.monotonic() - begun < 0.1


@pytest.mark.timeout(600)
def test_the_observables_of_x_alone_load_here_from_the_child_that_compiles_them(tmp_path):
    """Into an empty cache: a child compiles the observables of x alone while this process
    waits where its save calls them, then loads them; the numbers are those of a process
    that compiled them itself."""
    script = (
        "import json, sys\n"
        "from numba.core import event\n"
        "from sweep.execution import compiling\n"
        "from sweep.observables import extra\n"
        "import numpy as np\n"
        "x = np.linalg.qr(np.random.default_rng(1).standard_normal((6, 6)))[0][:, :3].copy()\n"
        "x /= np.linalg.norm(x, axis=1)[:, None]\n"
        "out = np.zeros(40)\n"
        "with event.install_recorder('numba:compile') as rec:\n"
        "    with compiling.elsewhere([], sys.argv[1:]):\n"
        "        extra.standalone(x, out)\n"
        "names = [e.data['dispatcher'].py_func.__name__ for _, e in rec.buffer]\n"
        "print(json.dumps({'compiled': names, 'out': out.tolist()}))\n")
    runs = {}
    for alone in (["float64"], []):
        env = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path / f"cache{len(alone)}")}
        done = subprocess.run([sys.executable, "-c", script, *alone], env=env, cwd=ROOT,
                              capture_output=True, text=True, check=True)
        runs[len(alone)] = json.loads(done.stdout)
    kernels = {kernel.__name__ for _, kernel, _ in extra.CALLS}
    assert kernels <= set(runs[0]["compiled"])  # compiled here when no child does
    here = set(runs[1]["compiled"])
    assert extra.standalone.py_func.__name__ in here and not kernels & here
    assert runs[1]["out"] == runs[0]["out"]


def test_sharing_into_a_cache_it_cannot_write_copies_nothing_and_goes_on(tmp_path):
    src, dst = tmp_path / "child", tmp_path / "cache"
    write(src / "kernels_1" / "f.f-2.py311.nbi", index("f.f-2.py311"))
    dst.write_bytes(b"a file where the cache's folder would be")
    compiling.Sharing([src], dst).pull()
    assert dst.read_bytes() == b"a file where the cache's folder would be"


def test_the_observables_of_x_alone_are_cached_under_a_name_of_their_records():
    """standalone is cached as a function of extra.py: a changed record set (a record more
    or less, another parameter) must be another function, never the one cached before."""
    name = extra.standalone.py_func.__name__
    assert extra._assemble(extra.CALLS).py_func.__name__ == name  # the same records: the same
    column, kernel, parameters = extra.CALLS[-1]
    others = [extra.CALLS[:-1], extra.CALLS[:-1] + ((column + 1, kernel, parameters),),
              extra.CALLS[:-1] + ((column, kernel, (*parameters, 0.5)),)]
    names = {extra._assemble(calls).py_func.__name__ for calls in others}
    assert len(names) == 3 and name not in names
