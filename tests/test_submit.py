"""`sweep submit`: job-array and merge scripts for SLURM, PBS Pro, LSF and SGE, submitted
through stand-in schedulers; every array task finds its own shard."""

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from helpers import invoke
from sweep.config import schema as config
from sweep.config.grid import expand, shard
from sweep.numerics.cache import directory as cache_directory
from sweep.scheduling import scripts as submit
from sweep.scheduling import shards

# ---------------------------------------------------------------- submit

def test_submit_dry_run_prints_the_scripts_only(cfg_path, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    result = invoke("submit", cfg_path, "--shards", 3, "--parallel", 2, "--dry-run",
                    "--scheduler-arg=--time=00:05:00", "--set", "integrate.t_max=1.0")
    assert result.exit_code == 0, result.output
    array, merge = result.output.split("# ---- ")[1:3]
    logs = tmp_path / "results" / "small.jobs" / "logs"
    assert "#SBATCH --array=0-2%2" in array and f"--output={logs}/array-%A_%a.out" in array
    assert "#SBATCH --signal=B:USR1@" in array and "export SWEEP_SHARDS=3" in array
    assert "#SBATCH --time=00:05:00" in array and "#SBATCH --time=00:05:00" in merge
    assert f"-m sweep run {cfg_path} --set integrate.t_max=1.0 --out " in array
    assert "\nexec " in array and "\nexec " in merge and "-m sweep merge" in merge
    # the merge reads the parts the array wrote beside --out: that path is its output.path
    results = tmp_path / "results" / "small.nc"
    assert f"--out {results}" in array and f"--set 'output.path=\"{results}\"'" in merge
    assert not (tmp_path / "results").exists()
    own = invoke("submit", cfg_path, "--shards", 3, "--dry-run",
                 "--scheduler-arg=--signal=B:TERM@60")
    own_array = own.output.split("# ---- ")[1]
    assert own_array.count("--signal") == 1 and "#SBATCH --signal=B:TERM@60" in own_array
    bad = invoke("submit", cfg_path, "--shards", 3, "--dry-run", "--scheduler", "moab")
    assert bad.exit_code == 2 and "--scheduler" in bad.output


@pytest.mark.parametrize("name,merge_line", [
    ("slurm", "sbatch --parsable --dependency=afterok:ARRAY_ID {merge}"),
    ("lsf", "bsub -w 'done(ARRAY_ID)' -ti < {merge}"),
    ("sge", "qsub -terse -hold_jid ARRAY_ID {merge}"),
])
def test_dry_run_shows_the_environment_lines_and_the_submit_commands(
        cfg_path, tmp_path, monkeypatch, name, merge_line):
    monkeypatch.chdir(tmp_path)
    result = invoke("submit", cfg_path, "--shards", 3, "--dry-run", "--scheduler", name,
                    "--env-line", "module load python/3.11",
                    "--env-line", "source ~/venv/bin/activate")
    assert result.exit_code == 0, result.output
    _, array, merge, commands = result.output.split("# ---- ")
    for text in (array, merge):  # after set -eu, before sweep runs
        assert "set -eu\nmodule load python/3.11\nsource ~/venv/bin/activate\n" in text
    array_path, merge_path = submit.script_paths(tmp_path / "results" / "small.nc",
                                                 submit.SCHEDULERS[name])
    lines = commands.strip().splitlines()[1:]
    assert lines[1] == merge_line.format(merge=merge_path) and str(array_path) in lines[0]
    bad = invoke("submit", cfg_path, "--shards", 3, "--dry-run", "--env-line", "a\nb")
    assert bad.exit_code == 2 and "--env-line" in bad.output


def fake_submitter(tmp_path, monkeypatch, name, answer):
    """A submit command that records its arguments (and a #BSUB -J line on stdin), refuses
    scripts naming a partition 'refuse', and answers `answer` % (100 + calls so far)."""
    bin_dir, log, calls = tmp_path / "bin", tmp_path / f"{name}.log", tmp_path / f"{name}.n"
    bin_dir.mkdir(exist_ok=True)
    script = bin_dir / name
    script.write_text(f'#!/bin/bash\necho "$@" >> {log}\ninput=$(cat)\n'
                      f'grep -m1 "^#BSUB -J" <<< "$input" >> {log}\n'
                      'for a; do last="$a"; done\n'
                      'if grep -qs refuse "$last" || grep -q refuse <<< "$input"; then\n'
                      f'  echo "{name}: error: invalid partition" >&2; exit 1\nfi\n'
                      f'echo x >> {calls}\nprintf {shlex.quote(answer)}"\\n" '
                      f'$((100 + $(wc -l < {calls})))\n')
    script.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    return log


@pytest.fixture
def fake_sbatch(tmp_path, monkeypatch):
    """An sbatch that records its arguments and answers like `sbatch --parsable`."""
    return fake_submitter(tmp_path, monkeypatch, "sbatch", "%d;cluster")


def test_submit_writes_and_submits_the_array_then_the_merge(cfg_path, tmp_path, fake_sbatch,
                                                            monkeypatch):
    monkeypatch.chdir(tmp_path)
    result = invoke("submit", cfg_path, "--shards", 3)
    assert result.exit_code == 0, result.output
    assert "array job 101" in result.output and "merge job 102" in result.output
    jobs = tmp_path / "results" / "small.jobs"
    calls = fake_sbatch.read_text().splitlines()
    assert calls == [f"--parsable {jobs / 'array.sbatch'}",
                     f"--parsable --dependency=afterok:101 {jobs / 'merge.sbatch'}"]
    assert (jobs / "logs").is_dir() and "%A_%a" in (jobs / "array.sbatch").read_text()
    cache = cache_directory()  # the one compile cache: NUMBA_CACHE_DIR, else ~/.cache/sweep
    assert f"export NUMBA_CACHE_DIR={Path(cache).resolve()}" in (jobs / "array.sbatch").read_text()
    status = invoke("status", cfg_path)
    assert status.exit_code == 0 and "6 missing" in status.output
    assert "sbatch --array=0-2 results/small.jobs/array.sbatch" in status.output
    refused = invoke("submit", cfg_path, "--shards", 3, "--scheduler-arg=--partition=refuse")
    assert refused.exit_code == 2 and "invalid partition" in refused.output


def test_a_merge_job_refused_after_its_array_says_how_to_finish(cfg_path, tmp_path,
                                                                monkeypatch):
    bin_dir, calls = tmp_path / "bin", tmp_path / "calls"
    bin_dir.mkdir()
    (bin_dir / "sbatch").write_text(
        f'#!/bin/bash\necho x >> {calls}\nif [ $(wc -l < {calls}) -gt 1 ]; then\n'
        '  echo "sbatch: error: QOSMaxSubmitJobPerUserLimit" >&2; exit 1\nfi\necho 101\n')
    (bin_dir / "sbatch").chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.chdir(tmp_path)
    result = invoke("submit", cfg_path, "--shards", 2)
    merge = tmp_path / "results" / "small.jobs" / "merge.sbatch"
    assert result.exit_code == 2 and result.output.count("\n") == 1, result.output
    assert "QOSMaxSubmitJobPerUserLimit" in result.output
    assert f"array job 101 is submitted; cancel it or submit {merge} yourself" in \
        result.output.replace("\n", "")


def test_submit_without_a_scheduler_says_so(cfg_path, tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))
    result = invoke("submit", cfg_path, "--shards", 2)
    assert result.exit_code == 2 and "sbatch not found" in result.output


