"""The command line's edge: user text printed as it is, outputs that cannot be written or
would replace an input, and every refusal one line on stderr with the SPEC's exit code."""

import signal
import subprocess
import sys
import time

import netCDF4
import pytest
import yaml

from helpers import invoke

CFG = {
    "name": "edge",
    "model": {"attention": "softmax", "d": 3, "n": 4},
    "integrate": {"method": "euler", "dt": 0.1, "t_max": 0.5, "save_every": 0.5},
    "grid": {"beta": [0.0, 2.0], "seed": {"range": [0, 2]}},
}


def one_line(result, code):
    assert result.exit_code == code, result.output
    assert isinstance(result.exception, SystemExit), repr(result.exception)
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr
    return lines[0]


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    folder = tmp_path_factory.mktemp("edge")
    path = folder / "c.yaml"
    path.write_text(yaml.safe_dump(CFG))
    assert invoke("run", path, "--out", folder / "r.nc").exit_code == 0
    return folder / "r.nc"


def test_markup_in_an_output_path_is_printed_and_written_as_it_is(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump({**CFG, "output": {"path": "out[/b] [word] :x:.nc"}}))
    plan = invoke("plan", path)
    assert plan.exit_code == 0 and "output: out[/b] [word] :x:.nc" in plan.output
    run = invoke("run", path)
    assert run.exit_code == 0, run.output
    assert "results: out[/b] [word] :x:.nc" in run.output
    assert (tmp_path / "out[/b] [word] :x:.nc").is_file()


def test_show_prints_history_and_attributes_literally(results, tmp_path):
    copy = tmp_path / "r.nc"
    copy.write_bytes(results.read_bytes())
    with netCDF4.Dataset(copy, "a") as ds:
        ds.history = "2026-01-01: sweep run c.yaml --set grid.attention=[softmax,relu]"
        ds.title = "a [/i] title [bold]:smile:"
    result = invoke("show", copy)
    assert result.exit_code == 0, result.output
    assert "--set grid.attention=[softmax,relu]" in result.output
    assert "a [/i] title [bold]:smile:" in result.output


def test_threshold_refuses_to_replace_its_own_input(results):
    before = results.read_bytes()
    line = one_line(invoke("threshold", results, "--var", "clustered_fraction", "-o",
                           results.parent / "." / results.name), 2)
    assert line.startswith("error: -o ") and "is the results file being read" in line
    assert results.read_bytes() == before


def test_an_unwritable_output_says_why_not_no_space(results, tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("a file where a folder is needed")
    line = one_line(invoke("threshold", results, "--var", "clustered_fraction", "-o",
                           blocker / "th.nc"), 1)
    assert "No space" not in line and ("Not a directory" in line or "File exists" in line)
    line = one_line(invoke("plot", results, "--var", "clustered_fraction", "-o",
                           "/proc/fig.png"), 1)
    assert line.startswith("error: /proc/fig.png: cannot write the figure (")


def test_plot_refuses_one_axis_twice(results, tmp_path):
    line = one_line(invoke("plot", results, "--var", "clustered_fraction", "--x", "beta",
                           "--y", "beta", "-o", tmp_path / "f.png"), 2)
    assert line.startswith("error: --y beta: runs along the same dimension as --x beta")


def test_an_endless_message_is_cut_to_one_bounded_line(tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text("name: t\n")
    result = invoke("plan", path, "--set", f"{'k' * 100_000}=1")
    line = one_line(result, 2)
    assert len(line) < 200 and line.startswith("error: ")


@pytest.mark.parametrize("delay", [0.0, 0.15, 0.3, 0.45, 0.6])
def test_ctrl_c_while_the_command_starts_is_exit_130_in_one_line(tmp_path, delay):
    """The first ~0.7 s of a command import Typer, Rich, NumPy and Numba; an interrupt then
    is caught by the entry point (sweep.__main__) before any of them is imported. (Python's
    own start is out of reach: a signal there is Python's. It takes a few 10 ms, more on a
    loaded machine, so the delays count from the time it took just now.)"""
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump(CFG))
    t = time.perf_counter()
    subprocess.run([sys.executable, "-c", "import sweep.__main__"], check=True)
    started = time.perf_counter() - t
    command = [sys.executable, "-c", "from sweep.__main__ import main; main()", "plan", path]
    proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    time.sleep(started + delay)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert "Traceback" not in err
    if proc.returncode == -signal.SIGINT:  # it came as Python shut down: the shell says 130
        assert not err.strip()
        return
    assert proc.returncode == 130 and err.strip() == "interrupted" or proc.returncode == 0
