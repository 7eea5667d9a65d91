"""Limits checked before a sweep starts: memory, and step sizes against their beta."""

import numpy as np
import pytest
import yaml
from typer.testing import CliRunner

from helpers import run_kernel
from sweep.cli import app
from sweep.config import schema as config
from sweep.config.grid import expand
from sweep.execution import resources, stability
from sweep.kernels.codes import OBSERVABLES
from sweep.scheduling import shards

GiB = 2**30


def jobs_of(**sections):
    raw = {"name": "m", **sections}
    return expand(config.from_dict(raw))


def plan(tmp_path, raw, *extra):
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump({"name": "m", **raw}))
    return CliRunner().invoke(app, ["plan", str(path), *extra])


# ---------------------------------------------------------------- memory

def test_need_grows_linearly_in_n_and_with_trajectories():
    # past the size where blocked.Symmetric keeps half of W (n = 5792 in float64): O(n d)
    small = resources.need(jobs_of(model={"n": 10_000}), "none", 1)
    large = resources.need(jobs_of(model={"n": 40_000}), "none", 1)
    assert large.per_job / small.per_job == pytest.approx(4, rel=0.05)
    traj = resources.need(jobs_of(model={"n": 1000}, integrate={"t_max": 100.0}),
                          "trajectory", 1)
    saves = 201
    assert traj.per_job >= saves * 1000 * 3 * 8
    assert traj.merged >= 2 * saves * 1000 * 3 * 8  # a block holds one job at least


def test_the_merge_needs_a_block_not_the_whole_dataset():
    jobs = jobs_of(grid={"beta": {"linspace": [0, 1, 50]}, "seed": {"range": [0, 20]}})
    need = resources.need(jobs, "none", 4)
    series = 1000 * jobs[0].integrate.n_saves * len(OBSERVABLES) * 8  # all of them: 6.3 MB
    assert series <= need.merged - 1000 * resources.JOB_OBJECT_BYTES <= 3 * series  # 1 block
    assert need.workers == 4 and resources.need(jobs, "none", 4, merged=False).merged == 0
    many = jobs_of(model={"n": 1000}, integrate={"t_max": 100.0},
                   grid={"seed": {"range": [0, 2600]}})  # 12.5 GB of trajectories
    block = resources.need(many, "trajectory", 1).merged - 2600 * resources.JOB_OBJECT_BYTES
    assert block <= 2 * resources.MERGE_BLOCK_BYTES


@pytest.mark.parametrize("raw,key,gib", [
    ({"model": {"n": 200_000_000}}, "model.n", 2),
    ({"model": {"d": 100_000_000, "n": 2}}, "model.d", 2),
    ({"model": {"n": 20000}, "integrate": {"t_max": 5000.0},
      "output": {"positions": "trajectory"}}, "output.positions", 2),
    ({"grid": {"seed": {"range": [0, 20_000]}}}, "grid", 1 / 16),  # the jobs themselves
])
def test_plan_refuses_what_cannot_fit_and_names_the_key(tmp_path, monkeypatch, raw, key, gib):
    monkeypatch.setattr(resources, "memory_limit", lambda: (int(gib * GiB), ""))
    result = plan(tmp_path, raw)
    assert result.exit_code == 2, result.output
    line = result.output.strip()
    assert line.startswith(f"error: {key}: this sweep needs about") and "\n" not in line
    assert f"{gib:.3g} GiB available" in line


def test_plan_takes_a_trajectory_sweep_larger_than_memory(tmp_path, monkeypatch):
    # 2600 jobs of 201 saves x 1000 tokens in 3-D: 12.5 GB of positions, merged in blocks
    monkeypatch.setattr(resources, "memory_limit", lambda: (2 * GiB, ""))
    raw = {"model": {"n": 1000}, "integrate": {"t_max": 100.0},
           "grid": {"seed": {"range": [0, 2600]}}, "output": {"positions": "trajectory"}}
    result = plan(tmp_path, raw)
    assert result.exit_code == 0, result.output
    assert "2600 job(s)" in result.output


