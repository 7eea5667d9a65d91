"""The generated campaign (tests/campaign.py): about 1,100 bad inputs and faults through the
command line. Whatever the input, `sweep` ends with exit code 0, 1, 2 or 130, never a
traceback, never a hang; a refusal (exit 2) is one line on stderr starting with `error:`."""

import collections
import shutil
import signal

import pytest
import yaml

import campaign
from helpers import invoke, tiny_model_dir

SEED = 20260101
CASE_SECONDS = 30  # a case that has not ended by then is a hang


class Hang(Exception):
    pass


def _alarm(signum, frame):
    raise Hang(f"no answer after {CASE_SECONDS} s")


@pytest.fixture(scope="module")
def sweep_done(tmp_path_factory):
    """A finished tiny sweep: its config, dataset and parts."""
    folder = tmp_path_factory.mktemp("done")
    (folder / "c.yaml").write_text(yaml.safe_dump(campaign.TINY))
    assert invoke("run", folder / "c.yaml", "--out", folder / "r.nc").exit_code == 0
    return folder


@pytest.fixture(scope="module")
def model(tmp_path_factory):
    return tiny_model_dir(tmp_path_factory.mktemp("model") / "tiny")[0]


def problem(result) -> str:
    """What breaks the promise in one CLI result, or ''."""
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        return f"{type(result.exception).__name__}: {result.exception}"
    if result.exit_code not in (0, 1, 2, 130):
        return f"exit code {result.exit_code}"
    lines = result.stderr.strip().splitlines()
    if result.exit_code == 2 and (len(lines) != 1 or not lines[0].startswith("error: ")):
        return f"exit 2 with stderr {result.stderr[:300]!r}"
    if any(len(line) > 1100 for line in lines):
        return "a line of over 1,100 characters on stderr"
    return ""


@pytest.fixture
def built_once(monkeypatch):
    """The Typer app becomes its Click command once, not once per case (35 ms each)."""
    import typer.testing

    from sweep.cli import app

    command = typer.testing._get_command(app)
    monkeypatch.setattr(typer.testing, "_get_command", lambda _: command)


def run_cases(cases, tmp_path_factory, monkeypatch):
    """Each case through the CLI in a fresh folder: (cases tried by category, broken
    promises, (case, args, result) of each)."""
    tried, failed, seen = collections.Counter(), [], []
    previous = signal.signal(signal.SIGALRM, _alarm)
    try:
        for case in cases:
            folder = tmp_path_factory.mktemp("case")
            monkeypatch.chdir(folder)  # relative output paths land in the case's folder
            args, env = case.make(folder)
            signal.alarm(CASE_SECONDS)
            try:
                result = invoke(*args, env=env)
            finally:
                signal.alarm(0)
            tried[case.category] += 1
            seen.append((case, args, result))
            why = problem(result)
            if why:
                failed.append(f"{case} ({' '.join(map(str, args))[:200]}): {why}")
    finally:
        signal.signal(signal.SIGALRM, previous)
    return tried, failed, seen


def test_campaign(tmp_path_factory, monkeypatch, sweep_done, model, built_once):
    shared = tmp_path_factory.mktemp("shared")
    shutil.copytree(sweep_done, shared, dirs_exist_ok=True)  # rerun in place by shard cases
    cases = campaign.cases(SEED, shared, sweep_done, model)
    tried, failed, _ = run_cases(cases, tmp_path_factory, monkeypatch)
    assert sum(tried.values()) >= 1100 and all(tried[c] for c in campaign.CATEGORIES)
    assert not failed, f"{len(failed)} of {sum(tried.values())} cases:\n" + "\n".join(failed[:40])


def test_crafted_files_and_misuse_end_in_a_result_or_one_line(
        tmp_path_factory, monkeypatch, sweep_done, model, built_once):
    """The crafted-file and misuse cases alone, each with the outcome it must have: a
    crafted sweep_config is shown or plotted (exit 0), a threshold along beta over a
    (beta, time) map is drawn, a second config run or merged into the first's output is
    refused (run: exit 2 without --force; merge: also exit 1, the parts being another
    config's), everything else is refused in one line saying what to do."""
    cases = [c for c in campaign.cases(SEED, sweep_done, sweep_done, model)
             if c.category == "crafted files and misuse"]
    tried, failed, seen = run_cases(cases, tmp_path_factory, monkeypatch)
    assert not failed, "\n".join(failed[:40])
    codes = collections.defaultdict(set)
    for _, args, result in seen:
        words = [str(a) for a in args]
        if any(w.endswith("th-max.nc") for w in words):  # reduced over time: no time axis
            assert "has no axis 'time' to draw against" in result.stderr, result.stderr
        elif "--threshold" in words or words[0] in ("show", "plot") and words[1].endswith(".nc"):
            codes["drawn or shown"].add(result.exit_code)
            assert result.exit_code == 0, (words, result.stderr)
        elif any(w.startswith("grid.beta=") for w in words):  # a second config, one output
            codes["second config"].add(result.exit_code)
            assert "another config" in result.stderr or "different config" in result.stderr
            assert result.exit_code == 2 or words[0] == "merge", (words, result.stderr)
        elif "--direction" in words or "--workers" in words:
            codes["bad option"].add(result.exit_code)
            assert result.stderr.startswith("error: --"), result.stderr
        elif words[0] in ("run", "plan", "status") and words[1].endswith(".nc"):
            assert "a netCDF results file, not a config" in result.stderr, result.stderr
        elif words[0] in ("show", "plot"):
            assert "a YAML config, not a results file; `sweep run" in result.stderr
    assert codes["drawn or shown"] == {0} and codes["bad option"] == {2}
    assert 2 in codes["second config"]