# ---------------------------------------------------------------- PBS Pro, LSF, SGE

# the variables each scheduler sets in array task `index`, for an array of K (first..last)
TASK_ENV = {
    "slurm": lambda i, first, last: {"SLURM_ARRAY_TASK_ID": i, "SLURM_ARRAY_TASK_MIN": first,
                                     "SLURM_ARRAY_TASK_COUNT": last - first + 1},
    "pbs": lambda i, first, last: {"PBS_ARRAY_INDEX": i},
    "lsf": lambda i, first, last: {"LSB_JOBINDEX": i},
    "sge": lambda i, first, last: {"SGE_TASK_ID": i, "SGE_TASK_FIRST": first,
                                   "SGE_TASK_LAST": last, "SGE_TASK_STEPSIZE": 1},
}
SPAN = r"(\d+)(?:-(\d+))?"  # first-last, or one index
ARRAY = {"slurm": rf"#SBATCH --array={SPAN}", "pbs": rf"#PBS -J {SPAN}",
         "lsf": rf'#BSUB -J "sweep-small\[{SPAN}\]', "sge": rf"#\$ -t {SPAN}"}


@pytest.mark.parametrize(("name", "array", "extra"), [
    ("pbs", "#PBS -J 0-3%2", ["#PBS -o {logs}/array-^array_index^.out", "cd {cwd}"]),
    ("lsf", '#BSUB -J "sweep-small[1-4]%2"', ["#BSUB -o {logs}/array-%J_%I.out",
                                              "#BSUB -wa USR1", "#BSUB -cwd {cwd}"]),
    ("sge", "#$ -t 1-4", ["#$ -tc 2", "#$ -o {logs}/array-$JOB_ID.$TASK_ID.out",
                          "#$ -S /bin/bash", "#$ -wd {cwd}",
                          "exit $(( ${{status:-0}} == 1 ? 100"]),
])
def test_submit_dry_run_for_each_scheduler(cfg_path, tmp_path, monkeypatch, name, array, extra):
    monkeypatch.chdir(tmp_path)
    result = invoke("submit", cfg_path, "--shards", 4, "--parallel", 2, "--dry-run",
                    "--scheduler", name, "--scheduler-arg=-q short")
    assert result.exit_code == 0, result.output
    jobs = tmp_path / "results" / "small.jobs"
    head, array_text, merge_text, _ = result.output.split("# ---- ")
    assert array_text.startswith(f"{jobs}/array.{name}\n#!/bin/bash\n")
    prefix = array.split()[0]
    assert array in array_text and "export SWEEP_SHARDS=4" in array_text
    for line in extra:
        assert line.format(logs=jobs / "logs", cwd=tmp_path) in array_text
    assert f"{prefix} -q short" in array_text and f"{prefix} -q short" in merge_text
    assert "-m sweep merge" in merge_text and "SHARD" not in merge_text
    assert array.split()[2][:4] not in merge_text  # the merge job is no array
    assert not (tmp_path / "results").exists()