def test_run_lowers_the_worker_count_to_what_fits(tmp_path, monkeypatch):
    jobs = jobs_of(model={"n": 4000}, grid={"seed": {"range": [0, 8]}})
    need = resources.need(jobs, "none", 8)
    monkeypatch.setattr(resources, "memory_limit", lambda: (int(2.5 * need.per_job), ""))
    monkeypatch.setattr(shards, "task_cpus", lambda: 8)
    result = plan(tmp_path, {"model": {"n": 4000}, "grid": {"seed": {"range": [0, 8]}}})
    assert result.exit_code == 0
    assert "at most 2 job(s) fit at once" in result.output
    assert resources.workers_that_fit(need, int(2.5 * need.per_job)) == 2
    assert resources.workers_that_fit(need, 1) == 1


def test_available_memory_is_a_positive_count_on_linux():
    available = resources.available_memory()
    assert available is None or available > 0


# ---------------------------------------------------------------- step size and overflow

def spread(x):
    """1 - min pairwise cosine."""
    return 1.0 - (x @ x.T).min()


@pytest.mark.parametrize("attention,beta,method", [("unnormalized", 3.0, "euler"),
                                                   ("unnormalized", 3.0, "rk4"),
                                                   ("softmax", 3.0, "euler")])
def test_the_reported_stable_step_is_where_convergence_stops(attention, beta, method):
    rng = np.random.default_rng(0)
    x0 = np.array([0.0, 0.0, 1.0]) + 0.01 * rng.standard_normal((5, 3))
    x0 /= np.linalg.norm(x0, axis=1, keepdims=True)
    limit = stability.stable_dt(attention, beta, method)
    outcome = {}
    for factor in (0.8, 1.2):
        status, _, x, _ = run_kernel(x0, attention, beta, method, dt=factor * limit,
                                     stride=30, n_saves=2)
        assert status == 0
        outcome[factor] = spread(x)
    assert outcome[0.8] < 0.1 * spread(x0) < spread(x0) < outcome[1.2]


def test_layer_converges_at_any_step_with_a_slower_clock():
    # five times euler's stable step: euler diverges, layer still contracts, by the factor
    # 1 / (1 + dt r)^2 on 1 - cosine that its step dt / (1 + dt r) predicts near consensus
    rng = np.random.default_rng(0)
    x0 = np.array([0.0, 0.0, 1.0]) + 1e-3 * rng.standard_normal((5, 3))
    x0 /= np.linalg.norm(x0, axis=1, keepdims=True)
    dt = 5 * stability.stable_dt("unnormalized", 3.0, "euler")
    assert stability.stable_dt("unnormalized", 3.0, "layer") == np.inf
    _, _, euler, _ = run_kernel(x0, "unnormalized", 3.0, "euler", dt, stride=30)
    _, _, layer, _ = run_kernel(x0, "unnormalized", 3.0, "layer", dt)
    assert spread(euler) > spread(x0)
    shrink = spread(layer) / spread(x0)
    assert shrink == pytest.approx(1 / (1 + dt * np.exp(3.0)) ** 2, rel=0.02)


def test_plan_says_when_the_layer_clock_runs_slow(tmp_path):
    raw = {"model": {"attention": "unnormalized"}, "integrate": {"method": "layer", "dt": 0.1},
           "grid": {"beta": [1.0, 2.0, 4.0]}}
    result = plan(tmp_path, raw)
    assert result.exit_code == 0
    # dt r = 0.27 at beta 1 is quiet; 0.74 at beta 2 too; 5.5 at beta 4 is reported
    assert "times run 6.46x slow" in result.output and "[1 job(s), beta 4]" in result.output
    assert "dt < 0.0183" in result.output
    assert plan(tmp_path, {"integrate": {"method": "layer"}}).output.count("slow") == 0


def test_usa_stable_step_shrinks_like_exp_minus_beta():
    assert stability.stable_dt("unnormalized", 0.0, "euler") == pytest.approx(2.0)
    assert stability.stable_dt("unnormalized", 5.0, "euler") == pytest.approx(2 * np.exp(-5))
    assert stability.stable_dt("softmax", 50.0, "rk4") == pytest.approx(2.785)


def test_plan_warns_with_the_stable_step_and_keeps_dt(tmp_path):
    raw = {"model": {"attention": "unnormalized"}, "integrate": {"dt": 0.1},
           "grid": {"beta": [1.0, 4.0, 6.0]}}
    result = plan(tmp_path, raw)
    assert result.exit_code == 0
    limit = stability.stable_dt("unnormalized", 6.0, "euler")
    assert f"dt < {limit:.3g}" in result.output and "[2 job(s), beta 4 to 6]" in result.output
    assert all(j.integrate.dt == 0.1 for j in jobs_of(**raw))  # never rescaled


def test_overflowing_beta_is_announced_as_a_status_1_result(tmp_path):
    result = plan(tmp_path, {"model": {"attention": "unnormalized", "beta": 800.0}})
    assert result.exit_code == 0
    assert "overflows float64 for beta > 709.8" in result.output
    soft = plan(tmp_path, {"model": {"attention": "softmax", "beta": 1000.0, "n": 8}})
    assert "overflows" in soft.output and "status 1" not in soft.output  # dynamics finite
    assert "the energy E_beta overflows float64 for beta > 705.6" in soft.output
    quiet = plan(tmp_path, {"model": {"attention": "softmax", "beta": 700.0, "n": 8}})
    assert "warning" not in quiet.output  # softmax subtracts the row maximum


def test_energy_warning_marks_exactly_the_jobs_whose_energy_is_inf():
    x0 = np.array([[0.0, 0.0, 1.0]] * 8)  # collapsed: every exponent is beta
    for beta in (700.0, 710.0):
        _, obs, _, _ = run_kernel(x0, "softmax", beta, n_saves=1)
        model = jobs_of(model={"beta": beta, "n": 8})[0]
        warned = bool(stability.job_hint(model.model, model.integrate))
        assert warned == (not np.isfinite(obs[0, 6]))


def test_per_head_arrays_are_counted_and_named(tmp_path, monkeypatch):
    monkeypatch.setattr(resources, "memory_limit", lambda: (2 * GiB, ""))
    for extra in ({}, {"qk": "gaussian"}):
        line = plan(tmp_path, {"model": {"heads": 1_000_000_000, **extra}}).output.strip()
        assert line.startswith("error: model.heads: this sweep needs about") and \
            "use fewer heads" in line
    one = resources.need(jobs_of(model={"heads": 1000}), "none", 1).per_job
    many = resources.need(jobs_of(model={"heads": 2000}), "none", 1).per_job
    assert many - one >= 1000 * 3 * 8  # a beta and two scratch numbers per head at least


def test_a_refusal_caused_by_the_saved_times_names_t_max(tmp_path, monkeypatch):
    monkeypatch.setattr(resources, "memory_limit", lambda: (2 * GiB, ""))
    line = plan(tmp_path, {"integrate": {"t_max": 1.0e9, "save_every": 0.1}}).output.strip()
    assert line.startswith("error: integrate.t_max: this sweep needs about")