def test_pbs_refuses_arrays_of_one_so_one_shard_is_a_plain_job(cfg_path, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    result = invoke("submit", cfg_path, "--shards", 1, "--dry-run", "--scheduler", "pbs")
    array_text = result.output.split("# ---- ")[1]
    assert "#PBS -J" not in array_text and "export SWEEP_SHARD=0/1" in array_text
    own = invoke("submit", cfg_path, "--shards", 2, "--dry-run", "--scheduler", "lsf",
                 "--scheduler-arg=-wa TERM")
    assert "-wa USR1" not in own.output and "#BSUB -wt" not in own.output


def _run_task(script: str, env: dict) -> dict[str, str]:
    """The environment `sweep run` would start in, running the script's lines as bash."""
    probe = script.replace(f"{shlex.quote(sys.executable)} -m sweep run", "env #")
    done = subprocess.run(["bash", "-c", probe], capture_output=True, text=True,
                          env={"PATH": os.environ["PATH"], **{k: str(v) for k, v in env.items()}})
    assert done.returncode == 0, done.stderr
    return dict(line.split("=", 1) for line in done.stdout.splitlines() if "=" in line)


@pytest.mark.parametrize("name", sorted(submit.SCHEDULERS))
@pytest.mark.parametrize("k", [1, 2, 4])
def test_every_array_task_finds_its_own_shard(cfg_path, tmp_path, monkeypatch, name, k):
    """Run each array script's shell lines with the variables its scheduler sets in each
    task; sweep.scheduling.shards must map the tasks onto shards 0..K-1, so every job runs once."""
    monkeypatch.chdir(tmp_path)
    plan = submit.make_plan("small", Path("c.yaml"), [], Path("out.nc"), k, scheduler=name)
    script = submit.array_script(plan)
    found = re.search(ARRAY[name], script)
    if found is None:  # a plain job: PBS Pro has no arrays of one
        assert (name, k) == ("pbs", 1)
        first, last, tasks = 0, 0, [{}]
    else:
        first, last = int(found[1]), int(found[2] or found[1])
        tasks = [TASK_ENV[name](i, first, last) for i in range(first, last + 1)]
    assert (first, last - first + 1) == (plan.scheduler.first if tasks[0] else 0, k)
    found = [shards.shard_from_env(_run_task(script, env)) for env in tasks]
    assert sorted((s.index, s.count) for s in found) == [(i, k) for i in range(k)]
    jobs = expand(config.load(cfg_path))
    ran = sorted(j.index for s in found for j in shard(jobs, s.index, s.count))
    assert ran == [j.index for j in jobs]
    if name in ("slurm", "sge") and k > 1:  # a resubmitted subset keeps its shard numbers
        again = shards.shard_from_env(_run_task(script, TASK_ENV[name](last, last, last)))
        assert (again.index, again.count) == (k - 1, k)


SUBMITTERS = {  # name: (command, its answers, the arguments of the two calls)
    "pbs": ("qsub", "%d[].pbs01", ["{array}", "-W depend=afterok:101[].pbs01 {merge}"]),
    "lsf": ("bsub", "Job <%d> is submitted to default queue <normal>.",
            ["", '#BSUB -J "sweep-small[1-3]"', "-w done(101) -ti", "#BSUB -J sweep-small-merge"]),
    "sge": ("qsub", "%d.1-3:1", ["-terse {array}", "-terse -hold_jid 101 {merge}"]),
}


@pytest.mark.parametrize("name", sorted(SUBMITTERS))
def test_submit_through_each_scheduler(cfg_path, tmp_path, monkeypatch, name):
    command, answer, calls = SUBMITTERS[name]
    log = fake_submitter(tmp_path, monkeypatch, command, answer)
    monkeypatch.chdir(tmp_path)
    result = invoke("submit", cfg_path, "--shards", 3, "--scheduler", name)
    assert result.exit_code == 0, result.output
    jobs = tmp_path / "results" / "small.jobs"
    array, merge = jobs / f"array.{name}", jobs / f"merge.{name}"
    assert log.read_text().splitlines() == [c.format(array=array, merge=merge) for c in calls]
    record = submit.submitted(tmp_path / "results" / "small.nc")
    assert record["scheduler"] == name and record["array_job"].startswith("101")
    assert record["merge_job"].startswith("102") and (jobs / "logs").is_dir()
    status = invoke("status", cfg_path)
    assert status.exit_code == 0 and "6 missing" in status.output
    rerun = {"pbs": "qsub -J 0-2 results/small.jobs/array.pbs",
             "lsf": 'bsub -J "sweep-small[1-3]" < results/small.jobs/array.lsf',
             "sge": "qsub -t 1-3 results/small.jobs/array.sge"}[name]
    assert rerun in status.output, status.output
    refused = invoke("submit", cfg_path, "--shards", 3, "--scheduler", name,
                     "--scheduler-arg=-q refuse")
    assert refused.exit_code == 2 and "invalid partition" in refused.output


def test_rerun_lines_widen_single_pbs_subjobs():
    record = {"scheduler": "pbs", "shards": 4, "job_name": "sweep-x"}
    lines = submit.rerun_lines(record, [0, 1, 3], "r/x.nc")
    assert lines[:2] == ["qsub -J 0-1 r/x.jobs/array.pbs", "qsub -J 2-3 r/x.jobs/array.pbs"]
    assert lines[2] == "qsub -W depend=afterok:<that job> r/x.jobs/merge.pbs"
    lsf = submit.rerun_lines({**record, "scheduler": "lsf"}, [0, 2, 3], "r/x.nc")
    assert lsf[0] == 'bsub -J "sweep-x[1,3-4]" < r/x.jobs/array.lsf'


@pytest.mark.parametrize(("code", "expected"), [(0, 0), (1, 100), (138, 138)])
def test_a_failed_sge_task_exits_100_to_hold_the_merge(tmp_path, monkeypatch, code, expected):
    monkeypatch.chdir(tmp_path)
    plan = submit.make_plan("small", Path("c.yaml"), [], Path("out.nc"), 2, scheduler="sge")
    run = shlex.join(plan.sweep("run", "--out", str(plan.output)))
    script = submit.array_script(plan).replace(run, f"(exit {code})")
    env = {"PATH": os.environ["PATH"], **{k: str(v) for k, v in TASK_ENV["sge"](1, 1, 2).items()}}
    assert subprocess.run(["bash", "-c", script], env=env).returncode == expected


@pytest.mark.parametrize("name", sorted(submit.SCHEDULERS))
def test_paths_with_spaces_and_dollars_are_quoted_and_never_run(tmp_path, monkeypatch, name):
    """A working directory named `a b $(touch pwned)`: every script line still works when
    bash runs it, nothing in the name is executed, and each directive, read the way the
    schedulers read them (shell words, quotes removed, nothing expanded), names the path."""
    workdir = tmp_path / "a b $(touch pwned)"
    workdir.mkdir()
    monkeypatch.chdir(workdir)
    plan = submit.make_plan("odd name's", Path("c.yaml"), ["name=x y"], Path("out.nc"), 2,
                            scheduler=name)
    array = submit.array_script(plan)
    for script in (array, submit.merge_script(plan)):
        probe = script.replace(f"{shlex.quote(sys.executable)} -m sweep", "sh -c 'pwd; env' #")
        task = TASK_ENV[name](plan.scheduler.first, plan.scheduler.first,
                              plan.scheduler.first + 1)
        done = subprocess.run(["bash", "-c", probe], capture_output=True, text=True, cwd=tmp_path,
                              env={"PATH": os.environ["PATH"],
                                   **{k: str(v) for k, v in task.items()}})
        assert done.returncode == 0, done.stderr
        assert f"NUMBA_CACHE_DIR={plan.numba_cache}" in done.stdout.splitlines()
        if name == "pbs" and script == array:  # PBS has no directive for the directory
            assert done.stdout.splitlines()[0] == str(workdir)
        words = [shlex.split(line.split(" ", 1)[1]) for line in script.splitlines()
                 if line.startswith(plan.scheduler.prefix + " ")]
        flat = [w for line in words for w in line]
        assert any(w.startswith(str(plan.logs)) or w.endswith(str(plan.logs))
                   or str(plan.logs) in w for w in flat)
        if name != "pbs":
            assert str(workdir) in flat or f"--chdir={workdir}" in flat
        assert all(re.fullmatch(r"[A-Za-z0-9_.\-\[\]%,]+", w) for line in words
                   for opt, w in zip(line, line[1:]) if opt in ("-N", "-J", "--job-name"))
    assert not list(tmp_path.rglob("pwned"))
    *reruns, then = submit.rerun_lines({"scheduler": name, "shards": 4, "job_name": "j"},
                                       [0, 2], plan.output)
    scripts = [str(p) for p in submit.script_paths(plan.output, plan.scheduler)]
    assert all(scripts[0] in shlex.split(line) for line in reruns)  # one word for the shell
    assert scripts[1] in shlex.split(then.replace("<that job>", "1"))


# ---------------------------------------------------------------- CPUs and memory per task

REQUESTS = {  # the array task's CPU and memory directives, for --workers 4
    "slurm": [r"#SBATCH --cpus-per-task=4\n", r"#SBATCH --mem=(\d+)M\n"],
    "pbs": [r"#PBS -l select=1:ncpus=4:mem=(\d+)mb\n"],
    "lsf": [r"#BSUB -n 4\n", r'#BSUB -R "span\[hosts=1\]"\n',
            r'#BSUB -R "rusage\[mem=(\d+)MB\]"\n', r"#BSUB -M (\d+)MB\n"],
    "sge": [r"#\$ -pe smp 4\n", r"#\$ -l h_vmem=(\d+)M\n"],
}


def _asked(text: str, patterns: list[str]) -> list[int]:
    """The MiB the directives matching `patterns` ask for (each pattern found once)."""
    found = []
    for pattern in patterns:
        hits = list(re.finditer(pattern, text))
        assert len(hits) == 1, (pattern, text)
        found += [int(g) for g in hits[0].groups()]
    return found


@pytest.mark.parametrize("name", sorted(REQUESTS))
def test_each_task_asks_for_its_cpus_and_the_memory_its_jobs_need(cfg_path, tmp_path,
                                                                   monkeypatch, name):
    monkeypatch.chdir(tmp_path)

    def scripts(*args):
        result = invoke("submit", cfg_path, "--shards", 3, "--dry-run", "--scheduler", name,
                        "--set", "model.n=3000", *args)
        assert result.exit_code == 0, result.output
        return result.output.split("# ---- ")[1:3]

    array, merge = scripts("--workers", 4)
    mine = _asked(array, REQUESTS[name])
    one = _asked(scripts("--workers", 1)[0], [p.replace("4", "1") for p in REQUESTS[name]
                                             if "span" not in p and "pe smp" not in p])
    # four jobs of n = 3000 at once (about 70 MiB each) need more than one does (SGE: per slot)
    slots = 4 if name == "sge" else 1
    assert min(mine) * slots > 1024 and all(m * slots > o for m, o in zip(mine, one))
    assert "4" not in "".join(re.findall(r"ncpus=\d|-n \d|smp \d|cpus-per-task=\d", merge))
    given = _asked(scripts("--cpus", 4, "--mem", "6G")[0], REQUESTS[name])
    expected = {"sge": -(-(6144 + 1024 + 4 * 64) // 4)}.get(name, 6144)
    assert given == [expected] * len(given)


def test_a_scheduler_arg_asking_for_cpus_or_memory_replaces_the_request(cfg_path, tmp_path,
                                                                        monkeypatch):
    monkeypatch.chdir(tmp_path)
    result = invoke("submit", cfg_path, "--shards", 3, "--dry-run", "--workers", 4,
                    "--scheduler-arg=--mem=8G", "--scheduler-arg=-c 2")
    array = result.output.split("# ---- ")[1]
    assert "--cpus-per-task" not in array and array.count("--mem") == 1
    assert result.output.startswith("# each task asks for 4 CPU(s)")
    pbs = invoke("submit", cfg_path, "--shards", 3, "--dry-run", "--scheduler", "pbs",
                 "--scheduler-arg=-l select=1:ncpus=8")
    assert "mem=" not in pbs.output.split("# ---- ")[1]
    bad = invoke("submit", cfg_path, "--shards", 3, "--dry-run", "--mem", "lots")
    assert bad.exit_code == 2 and bad.output.count("\n") == 1 and "--mem" in bad.output