def fake_cgroups(tmp_path, version, groups, limits):
    """A /proc/self and / with the memory cgroup `groups` (as /proc/self/cgroup lists it) and
    limits {cgroup path: (limit, usage)}; v1 mounted as a container sees it (root /docker/c)."""
    proc, root = tmp_path / "proc", tmp_path / "root"
    proc.mkdir()
    if version == 2:
        (proc / "cgroup").write_text(f"0::{groups}\n")
        (proc / "mountinfo").write_text("30 23 0:26 / /sys/fs/cgroup rw - cgroup2 cgroup2 rw\n")
        mount, inside, names = "sys/fs/cgroup", "/", ("memory.max", "memory.current")
    else:
        (proc / "cgroup").write_text(f"5:cpu,cpuacct:/x\n4:memory:/docker/c{groups}\n0::/\n")
        (proc / "mountinfo").write_text(
            "35 31 0:32 /docker/c /sys/fs/cgroup/memory rw - cgroup cgroup rw,memory\n")
        mount, inside, names = "sys/fs/cgroup/memory", "", ("memory.limit_in_bytes",
                                                            "memory.usage_in_bytes")
    for group, (limit, usage) in limits.items():
        folder = root / mount / group.removeprefix(inside).lstrip("/")
        folder.mkdir(parents=True, exist_ok=True)
        (folder / names[0]).write_text(f"{limit}\n")
        (folder / names[1]).write_text(f"{usage}\n")
    return proc, root


@pytest.mark.parametrize("version", [1, 2])
def test_cgroup_limit_is_the_smallest_up_from_the_process_own_cgroup(tmp_path, version):
    # SLURM: the job's cgroup is limited, the step's inside it is not (v2: "max")
    unlimited = "max" if version == 2 else str(2**63 - 4096)
    proc, root = fake_cgroups(tmp_path, version, "/slurm/job_7/step_0", {
        "/": (unlimited, 50 * GiB), "/slurm": (unlimited, 9 * GiB),
        "/slurm/job_7": (8 * GiB, 3 * GiB), "/slurm/job_7/step_0": (unlimited, 2 * GiB),
        "/slurm/job_8": (1 * GiB, 0)})  # another job's limit is not ours
    assert resources.cgroup_free(proc, root) == 5 * GiB
    (proc / "cgroup").write_text("")  # outside any cgroup hierarchy
    assert resources.cgroup_free(proc, root) is None
    assert resources.cgroup_free(tmp_path / "nowhere", root) is None


def test_a_run_too_large_for_the_address_space_limit_is_refused_in_one_line(tmp_path):
    # 1,000,000 jobs hold about 3.8 GiB of Job objects alone: under `ulimit -v` of 3 GiB the
    # preflight refuses instead of the run being killed part-way
    import resource
    import subprocess
    import sys

    path = tmp_path / "big.yaml"
    path.write_text(yaml.safe_dump({
        "name": "big", "model": {"n": 8, "d": 3},
        "integrate": {"dt": 0.1, "t_max": 1.0, "save_every": 0.5},
        "grid": {"beta": {"linspace": [0, 9, 1000]}, "seed": {"range": [0, 1000]}},
        "output": {"path": str(tmp_path / "big.nc")}}))

    def limit():
        resource.setrlimit(resource.RLIMIT_AS, (3 * GiB, 3 * GiB))

    done = subprocess.run([sys.executable, "-m", "sweep", "run", str(path), "--workers", "1"],
                          capture_output=True, text=True, preexec_fn=limit, timeout=300)
    assert done.returncode == 2, done.stderr
    line = done.stderr.strip()
    assert "\n" not in line and line.startswith("error: grid: this sweep needs about")
    assert "the address-space limit, ulimit -v: 3 GiB" in line and "3.81 GiB for the jobs" in line
    assert not (tmp_path / "big.parts").exists()


def test_the_address_space_limit_counts_what_is_mapped_already(tmp_path, monkeypatch):
    import resource

    status = tmp_path / "status"
    status.write_text("Name:\tpython\nVmPeak:\t 900000 kB\nVmSize:\t  524288 kB\n")
    monkeypatch.setattr(resource, "getrlimit", lambda which: (4 * GiB, resource.RLIM_INFINITY))
    assert resources.address_space_left(status) == (4 * GiB, GiB // 2)
    monkeypatch.setattr(resource, "getrlimit", lambda which: (resource.RLIM_INFINITY,) * 2)
    assert resources.address_space_left(status) is None
